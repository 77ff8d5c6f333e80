"""Secrets for workflows: ``fire.secrets.get(name)``.

Values live in SSM Parameter Store (SecureString, decrypted on read) or Secrets Manager,
under the stage and the trigger's tenant, so one tenant never reads another's secrets::

    Parameter Store   /cronhook/<stage>/<tenant>/<secret_scope>/<name>, then .../<tenant>/<name>
    Secrets Manager    cronhook/<stage>/<tenant>/<secret_scope>/<name>, then .../<tenant>/<name>

The scoped name wins over the unscoped one whichever store holds it; for one name,
Parameter Store is asked first. Reads go through powertools' parameters utility, which
caches values in the warm process for ``CACHE_S``; a name found missing is remembered
as missing for as long, so a fallback does not cost two failed calls on every fire.

A value is never logged, never put in an error, and the runner masks the values a fire
read wherever they show up in the run's error or output (``guardrails.WorkflowAccessPolicy``).
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from aws_lambda_powertools.utilities.parameters import SecretsProvider, SSMProvider
from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError
from botocore.exceptions import ClientError

from chalicelib.domain.limits import secret_path_problem
from chalicelib.settings import get_settings
from chalicelib.store.aws import client

__all__ = [
    "SecretNotFound",
    "SecretUnavailable",
    "SecretReader",
    "secret_paths",
    "clear_cache",
    "CACHE_S",
]

CACHE_S = 60
MASK = "[secret]"
# Shorter values are not masked: masking "1" or "on" would wreck every error message.
_MIN_MASK_LEN = 4
_NOT_FOUND = {"ParameterNotFound", "ResourceNotFoundException"}


class SecretNotFound(LookupError):
    """No store holds the secret under any of the names tried."""


class SecretUnavailable(RuntimeError):
    """A store could not be read (denied, throttled, down); the value stays unknown."""


_lock = threading.Lock()
_providers: dict[tuple, tuple[SSMProvider, SecretsProvider]] = {}
_missing: dict[tuple[str, str], float] = {}  # (store, name) -> monotonic time it expires


def clear_cache() -> None:
    """Forget cached values and misses (tests; after rotating a secret by hand)."""
    with _lock:
        _providers.clear()
        _missing.clear()


def _stores() -> tuple[SSMProvider, SecretsProvider]:
    settings = get_settings()
    key = (settings.endpoint_url, settings.region)
    with _lock:
        found = _providers.get(key)
        if found is None:
            found = (
                SSMProvider(boto3_client=client("ssm")),
                SecretsProvider(boto3_client=client("secretsmanager")),
            )
            _providers[key] = found
    return found


def secret_paths(name: str, *, tenant: str, scope: str | None) -> list[str]:
    """The names tried for ``name``, in order (without Parameter Store's leading slash).

    A name or scope with a ``.`` or ``..`` segment, or a leading, trailing or doubled
    ``/``, is refused (``spec.secret_path_problem``): a path never leaves the tenant's.
    """
    problem = secret_path_problem(name)
    if problem is not None:
        raise ValueError(f"a secret name {problem}")
    base = f"cronhook/{get_settings().stage}/{tenant}"
    paths = []
    if scope:
        if secret_path_problem(scope) is not None:
            raise ValueError("the trigger's secret_scope is not a valid secret path")
        paths.append(f"{base}/{scope}/{name}")
    paths.append(f"{base}/{name}")
    return paths


def _not_found(exc: GetParameterError) -> bool:
    # powertools wraps every failure in GetParameterError(str(exc)), raised while the
    # boto3 ClientError is being handled: the error code is on the context.
    cause = exc.__cause__ or exc.__context__
    if isinstance(cause, ClientError):
        return cause.response.get("Error", {}).get("Code") in _NOT_FOUND
    return any(code in str(exc) for code in _NOT_FOUND)


def _read(store: str, path: str) -> Any:
    """The value at ``path`` in ``store``, or None if it is not there."""
    key = (store, path)
    now = time.monotonic()
    with _lock:
        until = _missing.get(key)
        if until is not None and now < until:
            return None
    ssm, manager = _stores()
    try:
        if store == "ssm":
            return ssm.get("/" + path, max_age=CACHE_S, decrypt=True)
        return manager.get(path, max_age=CACHE_S)
    except GetParameterError as exc:
        if _not_found(exc):
            with _lock:
                _missing[key] = now + CACHE_S
            return None
        cause = exc.__cause__ or exc.__context__
        code = (
            cause.response.get("Error", {}).get("Code", "Error")
            if isinstance(cause, ClientError)
            else type(cause).__name__
        )
        where = "Parameter Store" if store == "ssm" else "Secrets Manager"
        raise SecretUnavailable(
            f"secret {path!r} could not be read from {where} ({code})"
        ) from None


class SecretReader:
    """``fire.secrets``: read-only, one per fire; remembers what it handed out, to mask it."""

    def __init__(self, *, tenant: str, scope: str | None):
        self._tenant = tenant
        self._scope = scope or None
        self._seen: set[str] = set()

    def get(self, name: str) -> str:
        """The secret ``name``: ``<secret_scope>/<name>`` first, then ``<name>``."""
        try:
            paths = secret_paths(name, tenant=self._tenant, scope=self._scope)
        except ValueError as exc:
            raise SecretNotFound(f"secret {str(name)[:200]!r}: {exc}") from None
        for path in paths:
            for store in ("ssm", "secretsmanager"):
                value = _read(store, path)
                if value is not None:
                    text = value if isinstance(value, str) else bytes(value).decode("utf-8")
                    if len(text) >= _MIN_MASK_LEN:
                        self._seen.add(text)
                        # How it reads inside JSON output (quotes, backslashes, non-ASCII).
                        self._seen.add(json.dumps(text)[1:-1])
                    return text
        tried = ", ".join(paths)
        raise SecretNotFound(
            f"secret {name!r} not found (looked for {tried} in Parameter Store and Secrets Manager)"
        )

    def mask(self, text: str) -> str:
        """``text`` with every value this reader handed out replaced by ``[secret]``."""
        for value in sorted(self._seen, key=len, reverse=True):
            text = text.replace(value, MASK)
        return text

    def mask_value(self, value: Any) -> Any:
        """A JSON value (a run's ``state``) with every string in it masked, keys included."""
        if not self._seen:
            return value
        if isinstance(value, str):
            return self.mask(value)
        if isinstance(value, dict):
            return {self.mask(str(k)): self.mask_value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.mask_value(v) for v in value]
        return value

    def __repr__(self) -> str:
        return f"SecretReader(scope={self._scope!r})"
