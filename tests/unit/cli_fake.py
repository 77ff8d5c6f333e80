"""A fake of the REST API on a real local socket, for the ``cronhook`` command's tests.

The fake answers the contract's routes with canned bodies and records every request, so
the tests check what goes over the wire (method, path, query, body, auth header) and
what a person or a program sees (table, JSON, stderr, exit code).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from click.testing import CliRunner, Result

from cronhook_cli import cli

API_KEY = "test-key"

TRIGGER = {
    "id": "trg_01",
    "workflow": "echo",
    "title": "Weekly report for client 7",
    "display_name": "Weekly report for client 7",
    "tags": ["client-7"],
    "kind": "cron",
    "cadence": "At 08:00 on Monday (Europe/Berlin)",
    "schedule": {"cron": "0 8 * * 1", "timezone": "Europe/Berlin"},
    "event": None,
    "status": "active",
    "disabled_reason": None,
    "next_fire_at": "2030-01-07T07:00:00Z",
    "consecutive_failures": 0,
    "run_count": 3,
    "last_run": {
        "id": "run_03",
        "status": "succeeded",
        "finished_at": "2029-12-31T07:00:01Z",
        "error": None,
    },
    "webhook_url": None,
    "created_by": "key_root",
    "created_at": "2029-12-01T00:00:00Z",
    "updated_at": "2029-12-01T00:00:00Z",
    "warnings": [],
}

DISABLED_TRIGGER = {
    **TRIGGER,
    "id": "trg_02",
    "title": None,
    "display_name": "fail",
    "workflow": "fail",
    "kind": "interval",
    "cadence": "Every 2 hours",
    "status": "disabled",
    "disabled_reason": "failures",
    "next_fire_at": None,
    "last_run": {"id": "run_09", "status": "failed", "finished_at": None, "error": "boom"},
}

WEBHOOK_TRIGGER = {
    **TRIGGER,
    "id": "trg_hook",
    "title": None,
    "display_name": "echo",
    "kind": "event",
    "cadence": "On GitHub push",
    "schedule": None,
    "event": {"source": "github", "filter": None},
    "next_fire_at": None,
    "last_run": None,
    "webhook_url": "http://127.0.0.1:8000/hooks/tok_abc",
    "webhook": {"url": "http://127.0.0.1:8000/hooks/tok_abc", "secret": "whsec_only_once"},
}

RUN = {
    "id": "run_03",
    "trigger_id": "trg_01",
    "surface": "schedule",
    "status": "failed",
    "scheduled_for": "2029-12-31T07:00:00Z",
    "started_at": "2029-12-31T07:00:00.250Z",
    "finished_at": "2029-12-31T07:00:01Z",
    "lateness_ms": 250,
    "error": "Traceback line one\nline two",
    "cost_usd": 0.0,
    "event_id": None,
    "attempt": 1,
    "output": None,
}


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


Answer = tuple[int, Any]

Route = Callable[[Recorded], Answer]


@dataclass
class FakeCronhook:
    """The contract's routes on 127.0.0.1, answering canned bodies and recording requests."""

    requests: list[Recorded] = field(default_factory=list)
    routes: dict[tuple[str, str], Route] = field(default_factory=dict)
    release: threading.Event = field(default_factory=threading.Event)
    url: str = ""

    def answer(self, method: str, path: str, status: int, body: Any = None) -> None:
        self.routes[(method, path)] = lambda request: (status, body)

    def route(self, method: str, path: str, handler: Route) -> None:
        self.routes[(method, path)] = handler

    def dispatch(self, request: Recorded) -> Answer:
        self.requests.append(request)
        if request.headers.get("authorization") != f"Bearer {API_KEY}":
            return 401, {"error": {"code": "unauthorized", "message": "missing or bad API key"}}
        handler = self.routes.get((request.method, request.path))
        if handler is None:
            return 404, {"error": {"code": "not_found", "message": "trigger not found"}}
        return handler(request)


def handler_for(fake: FakeCronhook) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            request = Recorded(
                method=self.command,
                path=parts.path,
                query=parse_qs(parts.query),
                headers={k.lower(): v for k, v in self.headers.items()},
                body=json.loads(raw) if raw else None,
            )
            status, body = fake.dispatch(request)
            if isinstance(body, str):
                payload, content_type = body.encode(), "text/html"
            elif body is None:
                payload, content_type = b"", "application/json"
            else:
                payload, content_type = json.dumps(body).encode(), "application/json"
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_DELETE = do_PATCH = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


class QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that timed out and hung up is part of a test, not noise


def two_pages(first: dict, second: dict) -> Route:
    """A list route answering ``first`` on its first page and ``second`` on page-2."""

    def pages(request: Recorded) -> Answer:
        if request.query.get("cursor") == ["page-2"]:
            return 200, {"items": [second], "next_cursor": None}
        return 200, {"items": [first], "next_cursor": "page-2"}

    return pages


def invoke(url: str, *args: str, api_key: str | None = API_KEY) -> Result:
    env = {"CRONHOOK_URL": url, "CRONHOOK_API_KEY": api_key, "COLUMNS": "200"}
    return CliRunner().invoke(cli, list(args), env=env)


def only_request(api: FakeCronhook) -> Recorded:
    assert len(api.requests) == 1, api.requests
    return api.requests[0]


def assert_no_traceback(result: Result) -> None:
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


LONG_TRIGGER = {
    **TRIGGER,
    "id": "trg_abcdefghijklmnop",
    "title": "Weekly report for client 7 with a long title that has to wrap somewhere",
    "display_name": "Weekly report for client 7 with a long title that has to wrap somewhere",
    "cadence": "At 08:00 on Monday, Wednesday and Friday (America/Argentina/Buenos_Aires)",
    "status": "disabled",
    "disabled_reason": "failures",
    "next_fire_at": "2030-01-07T07:00:00.123Z",
}

LONG_RUN = {
    **RUN,
    "id": "trg_abcdefghijklmnop.1893999600000s",
    "trigger_id": "trg_abcdefghijklmnop",
    "surface": "backfill",
    "status": "budget_exceeded",
    "scheduled_for": "2030-01-07T07:00:00.000Z",
}

EVENT = {
    "id": "evt_abcdefghijklmnopqrstuvwx",
    "trigger_id": "trg_abcdefghijklmnop",
    "status": "succeeded",
    "run_id": "trg_abcdefghijklmnop.1893999600000eqrstuvwx",
    "attempt": 1,
    "source": "github",
    "event_type": "push",
    "dedupe_key": "d-1",
    "received_at": "2030-01-07T07:00:00.250Z",
    "retry_at": None,
    "finished_at": "2030-01-07T07:00:01.000Z",
    "body_size": 120,
    "headers": {},
}

AUDIT = {
    "id": "1893999600000#abcd",
    "at": "2030-01-07T07:00:00.250Z",
    "actor": "key_abcdefghijklmnop",
    "action": "disable",
    "trigger_id": "trg_abcdefghijklmnop",
    "detail": {"note": "client asked", "via": "bulk"},
}

KEY = {
    "id": "key_abcdefghijklmnop",
    "tenant": "local",
    "role": "operator",
    "created_at": "2030-01-07T07:00:00.250Z",
    "created_by": "root",
}


def invoke_at(url: str, columns: int, *args: str) -> Result:
    env = {"CRONHOOK_URL": url, "CRONHOOK_API_KEY": API_KEY, "COLUMNS": str(columns)}
    return CliRunner().invoke(cli, list(args), env=env)
