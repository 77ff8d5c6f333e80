"""Serves the Chalice app over HTTP: waitress does the HTTP, this module adapts it to Chalice.

Until issue 26 this module framed requests itself on ``http.server``, and got it wrong in
the ways hand-written framing does: of two disagreeing ``Content-Length`` headers the
first won, ``Transfer-Encoding: gzip, chunked`` and ``xchunked`` were read as chunked,
and nothing closed an idle connection (300 stalled ones were still held after 90 s).
waitress (a maintained WSGI server) now reads every request: it refuses ambiguous
framing (400; a transfer coding other than ``chunked``: 501, as RFC 9112 says), de-chunks
bodies, answers 413 past ``MAX_BODY_BYTES`` without keeping the body, closes a
connection idle for ``IDLE_TIMEOUT_S`` and holds at most ``CONNECTION_LIMIT`` at once.

What is left here is the adapter: a WSGI application that hands each request to
Chalice's local gateway (``ContractGateway``: the deployed API's gateway responses),
and waitress's own error answers rewritten in the contract's JSON error shape.
"""

from __future__ import annotations

import base64
import json
import threading
from http import HTTPStatus
from typing import Any
from wsgiref.util import is_hop_by_hop

from chalice.config import Config
from waitress.channel import HTTPChannel
from waitress.server import create_server
from waitress.task import ErrorTask

from devstack.gateway import ContractGateway, GatewayAnswered

__all__ = ["serve", "MAX_BODY_BYTES", "IDLE_TIMEOUT_S", "CONNECTION_LIMIT"]

# Read at most this much; anything larger is answered 413 without keeping it.
MAX_BODY_BYTES = 8 * 1024 * 1024
# A body over MAX_BODY_BYTES is still read (and dropped) up to this size before its 413,
# so the client gets to read the answer: closing on unread data makes the kernel reset
# the connection, and the client sees a broken pipe instead. Past it (or a
# Content-Length past it) waitress answers 413 at once and closes.
DRAIN_MAX_BYTES = 64 * 1024 * 1024
# A connection that sends nothing (a request, or the rest of one) for this long is closed.
IDLE_TIMEOUT_S = 30
CONNECTION_LIMIT = 100
# Requests handled at once (the old server started a thread per connection, unbounded).
THREADS = 16
_METHODS = frozenset({"GET", "PUT", "POST", "HEAD", "DELETE", "PATCH", "OPTIONS"})
_TOO_LARGE = f"the body is larger than {MAX_BODY_BYTES // (1024 * 1024)} MiB"
_ERROR_CODES = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    413: "too_large",
    415: "unsupported_media_type",
    431: "headers_too_large",
    501: "not_implemented",
}


class _JsonErrorTask(ErrorTask):
    """waitress's answer to a request it cannot read, in the contract's error shape."""

    def execute(self) -> None:
        error = self.request.error
        code = int(error.code)
        message = str(error.body)
        if code == 413:
            message = _TOO_LARGE
        body = json.dumps(
            {"error": {"code": _ERROR_CODES.get(code, "bad_request"), "message": message}}
        ).encode()
        self.status = f"{code} {error.reason}"
        self.response_headers.append(("Content-Type", "application/json"))
        self.set_close_on_finish()  # what follows an unreadable request is not a request
        self.content_length = len(body)
        self.write(body)


class _Channel(HTTPChannel):
    error_task_class = _JsonErrorTask

    def send_continue(self) -> None:
        # waitress would say "100 Continue" to a request it has already refused (a
        # Content-Length over its limit): the client would start sending a body that is
        # never read. Refused, it gets its 413 (or 400) and no invitation.
        if self.request is not None and self.request.error is not None:
            self.request.expect_continue = False
            return
        super().send_continue()


def _headers_of(environ: dict) -> dict[str, str]:
    """The request's headers as the client named them (WSGI keeps them as CGI variables)."""
    headers = {}
    for key, value in environ.items():
        if key.startswith("HTTP_"):
            headers[key[5:].replace("_", "-").title()] = value
    for key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
        if environ.get(key):
            headers[key.replace("_", "-").title()] = environ[key]
    return headers


def _error(status: int, message: str) -> tuple[int, dict, bytes]:
    body = {"error": {"code": _ERROR_CODES[status], "message": message}}
    return status, {"Content-Type": "application/json"}, json.dumps(body).encode()


def _answer(gateway: ContractGateway, environ: dict) -> tuple[int, dict, bytes]:
    """The gateway's answer to one request: (status, headers, body)."""
    method = environ["REQUEST_METHOD"]
    if method not in _METHODS:
        return _error(405, f"method {method} not allowed")
    length = int(environ.get("CONTENT_LENGTH") or 0)  # waitress checked it (and de-chunked)
    if length > MAX_BODY_BYTES:
        return _error(413, _TOO_LARGE)  # read in full and dropped: the connection goes on
    body = environ["wsgi.input"].read(length) if length > 0 else None
    try:
        response = gateway.handle_request(
            method=method,
            path=environ["REQUEST_URI"],
            headers=_headers_of(environ),
            body=body,
            source_ip=environ.get("REMOTE_ADDR") or "127.0.0.1",
        )
    except GatewayAnswered as answered:
        return answered.CODE, dict(answered.headers), _bytes(answered.body)
    status = response["statusCode"]
    headers = response["headers"].copy()
    headers.update(response.get("multiValueHeaders") or {})
    payload = response["body"]
    if response.get("isBase64Encoded"):
        payload = base64.b64decode(payload)
    if status in (404, 405, 415) and _is_chalice_error(payload):
        return _error(status, _chalice_message(payload))
    return status, headers, _bytes(payload)


def _bytes(body: Any) -> bytes:
    if body is None:
        return b""
    return body if isinstance(body, bytes) else str(body).encode("utf-8")


def _wsgi_app(gateway: ContractGateway) -> Any:
    def application(environ: dict, start_response: Any) -> list[bytes]:
        status, headers, body = _answer(gateway, environ)
        out = [("Content-Type", headers.pop("Content-Type", "application/json"))]
        for name, value in headers.items():
            if name.lower() == "content-length" or is_hop_by_hop(name):
                continue  # waitress writes these (the length: the one the body has)
            for one in value if isinstance(value, list) else [value]:
                out.append((name, str(one)))
        out.append(("Content-Length", str(len(body))))
        start_response(f"{status} {_reason(status)}", out)
        # A HEAD answer has no body (RFC 9110): waitress sends none.
        return [body]

    return application


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Status"


def _is_chalice_error(payload: Any) -> bool:
    try:
        data = json.loads(payload)
    except (TypeError, ValueError):
        return False
    return isinstance(data, dict) and "Code" in data and "Message" in data


def _chalice_message(payload: Any) -> str:
    return str(json.loads(payload).get("Message", ""))


class Served:
    """A running waitress server with the interface the stack uses (``serve_forever``...)."""

    def __init__(self, server: Any, host: str):
        self._server = server
        self._closed = threading.Event()
        self.server_address = (host, server.effective_port)

    def serve_forever(self) -> None:
        try:
            self._server.run()
        except (OSError, ValueError):
            if not self._closed.is_set():
                raise  # closed under the loop by shutdown: expected; anything else is not

    def shutdown(self) -> None:
        """Stop accepting, close every connection, stop the worker threads. Idempotent."""
        if self._closed.is_set():
            return
        self._closed.set()
        self._server.task_dispatcher.shutdown(cancel_pending=True, timeout=5)
        for channel in list(self._server._map.values()):
            channel.close()

    def server_close(self) -> None:
        self.shutdown()


def serve(host: str, port: int, *, idle_timeout_s: int = IDLE_TIMEOUT_S) -> Served:
    """An HTTP server for ``app.py`` on ``host:port`` (call ``serve_forever``)."""
    import app as app_module

    config = Config.create(lambda_timeout=900, app_name="cronhook")
    gateway = ContractGateway(app_module.app, config)
    server = create_server(
        _wsgi_app(gateway),
        host=host,
        port=port,
        threads=THREADS,
        connection_limit=CONNECTION_LIMIT,
        channel_timeout=idle_timeout_s,
        # How often idle connections are looked for: a fraction of the timeout.
        cleanup_interval=max(1, idle_timeout_s // 4),
        # waitress refuses a body of this size or more (413, at once); up to it, the
        # adapter answers 413 for a body over MAX_BODY_BYTES, once it is read.
        max_request_body_size=DRAIN_MAX_BYTES,
        ident="cronhook",
        # No proxy in front: every header reaches the app as the client sent it.
        clear_untrusted_proxy_headers=False,
    )
    server.channel_class = _Channel
    return Served(server, host)
