"""``http:`` targets: a signed POST through the address policy, never redirected."""

from __future__ import annotations

import http.client
import socket
import ssl
import time
from urllib.parse import urlsplit

from chalicelib.domain.run_detail import http_error_detail
from chalicelib.domain.signatures import sign_outbound
from chalicelib.store import kms, triggers
from chalicelib.workflows.model import Fire, WorkflowFailed
from chalicelib.workflows.remote.addresses import TargetRefused, allow_private, resolve_target
from chalicelib.workflows.remote.answers import MAX_ANSWER_BYTES, fire_body, read_answer

__all__ = ["invoke_http", "post_pinned", "HTTP_TIMEOUT_S", "USER_AGENT"]

HTTP_TIMEOUT_S = 30.0
USER_AGENT = "cronhook/1 (+https://github.com/cronhook)"


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
        self._tls = _tls_context()
        super().__init__(host, port, timeout=timeout, context=self._tls)
        self._address = address

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        try:
            self.sock = self._tls.wrap_socket(sock, server_hostname=self.host)
        except BaseException:
            sock.close()
            raise


def _post(url: str, body: bytes, headers: dict) -> tuple[int, bytes]:
    """POST ``body`` to ``url`` through the address policy; (status, answer). Never redirects."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    tls = parts.scheme == "https"
    port = parts.port or (443 if tls else 80)
    if not tls and not allow_private():
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


# For cronhook's other outbound POSTs (alert channels): the same policy, the same pinning.
post_pinned = _post


def _outbound_secret(trigger_id: str) -> str:
    item = triggers.get_trigger(trigger_id, consistent=False)
    sealed = item.outbound_secret_sealed if item is not None else None
    if not sealed:
        raise WorkflowFailed(
            "this trigger has no outbound signing secret (it became an http target by an "
            "edit); create the trigger again to get one"
        )
    return kms.unseal(sealed, trigger_id=trigger_id, now_s=time.time())


def invoke_http(url: str, fire: Fire) -> dict | None:
    """POST the fire, signed, to ``url``; its JSON answer, or WorkflowFailed (naming no URL)."""
    body = fire_body(fire)
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
        raise WorkflowFailed(
            f"http target answered {status}{detail}"[:1000],
            detail=http_error_detail(status, raw),
        )
    return read_answer(raw, what="http target", strict=False)
