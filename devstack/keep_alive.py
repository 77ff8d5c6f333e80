"""Keep-alive connections for the embedded AWS's HTTP server.

werkzeug's development server answers every request with ``Connection: close``: Python's
``http.server`` cannot drain a request body the application left unread, so a kept
connection could read the rest of that body as the next request line. Every AWS call of
the local stack then paid a new TCP connection, a new server thread and botocore's
"resetting dropped connection" (measured with a crowd of 60 fires on :00: one sample in
seven of the runners' process was ``create_connection``, one in nine of the embedded
AWS's was starting the connection's thread).

``KeepAliveHandler`` reads a request's whole body off the socket before the application
runs and hands the application that body, so nothing is left to drain; then the
connection stays open for the client's next call, as AWS's own endpoints do. A request
it cannot read whole first (a chunked body, a malformed length, HTTP/1.0, or a client
that asked for ``Connection: close``) is answered as before and the connection closed.
"""

from __future__ import annotations

import io
from typing import Any

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from moto.server import ThreadedMotoServer
from werkzeug.serving import make_server

__all__ = ["KeepAliveHandler", "KeepAliveMotoServer", "keeps_alive"]

# A body larger than this is not read ahead (the connection closes after it, as before).
MAX_READ_AHEAD = 64 * 1024 * 1024


def keeps_alive(request_version: str, headers: Any) -> bool:
    """Whether a request's connection may stay open: HTTP/1.1, no ``Connection: close``,
    and a body whose end is known from its ``Content-Length`` (or no body)."""
    if request_version != "HTTP/1.1":
        return False
    if (headers.get("Connection") or "").strip().lower() == "close":
        return False
    if (headers.get("Transfer-Encoding") or "").strip():
        return False
    length = (headers.get("Content-Length") or "0").strip()
    return length.isdigit() and int(length) <= MAX_READ_AHEAD


class KeepAliveHandler(MotoRequestHandler):
    """moto's request handler, keeping the connection open between requests."""

    _keep = False
    # The answer goes out in two writes (headers, then body): on a kept connection Nagle's
    # algorithm holds the second until the client's delayed ACK (40 ms a call, measured).
    disable_nagle_algorithm = True

    def run_wsgi(self) -> None:
        self._keep = keeps_alive(self.request_version, self.headers)
        if not self._keep:
            super().run_wsgi()
            return
        length = int((self.headers.get("Content-Length") or "0").strip())
        body = self.rfile.read(length) if length else b""
        if len(body) != length:  # the client went away mid-body
            self._keep = False
            self.close_connection = True
            return
        socket_file, self.rfile = self.rfile, io.BytesIO(body)  # type: ignore[assignment]
        try:
            super().run_wsgi()
        finally:
            self.rfile = socket_file
            # Only this request's answer: an error answered before the next request
            # reaches the application (a bad request line) closes as before.
            self._keep = False

    def send_header(self, keyword: str, value: str) -> None:
        if self._keep and keyword.lower() == "connection" and value.strip().lower() == "close":
            return  # the body was read whole: the next request line is next on the socket
        super().send_header(keyword, value)


class KeepAliveMotoServer(ThreadedMotoServer):
    """moto's in-process server (the tests' and the bench's), its connections kept alive.

    ``ThreadedMotoServer`` with ``KeepAliveHandler`` in place of moto's handler, and
    nothing else changed: each test's calls then reuse botocore's pooled connections
    instead of opening one (and a server thread) per call.
    """

    def _server_entry(self) -> None:
        app = DomainDispatcherApplication(create_backend_app)
        self._server = make_server(
            self._ip_address, self._port, app, threaded=True, request_handler=KeepAliveHandler
        )
        self._server_ready_event.set()
        self._server.serve_forever()
