"""Serves the Chalice app over HTTP through Chalice's local gateway, bodies read whole."""

from __future__ import annotations

import json
import re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from chalice.config import Config
from chalice.local import ChaliceRequestHandler

from chalicelib.local.gateway import ContractGateway, GatewayAnswered

__all__ = ["serve", "MAX_BODY_BYTES"]

# Read at most this much; anything larger is answered 413 without keeping it.
MAX_BODY_BYTES = 8 * 1024 * 1024
# After a 413 the rest of the body is read and dropped, up to this much, so the client
# gets to read the answer (closing on unread data makes the kernel reset the connection,
# and the client sees a broken pipe instead of the 413). Past it, the connection is shut.
DRAIN_MAX_BYTES = 64 * 1024 * 1024
DRAIN_TIMEOUT_S = 10
_LINE_MAX = 8 * 1024
_TRAILERS_MAX = 64
_CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,15}")
_LENGTH = re.compile(r"[0-9]{1,15}")


class _Handler(ChaliceRequestHandler):
    """Chalice's handler, plus chunked bodies and the deployed API's gateway responses."""

    def __init__(self, request: Any, client_address: Any, server: Any, gateway: ContractGateway):
        # One gateway for the server (it keeps no per-request state); the base class would
        # build a plain LocalGateway per connection.
        self.local_gateway = gateway
        BaseHTTPRequestHandler.__init__(self, request, client_address, server)

    def _parse_payload(self) -> tuple[dict, bytes | None]:
        headers = dict(self.headers)
        if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
            body = self._read_chunked()
            headers.pop("Transfer-Encoding", None)
            headers["Content-Length"] = str(len(body))
            return headers, body
        length = self._content_length()
        if length > MAX_BODY_BYTES:
            raise _TooLarge(remaining=length)
        return headers, (self.rfile.read(length) if length > 0 else None)

    def _content_length(self) -> int:
        text = (self.headers.get("content-length") or "0").strip()
        if not _LENGTH.fullmatch(text):
            raise _BadBody("Content-Length must be a non-negative integer")
        return int(text)

    def _read_chunked(self) -> bytes:
        """The body of a chunked request (RFC 9112 7.1), strictly: a bad size line is 400."""
        chunks: list[bytes] = []
        total = 0
        while True:
            size = self._chunk_size()
            if size == 0:
                self._skip_trailers()
                return b"".join(chunks)
            total += size
            if total > MAX_BODY_BYTES:
                raise _TooLarge(chunk_left=size)
            data = self.rfile.read(size)
            if len(data) != size:
                raise _BadBody("the chunked body ended inside a chunk")
            chunks.append(data)
            if self.rfile.readline(_LINE_MAX) not in (b"\r\n", b"\n"):
                raise _BadBody("a chunk is not followed by CRLF")

    def _chunk_size(self) -> int:
        line = self.rfile.readline(_LINE_MAX)
        if not line.endswith(b"\n"):
            raise _BadBody("a chunk size line is missing or too long")
        digits = line.split(b";", 1)[0].strip()
        # Hex digits only: no sign, no 0x, no blank (int() would take "-5" and "0x5").
        if not _CHUNK_SIZE.fullmatch(digits):
            shown = digits[:20].decode("ascii", "replace")
            raise _BadBody(f"bad chunk size {shown!r}: hex digits only")
        return int(digits, 16)

    def _skip_trailers(self) -> None:
        for _ in range(_TRAILERS_MAX):
            line = self.rfile.readline(_LINE_MAX)
            if line in (b"\r\n", b"\n", b""):
                return
        raise _BadBody("too many trailer lines")

    def _drain(self, too_large: _TooLarge) -> None:
        """Read and drop what is left of a refused body (bounded), so the 413 is read."""
        self.connection.settimeout(DRAIN_TIMEOUT_S)
        budget = DRAIN_MAX_BYTES
        try:
            if too_large.remaining is not None:
                left = too_large.remaining
                while 0 < left <= budget:
                    got = self.rfile.read(min(left, 65536))
                    if not got:
                        return
                    left -= len(got)
                    budget -= len(got)
                return
            left = too_large.chunk_left or 0
            while budget > 0:
                while left > 0:
                    got = self.rfile.read(min(left, 65536))
                    if not got:
                        return
                    left -= len(got)
                    budget -= len(got)
                self.rfile.readline(_LINE_MAX)  # the CRLF after the chunk
                left = self._chunk_size()
                if left == 0:
                    self._skip_trailers()
                    return
                if left > budget:
                    return
        except (OSError, _BadBody):
            return

    def handle_expect_100(self) -> bool:
        # A client that asks first (curl does, for large bodies) is told 413 before it sends.
        try:
            too_big = self._content_length() > MAX_BODY_BYTES
        except _BadBody:
            too_big = False  # the 400 comes when the request is handled
        if too_big:
            self.close_connection = True
            self._send_json(413, _TOO_LARGE, close=True)
            return False
        return super().handle_expect_100()

    def _generic_handle(self) -> None:
        try:
            headers, body = self._parse_payload()
        except _TooLarge as too_large:
            self.close_connection = True
            self._send_json(413, _TOO_LARGE, close=True)
            self._drain(too_large)
            return
        except (_BadBody, ValueError) as exc:
            # What follows a body that cannot be framed cannot be read as a request.
            self.close_connection = True
            message = str(exc) if isinstance(exc, _BadBody) else "malformed request body"
            self._send_json(400, {"error": {"code": "bad_request", "message": message}}, close=True)
            return
        try:
            response = self.local_gateway.handle_request(
                method=self.command, path=self.path, headers=headers, body=body
            )
        except GatewayAnswered as answered:
            self._send_http_response(answered.CODE, answered.headers, answered.body)
            return
        status = response["statusCode"]
        out_headers = response["headers"].copy()
        out_headers.update(response.get("multiValueHeaders") or {})
        response = self._handle_binary(response)
        payload = response["body"]
        if status in (404, 405, 415) and _is_chalice_error(payload):
            code = {404: "not_found", 405: "method_not_allowed", 415: "unsupported_media_type"}[
                status
            ]
            self._send_json(status, {"error": {"code": code, "message": _chalice_message(payload)}})
            return
        self._send_http_response(status, out_headers, payload)

    def _method_not_allowed(self) -> None:
        # http.server answers unknown verbs with an HTML 501; API Gateway with a 4xx. The
        # body is not read, so the connection cannot carry another request after this one.
        self.close_connection = True
        self._send_json(
            405,
            {
                "error": {
                    "code": "method_not_allowed",
                    "message": f"method {self.command} not allowed",
                }
            },
        )

    def __getattr__(self, name: str) -> Any:
        # Every verb without a do_ method of its own (TRACE, CONNECT, QUERY...).
        if name.startswith("do_"):
            return self._method_not_allowed
        raise AttributeError(name)

    def _send_http_response(self, code: int, headers: Any, body: Any) -> None:
        # A HEAD answer has no body (RFC 9110), whatever the route or the error says: a
        # client does not read one, so bytes written here would be parsed as the next
        # response on the connection.
        if self.command == "HEAD":
            self.send_response(code)
            self.send_header("Content-Type", headers.pop("Content-Type", "application/json"))
            self._send_headers(headers)
            return
        super()._send_http_response(code, headers, body)

    def _send_json(self, status: int, body: dict, *, close: bool = False) -> None:
        headers = {"Content-Type": "application/json"}
        if close:
            headers["Connection"] = "close"
        self._send_http_response(status, headers, json.dumps(body))

    def log_message(self, format: str, *args: Any) -> None:  # quiet by default
        pass

    # Chalice binds its own _generic_handle to these verbs in its class body: bind ours,
    # or none of the above (413, 400, the contract's error shapes) would ever run.
    do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = do_PATCH = do_OPTIONS = _generic_handle


_TOO_LARGE = {
    "error": {
        "code": "too_large",
        "message": f"the body is larger than {MAX_BODY_BYTES // (1024 * 1024)} MiB",
    }
}


class _TooLarge(Exception):
    """The body is over MAX_BODY_BYTES; what is left of it, to drain."""

    def __init__(self, *, remaining: int | None = None, chunk_left: int | None = None):
        super().__init__("too large")
        self.remaining = remaining
        self.chunk_left = chunk_left


class _BadBody(Exception):
    """The body cannot be framed (bad Content-Length, bad chunk): 400."""


def _is_chalice_error(payload: Any) -> bool:
    try:
        data = json.loads(payload)
    except (TypeError, ValueError):
        return False
    return isinstance(data, dict) and "Code" in data and "Message" in data


def _chalice_message(payload: Any) -> str:
    return str(json.loads(payload).get("Message", ""))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def serve(host: str, port: int) -> _Server:
    """An HTTP server for ``app.py`` on ``host:port`` (call ``serve_forever``)."""
    import app as app_module

    config = Config.create(lambda_timeout=900, app_name="cronhook")

    gateway = ContractGateway(app_module.app, config)

    def handler(request: Any, client_address: Any, server: Any) -> _Handler:
        return _Handler(request, client_address, server, gateway=gateway)

    return _Server((host, port), handler)
