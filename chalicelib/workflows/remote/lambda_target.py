"""``lambda:`` targets: the tenant's own functions, fenced by name in code and by tenant in IAM.

1. **Names.** A tenant's functions are named ``cronhook-<stage>-<tenant>-<name>``
   (``check_lambda_target``): any other name is a 422 on create and PATCH, and a failed run
   if a stored trigger holds one anyway.
2. **IAM.** The runner's own role may invoke no workflow function. For each run it uses a
   session of the target-invoke role (``CRONHOOK_TARGET_ROLE_ARN``, made by the template),
   assumed with the session tag ``cronhook-tenant=<the trigger's tenant>``; that role may
   invoke only ``cronhook-<stage>-${aws:PrincipalTag/cronhook-tenant}-*``. A name the code
   wrongly let through for another tenant is still refused by AWS.
3. **Sessions are cached per tenant, bounded by their expiry.** An ``AssumeRole`` per run
   would add a call (and STS's latency) to every fire, so a session (its credentials and
   the Lambda client built on them) is kept in this module for at most its lifetime minus
   ``REUSE_MARGIN_S``: the only state of ours that outlives one run. It never outlives the
   Lambda execution environment, and nothing depends on it: a cold runner, or one whose
   session has expired, simply assumes the role again. At most ``MAX_SESSIONS`` tenants
   are kept; the oldest go first.
4. **The call.** ``Invoke`` with ``RequestResponse``, not retried by botocore: a read
   timeout on a function that is still running would start it a second time (the fire id
   is there for outside dedupe, but cronhook does not add runs). A function error
   (``FunctionError``) fails the run with the function's own ``errorType: errorMessage``.

Locally (stages ``local`` and ``test``) the same path runs against the embedded AWS:
moto's STS accepts ``AssumeRole`` with tags (it does not evaluate policies), and the role
defaults to ``arn:aws:iam::123456789012:role/cronhook-<stage>-target-invoke``.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from chalicelib.domain.run_detail import lambda_error_detail
from chalicelib.settings import get_settings
from chalicelib.store import aws, triggers
from chalicelib.workflows.model import Fire, WorkflowFailed
from chalicelib.workflows.remote.answers import MAX_ANSWER_BYTES, fire_body, read_answer

__all__ = [
    "invoke_lambda",
    "lambda_function_name",
    "lambda_prefix",
    "check_lambda_target",
    "tenant_session_tags",
    "reset_clients",
    "tenant_service_client",
    "trigger_tenant",
    "TENANT_TAG",
    "SESSION_S",
]

TENANT_TAG = "cronhook-tenant"
SESSION_S = 900  # STS's minimum duration: a leaked session is worth the least
REUSE_MARGIN_S = 120  # a cached session is not used in the last two minutes of its life
MAX_SESSIONS = 256

# A tenant id (``KeyIn.tenant``): lower-case letters, digits, "_" and "-". Every such
# string is a valid tag value and a valid piece of a function name and of an ARN.
_TENANT = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
_FUNCTION_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # Lambda's own rule for a name
_QUALIFIER = re.compile(r"[A-Za-z0-9_$-]{1,128}")


@dataclass(frozen=True)
class _Session:
    client: Any  # a Lambda client signing with the tenant's session credentials
    reuse_until_s: float  # epoch seconds
    boto_session: Any = None  # the same credentials, for the sqs/sns/states/events targets
    clients: dict = field(default_factory=dict)  # service name -> client on boto_session


_lock = threading.Lock()
_sessions: dict[tuple, _Session] = {}
_clock = time.time  # the wall clock (STS's expiry is wall-clock time); tests move it


def reset_clients() -> None:
    """Forget every cached tenant session (after the endpoint or the role changes; tests)."""
    with _lock:
        _sessions.clear()


def tenant_session_tags(tenant: str) -> list[dict[str, str]]:
    """The session tags of a tenant's target-invoke session (what the role's policy reads)."""
    return [{"Key": TENANT_TAG, "Value": tenant}]


def _session_name(tenant: str) -> str:
    # Names the tenant only: a session serves every trigger of the tenant while it is
    # cached, so a trigger in the name would mislabel the others' calls in CloudTrail.
    return f"cronhook-{tenant}"[:64]


def _assume(tenant: str, *, now_s: float) -> _Session:
    settings = get_settings()
    role_arn = settings.target_role_arn
    if not role_arn:
        raise WorkflowFailed(
            "lambda targets are not set up in this stage: no target-invoke role "
            "(CRONHOOK_TARGET_ROLE_ARN)"
        )
    try:
        answer = aws.client("sts").assume_role(
            RoleArn=role_arn,
            RoleSessionName=_session_name(tenant),
            DurationSeconds=SESSION_S,
            Tags=tenant_session_tags(tenant),
        )
    except ClientError as exc:
        error = exc.response.get("Error", {})
        raise WorkflowFailed(
            f"lambda targets: the target-invoke role was refused: "
            f"{error.get('Code', 'Error')}: {error.get('Message', '')}"[:1000]
        ) from None
    except BotoCoreError as exc:
        raise WorkflowFailed(f"lambda targets: STS: {type(exc).__name__}: {exc}"[:1000]) from None
    credentials = answer["Credentials"]
    expires_s = min(credentials["Expiration"].timestamp(), now_s + SESSION_S)
    boto_session = boto3.session.Session(
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
    )
    client = boto_session.client(
        "lambda",
        region_name=settings.region,
        endpoint_url=settings.lambda_endpoint_url or settings.endpoint_url,
        config=Config(
            retries={"total_max_attempts": 1},
            connect_timeout=5,
            # A run cannot outlive the runner anyway.
            read_timeout=settings.runner_timeout_s,
        ),
    )
    return _Session(
        client=client, reuse_until_s=expires_s - REUSE_MARGIN_S, boto_session=boto_session
    )


def _tenant_client(tenant: str) -> Any:
    """A Lambda client under ``tenant``'s session of the target-invoke role (cached)."""
    return _tenant_session(tenant).client


def tenant_service_client(tenant: str, service: str) -> Any:
    """A client of ``service`` (sqs, sns, stepfunctions, events) under ``tenant``'s session
    of the target-invoke role: the role that may reach only the tenant's resources."""
    settings = get_settings()
    session = _tenant_session(tenant)
    with _lock:
        found = session.clients.get(service)
    if found is not None:
        return found
    client = session.boto_session.client(
        service,
        region_name=settings.region,
        endpoint_url=settings.endpoint_url,
        config=Config(retries={"total_max_attempts": 3}, connect_timeout=5, read_timeout=30),
    )
    with _lock:
        return session.clients.setdefault(service, client)


def _tenant_session(tenant: str) -> _Session:
    settings = get_settings()
    key = (
        tenant,
        settings.target_role_arn,
        settings.region,
        settings.endpoint_url,
        settings.lambda_endpoint_url,
        settings.runner_timeout_s,
    )
    now_s = _clock()
    with _lock:
        found = _sessions.get(key)
        if found is not None and now_s < found.reuse_until_s:
            return found
    session = _assume(tenant, now_s=now_s)  # outside the lock: one slow STS call blocks no one
    with _lock:
        _sessions.pop(key, None)
        for stale in [k for k, s in _sessions.items() if s.reuse_until_s <= now_s]:
            del _sessions[stale]
        while len(_sessions) >= MAX_SESSIONS:
            del _sessions[next(iter(_sessions))]  # dicts keep insertion order: the oldest
        _sessions[key] = session
    return session


def trigger_tenant(trigger_id: str) -> str:
    item = triggers.get_trigger(trigger_id, consistent=False)
    if item is None:
        raise WorkflowFailed("the trigger of this run no longer exists")
    return str(item.tenant)


def _function_error(what: str, answer: dict, raw: bytes) -> WorkflowFailed:
    detail: Any = None
    try:
        detail = json.loads(raw) if raw else None
    except ValueError:
        detail = raw[:500].decode("utf-8", "replace")
    if isinstance(detail, dict):
        kind = detail.get("errorType") or answer["FunctionError"]
        text = f"{kind}: {detail.get('errorMessage', '')}"
    else:
        text = f"{answer['FunctionError']}: {detail or ''}"
    return WorkflowFailed(
        f"{what} failed: {text}"[:1000],
        detail=lambda_error_detail(str(answer["FunctionError"]), detail),
    )


def invoke_lambda(name_or_arn: str, fire: Fire, *, tenant: str | None = None) -> dict | None:
    """Invoke a Lambda function with the fire, as ``tenant`` (default: the trigger's tenant,
    read from its item); its JSON answer, or WorkflowFailed."""
    what = f"lambda {name_or_arn}"
    tenant = tenant if tenant is not None else trigger_tenant(fire.trigger_id)
    problem = check_lambda_target(name_or_arn, tenant=tenant)
    if problem is not None:  # a trigger stored before the fence, or written around it
        raise WorkflowFailed(f"lambda target refused: {problem}"[:1000])
    client = _tenant_client(tenant)
    try:
        answer = client.invoke(
            FunctionName=name_or_arn,
            InvocationType="RequestResponse",
            Payload=fire_body(fire),
        )
    except ClientError as exc:
        error = exc.response.get("Error", {})
        code, message = error.get("Code", "Error"), error.get("Message", "")
        raise WorkflowFailed(f"{what}: {code}: {message}"[:1000]) from None
    except BotoCoreError as exc:
        raise WorkflowFailed(f"{what}: {type(exc).__name__}: {exc}"[:1000]) from None
    raw = answer["Payload"].read(MAX_ANSWER_BYTES + 1)
    if answer.get("FunctionError"):
        raise _function_error(what, answer, raw)
    return read_answer(raw, what=what, strict=True)


# -- the names a tenant may use ------------------------------------------------------------


def lambda_function_name(target: str) -> str | None:
    """The function name in a ``lambda:`` target's name, partial ARN or ARN (None: not valid)."""
    parts = target.split(":")
    if parts[0] == "arn":  # arn:aws:lambda:<region>:<account>:function:<name>[:<qualifier>]
        if len(parts) not in (7, 8) or parts[2] != "lambda" or parts[5] != "function":
            return None
        name, rest = parts[6], parts[7:]
    elif len(parts) >= 3 and parts[1] == "function":  # <account>:function:<name>[:<q>]
        name, rest = parts[2], parts[3:]
    else:  # <name>[:<qualifier>]
        name, rest = parts[0], parts[1:]
    if len(rest) > 1 or (rest and not _QUALIFIER.fullmatch(rest[0])):
        return None
    return name if _FUNCTION_NAME.fullmatch(name) else None


def lambda_prefix(tenant: str) -> str:
    """The names a tenant's ``lambda:`` targets must start with: ``cronhook-<stage>-<tenant>-``."""
    return f"cronhook-{get_settings().stage}-{tenant}-"


def check_lambda_target(target: str, *, tenant: str) -> str | None:
    """Why ``lambda:<target>`` may not be one of ``tenant``'s targets, or None if it may."""
    if not _TENANT.fullmatch(tenant):
        return f"tenant {tenant!r} cannot have lambda targets: its id is not a valid tag value"
    name = lambda_function_name(target)
    if name is None:
        return "the lambda target is not a function name or ARN (a name is at most 64 characters)"
    prefix = lambda_prefix(tenant)
    if not name.startswith(prefix) or len(name) == len(prefix):
        return (
            f"a lambda target of tenant {tenant!r} must be a function named {prefix}<name> "
            f"(got {name!r})"
        )
    return None
