"""Remote targets: ``lambda:<name-or-arn>`` and ``http:<https-url>``.

Both get the fire as JSON (``Fire.to_json()``) and may answer ``{state, next_fire_at,
cost_usd, output, error}`` (``targets.to_result`` turns it into a ``Result``).

- **Lambda**: ``Invoke`` with ``RequestResponse``. A function error (``FunctionError``)
  fails the run with the function's own ``errorType: errorMessage``. The call is not
  retried by botocore: a read timeout on a function that is still running would start it
  a second time (the fire id is there for outside dedupe, but cronhook does not add runs).
  A tenant's functions are named ``cronhook-<stage>-<tenant>-*``: any other name is a
  422 on create (and the runner's role may invoke only ``cronhook-<stage>-*-*``).
- **HTTP**: a POST signed with Standard Webhooks headers (``webhook-id`` = the fire id,
  stable across retries, so the receiver can dedupe) under the trigger's own outbound
  secret, made on create and shown once. Redirects are not followed, anything but 2xx
  fails the run, and the call has a timeout. One address policy in every stage (below):
  private, loopback, link-local, CGNAT, multicast and reserved addresses are refused,
  on create (422) and on the address actually connected to. Plain ``http://`` and
  private addresses only with ``CRONHOOK_ALLOW_PRIVATE_TARGETS`` in the local and test
  stages (a receiver on the developer's machine); the metadata addresses and the
  embedded AWS endpoint never.

The URL of an HTTP target never appears in a run's error or a log line, and views and
the audit log show it with its query values masked (``display_target``): users put
tokens in query strings.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import re
import socket
import ssl
import threading
import time
from typing import Any
from urllib.parse import urlsplit, urlunsplit

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
    "check_lambda_target",
    "lambda_prefix",
    "address_refused",
    "resolve_target",
    "display_target",
    "mask_targets",
    "TargetRefused",
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


# -- the address policy -------------------------------------------------------------------
#
# One policy in every stage, applied to the address the request actually connects to:
# the host is resolved once, every address it resolves to must be allowed, and the
# connection goes to one of those addresses (TLS still verified for the host name, with
# SNI). A DNS answer that changes between the check and the request (rebinding) cannot
# move the request inside: there is no second resolution.

_REFUSED_NETWORKS = tuple(
    ipaddress.ip_network(n)
    for n in (
        "0.0.0.0/8",  # "this network"
        "10.0.0.0/8",
        "100.64.0.0/10",  # carrier-grade NAT (shared address space)
        "127.0.0.0/8",
        "169.254.0.0/16",  # link-local: 169.254.169.254 is the instance metadata service
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/4",  # multicast
        "240.0.0.0/4",  # reserved, and the broadcast address
        "::/128",
        "::1/128",
        "100::/64",  # discard
        "2001:db8::/32",  # documentation
        "fc00::/7",  # unique local: fd00:ec2::254 is the IPv6 instance metadata service
        "fe80::/10",
        "ff00::/8",
    )
)
# Addresses refused even where private targets are allowed (tests, a local receiver):
# the instance metadata services.
_ALWAYS_REFUSED = tuple(
    ipaddress.ip_network(n) for n in ("169.254.0.0/16", "fe80::/10", "fd00:ec2::254/128")
)
# IPv6 forms that carry an IPv4 address: the embedded address is what gets reached.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class TargetRefused(Exception):
    """The target's address is not one cronhook may connect to (the message names no URL)."""


def _embedded_v4(address: ipaddress._BaseAddress) -> ipaddress._BaseAddress:
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address in _NAT64:
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if address.sixtofour is not None:
            return address.sixtofour
        if int(address) >> 32 == 0 and int(address) > 1:  # ::a.b.c.d (IPv4-compatible)
            return ipaddress.IPv4Address(int(address))
    return address


def address_refused(text: str, *, allow_private: bool = False) -> bool:
    """Whether an http target may not connect to the IP address ``text``."""
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return True
    # An IPv6 form carrying an IPv4 address reaches that IPv4 address: judge that one.
    for candidate in (_embedded_v4(address),):
        if any(candidate in net for net in _ALWAYS_REFUSED if net.version == candidate.version):
            return True
        if allow_private:
            continue
        if any(candidate in net for net in _REFUSED_NETWORKS if net.version == candidate.version):
            return True
        if candidate.is_private or candidate.is_multicast or candidate.is_reserved:
            return True
    return False


def _allow_private() -> bool:
    settings = get_settings()
    # The escape hatch exists for tests and a receiver on the developer's own machine: it
    # is honoured only in the local and test stages, never in a deployed one.
    return settings.allow_private_targets and settings.stage in _LOCAL_STAGES


def _aws_endpoint() -> tuple[str, int] | None:
    """The embedded AWS endpoint's host and port (local stack): never a target."""
    endpoint = get_settings().endpoint_url
    if not endpoint:
        return None
    parts = urlsplit(endpoint)
    try:
        return parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None


def _resolve(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (one lookup)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def resolve_target(host: str, port: int) -> list[str]:
    """The addresses to connect to for ``host``; TargetRefused if any of them is refused."""
    allow_private = _allow_private()
    try:
        addresses = _resolve(host, port)
    except (OSError, UnicodeError):
        raise TargetRefused("its host name does not resolve") from None
    if not addresses:
        raise TargetRefused("its host name does not resolve")
    # All, not any: a name that answers one public and one private address is refused,
    # whichever of them a connection would pick.
    if any(address_refused(a, allow_private=allow_private) for a in addresses):
        raise TargetRefused(
            "its host resolves to a private, loopback, link-local or reserved address"
        )
    aws = _aws_endpoint()
    if aws is not None and port == aws[1]:
        try:
            endpoint_addresses = set(_resolve(aws[0], aws[1]))
        except OSError:
            endpoint_addresses = set()
        if endpoint_addresses & set(addresses):
            raise TargetRefused("it points at the stack's own AWS endpoint")
    return addresses


def check_http_url(url: str) -> str | None:
    """Why ``url`` may not be an http target (naming the host), or None if it may."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
        port = parts.port
    except ValueError:
        return "the http target's URL is not valid"
    if parts.scheme not in ("https", "http") or not host:
        return "the http target's URL is not valid"
    if parts.username is not None or parts.password is not None:
        return "the http target's URL may not carry a user name or password"
    if parts.scheme == "http" and not _allow_private():
        return "http targets must use https (plain http only with CRONHOOK_ALLOW_PRIVATE_TARGETS)"
    try:
        resolve_target(host, port or (443 if parts.scheme == "https" else 80))
    except TargetRefused as exc:
        return f"the http target's host {host!r} is refused: {exc}"
    return None


# -- the request ---------------------------------------------------------------------------


def _tls_context() -> ssl.SSLContext:
    """The TLS settings of http targets: the system's trust store, host names checked."""
    return ssl.create_default_context()


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """A connection to ``address`` for ``host``: no resolution of its own."""

    def __init__(self, host: str, port: int, *, address: str, timeout: float):
        super().__init__(host, port, timeout=timeout)
        self._address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """TLS to ``address``, verified for ``host`` (SNI and the certificate's name)."""

    def __init__(self, host: str, port: int, *, address: str, timeout: float):
        super().__init__(host, port, timeout=timeout, context=_tls_context())
        self._address = address

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        try:
            self.sock = self._context.wrap_socket(sock, server_hostname=self.host)
        except BaseException:
            sock.close()
            raise


def _post(url: str, body: bytes, headers: dict) -> tuple[int, bytes]:
    """POST ``body`` to ``url`` through the address policy; (status, answer). Never redirects."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    tls = parts.scheme == "https"
    port = parts.port or (443 if tls else 80)
    if not tls and not _allow_private():
        raise TargetRefused("plain http is not allowed")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    last_error: OSError | None = None
    for address in resolve_target(host, port):
        kind = _PinnedHTTPSConnection if tls else _PinnedHTTPConnection
        connection = kind(host, port, address=address, timeout=HTTP_TIMEOUT_S)
        try:
            try:
                connection.connect()
            except ssl.SSLError:
                raise
            except OSError as exc:  # this address does not answer: try the next one
                last_error = exc
                continue
            connection.request("POST", path, body=body, headers=headers)
            response = connection.getresponse()
            return response.status, response.read(MAX_ANSWER_BYTES + 1)
        finally:
            connection.close()
    raise last_error or OSError("no address answered")


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
    """POST the fire, signed, to ``url``; its JSON answer, or WorkflowFailed (naming no URL)."""
    body = _fire_body(fire)
    # The signature's timestamp is the real wall clock (receivers reject one more than
    # five minutes off), so it is read here, at the moment of sending.
    headers = sign_outbound(
        _outbound_secret(fire.trigger_id),
        msg_id=fire.fire_id,
        timestamp=int(time.time()),
        body=body,
    )
    try:
        status, raw = _post(
            url,
            body,
            {**headers, "Content-Type": "application/json", "User-Agent": USER_AGENT},
        )
    except TargetRefused as exc:
        raise WorkflowFailed(f"http target refused: {exc}") from None
    except TimeoutError:
        raise WorkflowFailed(f"http target did not answer within {HTTP_TIMEOUT_S:g} s") from None
    except ssl.SSLCertVerificationError as exc:
        reason = exc.verify_message or "certificate not valid"
        if "hostname mismatch" in reason.lower():  # OpenSSL's text names the host
            reason = "it is not valid for the target's host name"
        raise WorkflowFailed(f"http target's TLS certificate was refused: {reason}") from None
    except ssl.SSLError as exc:
        raise WorkflowFailed(f"http target's TLS handshake failed: {exc.reason}") from None
    except (OSError, http.client.HTTPException) as exc:
        raise WorkflowFailed(f"http target unreachable: {type(exc).__name__}") from None
    if not 200 <= status < 300:
        snippet = raw[:300].decode("utf-8", "replace").strip()
        detail = f": {snippet}" if snippet else ""
        raise WorkflowFailed(f"http target answered {status}{detail}"[:1000])
    return _answer(raw, what="http target", strict=False)


# -- lambda: scope -------------------------------------------------------------------------

_FUNCTION_NAME = re.compile(r"[A-Za-z0-9_-]{1,140}")
_QUALIFIER = re.compile(r"[A-Za-z0-9_$-]{1,128}")


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
    name = lambda_function_name(target)
    if name is None:
        return "the lambda target is not a function name or ARN"
    prefix = lambda_prefix(tenant)
    if not name.startswith(prefix) or len(name) == len(prefix):
        return (
            f"a lambda target of tenant {tenant!r} must be a function named {prefix}<name> "
            f"(got {name!r})"
        )
    return None


# -- what people see of a target ---------------------------------------------------------

MASK = "[masked]"


def display_target(workflow: str) -> str:
    """``workflow`` as views, audit and logs show it: an http target's query values masked.

    Users put tokens in query strings (``?token=...``); the path and the parameter names
    stay, so a reader can still tell targets apart.
    """
    if not isinstance(workflow, str) or not workflow.startswith("http:"):
        return workflow
    url = workflow[len("http:") :]
    try:
        parts = urlsplit(url)
    except ValueError:
        return "http:" + MASK
    if not parts.query and not parts.fragment:
        return workflow
    # Each value masked, names kept; a part with no "=" (a bare token: ?abc123) is all value.
    masked_query = "&".join(
        f"{part.split('=', 1)[0]}={MASK}" if "=" in part else MASK
        for part in parts.query.split("&")
        if part
    )
    return "http:" + urlunsplit(
        (parts.scheme, parts.netloc, parts.path, masked_query, MASK if parts.fragment else "")
    )


def mask_targets(value: Any) -> Any:
    """``value`` (an audit detail, a log field) with every http target in it masked."""
    if isinstance(value, str):
        return display_target(value)
    if isinstance(value, dict):
        return {k: mask_targets(v) for k, v in value.items()}
    if isinstance(value, list):
        return [mask_targets(v) for v in value]
    return value


def prepare_target(item: Any, workflow: str, *, now: Any = None) -> dict:
    """On create (and a PATCH that changes the target): check it; a new ``http:`` target
    gets its outbound signing secret, sealed, shown once."""
    if workflow.startswith("lambda:"):
        problem = check_lambda_target(workflow[len("lambda:") :], tenant=item.tenant)
        if problem is not None:
            raise ValidationError(problem, field="workflow")
        return {}
    if not workflow.startswith("http:"):
        return {}
    problem = check_http_url(workflow[len("http:") :])
    if problem is not None:
        raise ValidationError(problem, field="workflow")
    from chalicelib.store import kms

    secret = generate_secret("standard")
    item.outbound_secret_sealed = kms.seal(secret, trigger_id=item.id)
    return {"outbound_secret": secret}
