"""Remote targets: ``lambda:<name-or-arn>`` and ``http:<https-url>``.

Both get the fire as JSON (``Fire.to_json()``) and may answer ``{state, next_fire_at,
cost_usd, output, error}`` (``targets.to_result`` turns it into a ``Result``).

- **Lambda**: ``Invoke`` with ``RequestResponse``. A function error (``FunctionError``)
  fails the run with the function's own ``errorType: errorMessage``. The call is not
  retried by botocore: a read timeout on a function that is still running would start it
  a second time (the fire id is there for outside dedupe, but cronhook does not add runs).
- **HTTP**: a POST signed with Standard Webhooks headers (``webhook-id`` = the fire id,
  stable across retries, so the receiver can dedupe) under the trigger's own outbound
  secret, made on create and shown once. Redirects are not followed, anything but 2xx
  fails the run, and the call has a timeout. Plain ``http://`` is allowed only to a
  loopback host in the local stack and the tests.

The URL of an HTTP target never appears in an error or a log line: users put tokens in
query strings.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import threading
import time
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from chalicelib.domain.errors import ValidationError
from chalicelib.domain.signatures import generate_secret, sign_outbound
from chalicelib.settings import get_settings
from chalicelib.workflows import Fire, WorkflowFailed

__all__ = [
    "invoke_lambda",
    "invoke_http",
    "prepare_target",
    "check_http_url",
    "HTTP_TIMEOUT_S",
    "reset_clients",
]

HTTP_TIMEOUT_S = 30.0
MAX_ANSWER_BYTES = 1024 * 1024
USER_AGENT = "cronhook/1 (+https://github.com/cronhook)"
_LOCAL_STAGES = ("local", "test")

_lock = threading.Lock()
_lambda_clients: dict[tuple, Any] = {}


def reset_clients() -> None:
    """Forget cached Lambda clients (after the endpoint changes)."""
    with _lock:
        _lambda_clients.clear()


def _lambda_client() -> Any:
    settings = get_settings()
    endpoint = settings.lambda_endpoint_url or settings.endpoint_url
    key = (endpoint, settings.region, settings.runner_timeout_s)
    with _lock:
        found = _lambda_clients.get(key)
        if found is None:
            found = boto3.session.Session().client(
                "lambda",
                region_name=settings.region,
                endpoint_url=endpoint,
                config=Config(
                    retries={"total_max_attempts": 1},
                    connect_timeout=5,
                    # A run cannot outlive the runner anyway.
                    read_timeout=settings.runner_timeout_s,
                ),
            )
            _lambda_clients[key] = found
    return found


def _fire_body(fire: Fire) -> bytes:
    return json.dumps(fire.to_json(), separators=(",", ":"), default=str).encode("utf-8")


def _answer(raw: bytes, *, what: str, strict: bool) -> dict | None:
    """The JSON answer of a target as a dict for ``to_result`` (None: nothing to apply)."""
    if len(raw) > MAX_ANSWER_BYTES:
        raise WorkflowFailed(f"{what} answered more than {MAX_ANSWER_BYTES} bytes")
    if not raw.strip():
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        if strict:
            raise WorkflowFailed(f"{what} answered with something that is not JSON") from None
        return {"output": raw[:4096].decode("utf-8", "replace")}
    if value is None:
        return None
    return value if isinstance(value, dict) else {"output": value}


def invoke_lambda(name_or_arn: str, fire: Fire) -> dict | None:
    """Invoke a Lambda function with the fire; its JSON answer, or WorkflowFailed."""
    what = f"lambda {name_or_arn}"
    try:
        answer = _lambda_client().invoke(
            FunctionName=name_or_arn,
            InvocationType="RequestResponse",
            Payload=_fire_body(fire),
        )
    except ClientError as exc:
        error = exc.response.get("Error", {})
        code, message = error.get("Code", "Error"), error.get("Message", "")
        raise WorkflowFailed(f"{what}: {code}: {message}"[:1000]) from None
    except BotoCoreError as exc:
        raise WorkflowFailed(f"{what}: {type(exc).__name__}: {exc}"[:1000]) from None
    raw = answer["Payload"].read(MAX_ANSWER_BYTES + 1)
    if answer.get("FunctionError"):
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
        raise WorkflowFailed(f"{what} failed: {text}"[:1000])
    return _answer(raw, what=what, strict=True)


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer like any other non-2xx: the run fails (no POST re-sent)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


_OPENER = urllib.request.build_opener(_NoRedirects())


def _refused_address(host: str) -> bool:
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False  # the request itself will fail with a clear "unreachable"
    for info in infos:
        address = ipaddress.ip_address(info[4][0])
        if (
            address.is_loopback
            or address.is_link_local  # 169.254.169.254: instance metadata
            or address.is_unspecified
            or address.is_multicast
            or address.is_reserved
        ):
            return True
    return False


def check_http_url(url: str) -> str | None:
    """Why ``url`` may not be an http target, or None if it may."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return "the http target's URL is not valid"
    if parts.scheme not in ("https", "http") or not host:
        return "the http target's URL is not valid"
    local = get_settings().stage in _LOCAL_STAGES
    loopback = host == "localhost" or _is_loopback_literal(host)
    if parts.scheme == "http" and not (local and loopback):
        return "http targets must use https (plain http only to localhost in the local stack)"
    if not local and (loopback or _refused_address(host)):
        return "the http target's host is a loopback, link-local or reserved address"
    return None


def _is_loopback_literal(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _outbound_secret(trigger_id: str) -> str:
    from chalicelib.store import dynamo, kms

    item = dynamo.get_trigger(trigger_id, consistent=False)
    sealed = item.outbound_secret_sealed if item is not None else None
    if not sealed:
        raise WorkflowFailed(
            "this trigger has no outbound signing secret (it became an http target by an "
            "edit); create the trigger again to get one"
        )
    return kms.unseal(sealed, trigger_id=trigger_id, now_s=time.time())


def invoke_http(url: str, fire: Fire) -> dict | None:
    """POST the fire, signed, to ``url``; its JSON answer, or WorkflowFailed."""
    problem = check_http_url(url)
    if problem is not None:
        raise WorkflowFailed(problem)
    body = _fire_body(fire)
    # The signature's timestamp is the real wall clock (receivers reject one more than
    # five minutes off), so it is read here, at the moment of sending.
    headers = sign_outbound(
        _outbound_secret(fire.trigger_id),
        msg_id=fire.fire_id,
        timestamp=int(time.time()),
        body=body,
    )
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={**headers, "Content-Type": "application/json", "User-Agent": USER_AGENT},
    )
    try:
        with _OPENER.open(request, timeout=HTTP_TIMEOUT_S) as response:
            raw = response.read(MAX_ANSWER_BYTES + 1)
    except urllib.error.HTTPError as exc:
        snippet = (exc.read(300) or b"").decode("utf-8", "replace").strip()
        detail = f": {snippet}" if snippet else ""
        raise WorkflowFailed(f"http target answered {exc.code}{detail}"[:1000]) from None
    except TimeoutError:
        raise WorkflowFailed(f"http target did not answer within {HTTP_TIMEOUT_S:g} s") from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError):
            raise WorkflowFailed(
                f"http target did not answer within {HTTP_TIMEOUT_S:g} s"
            ) from None
        raise WorkflowFailed(f"http target unreachable: {exc.reason}"[:500]) from None
    except OSError as exc:
        raise WorkflowFailed(f"http target unreachable: {type(exc).__name__}") from None
    return _answer(raw, what="http target", strict=False)


def prepare_target(item: Any, workflow: str, *, now: Any = None) -> dict:
    """On create: an ``http:`` target gets its outbound signing secret, sealed; shown once."""
    if not workflow.startswith("http:"):
        return {}
    problem = check_http_url(workflow[len("http:") :])
    if problem is not None:
        raise ValidationError(problem, field="workflow")
    from chalicelib.store import kms

    secret = generate_secret("standard")
    item.outbound_secret_sealed = kms.seal(secret, trigger_id=item.id)
    return {"outbound_secret": secret}
