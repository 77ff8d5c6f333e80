"""Serves the Chalice app over HTTP through Chalice's local gateway, bodies read whole."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from chalice.config import Config
from chalice.local import ChaliceRequestHandler

from chalicelib.local.gateway import ContractGateway, GatewayAnswered

__all__ = ["serve", "MAX_BODY_BYTES"]

# Read at most this much; anything larger is answered 413 without reading it all.
MAX_BODY_BYTES = 8 * 1024 * 1024


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
            chunks = []
            total = 0
            while True:
                size_line = self.rfile.readline().split(b";", 1)[0].strip()
                size = int(size_line or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                total += size
                if total > MAX_BODY_BYTES:
                    raise _TooLarge()
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            body = b"".join(chunks)
            headers.pop("Transfer-Encoding", None)
            headers["Content-Length"] = str(len(body))
            return headers, body
        length = int(self.headers.get("content-length", "0") or 0)
        if length > MAX_BODY_BYTES:
            raise _TooLarge()
        return headers, (self.rfile.read(length) if length > 0 else None)

    def _generic_handle(self) -> None:
        try:
            headers, body = self._parse_payload()
        except _TooLarge:
            self.close_connection = True
            self._send_json(
                413, {"error": {"code": "too_large", "message": "the body is larger than 1 MiB"}}
            )
            return
        except ValueError:
            self._send_json(
                400, {"error": {"code": "bad_request", "message": "malformed request body"}}
            )
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

    def _send_json(self, status: int, body: dict) -> None:
        self._send_http_response(status, {"Content-Type": "application/json"}, json.dumps(body))

    def log_message(self, format: str, *args: Any) -> None:  # quiet by default
        pass


class _TooLarge(Exception):
    pass


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

    def handler(*args: Any) -> _Handler:
        return _Handler(*args, gateway=gateway)

    return _Server((host, port), handler)
