"""The ``cronhook`` command against a fake of the REST API on a real local socket.

The fake answers the contract's routes with canned bodies and records every request, so
the tests check what goes over the wire (method, path, query, body, auth header) and
what a person or a program sees (table, JSON, stderr, exit code).
"""

from __future__ import annotations

import json
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from click.testing import CliRunner, Result

from chalicelib import cli as cli_module
from chalicelib.cli import cli, parse_every, parse_instant

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


# --------------------------------------------------------------------------- the fake


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


def _handler_for(fake: FakeCronhook) -> type[BaseHTTPRequestHandler]:
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


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that timed out and hung up is part of a test, not noise


@pytest.fixture
def api() -> Iterator[FakeCronhook]:
    fake = FakeCronhook()
    server = _QuietServer(("127.0.0.1", 0), _handler_for(fake))
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield fake
    fake.release.set()
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


@pytest.fixture
def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def invoke(url: str, *args: str, api_key: str | None = API_KEY) -> Result:
    env = {"CRONHOOK_URL": url, "CRONHOOK_API_KEY": api_key, "COLUMNS": "200"}
    return CliRunner().invoke(cli, list(args), env=env)


def only_request(api: FakeCronhook) -> Recorded:
    assert len(api.requests) == 1, api.requests
    return api.requests[0]


def assert_no_traceback(result: Result) -> None:
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


# --------------------------------------------------------------------------- triggers list


def test_list_sends_filters_and_bearer_key_and_prints_a_table(api: FakeCronhook) -> None:
    api.answer("GET", "/v1/triggers", 200, {"items": [TRIGGER], "next_cursor": None})

    result = invoke(
        api.url, "triggers", "list", "--tag", "client-7", "--workflow", "echo", "--status", "active"
    )

    assert result.exit_code == 0, result.output
    request = only_request(api)
    assert (request.method, request.path) == ("GET", "/v1/triggers")
    assert request.query == {"tag": ["client-7"], "workflow": ["echo"], "status": ["active"]}
    assert request.headers["authorization"] == "Bearer test-key"
    header = result.stdout.splitlines()[0].split()
    assert header[:3] == ["ID", "NAME", "KIND"]
    for text in (
        "trg_01",
        "Weekly report for client 7",
        "cron",
        "At 08:00 on Monday (Europe/Berlin)",
        "active",
        "2030-01-07T07:00:00Z",
        "succeeded",
    ):
        assert text in result.stdout


def test_list_leaves_out_filters_that_were_not_given(api: FakeCronhook) -> None:
    api.answer("GET", "/v1/triggers", 200, {"items": [], "next_cursor": None})

    result = invoke(api.url, "triggers", "list")

    assert result.exit_code == 0
    assert only_request(api).query == {}
    assert "No triggers." in result.stdout


def test_list_follows_next_cursor_until_the_last_page(api: FakeCronhook) -> None:
    def pages(request: Recorded) -> Answer:
        if request.query.get("cursor") == ["page-2"]:
            return 200, {"items": [DISABLED_TRIGGER], "next_cursor": None}
        return 200, {"items": [TRIGGER], "next_cursor": "page-2"}

    api.route("GET", "/v1/triggers", pages)

    result = invoke(api.url, "triggers", "list", "--tag", "client-7")

    assert result.exit_code == 0, result.output
    assert [r.query for r in api.requests] == [
        {"tag": ["client-7"]},
        {"tag": ["client-7"], "cursor": ["page-2"]},
    ]
    assert "trg_01" in result.stdout and "trg_02" in result.stdout


def test_list_json_prints_only_parseable_json_with_every_page(api: FakeCronhook) -> None:
    def pages(request: Recorded) -> Answer:
        if request.query.get("cursor") == ["page-2"]:
            return 200, {"items": [DISABLED_TRIGGER], "next_cursor": None}
        return 200, {"items": [TRIGGER], "next_cursor": "page-2"}

    api.route("GET", "/v1/triggers", pages)

    result = invoke(api.url, "triggers", "list", "--json")

    assert result.exit_code == 0
    assert json.loads(result.stdout) == {
        "items": [TRIGGER, DISABLED_TRIGGER],
        "next_cursor": None,
    }


def test_list_shows_disabled_reason_next_to_status(api: FakeCronhook) -> None:
    api.answer("GET", "/v1/triggers", 200, {"items": [DISABLED_TRIGGER], "next_cursor": None})

    result = invoke(api.url, "triggers", "list")

    assert result.exit_code == 0
    assert "disabled (failures)" in result.stdout
    assert "Every 2 hours" in result.stdout


def test_list_prints_titles_with_brackets_literally_not_as_markup(api: FakeCronhook) -> None:
    tricky = {**TRIGGER, "display_name": "[bold]report[/bold] [x]"}
    api.answer("GET", "/v1/triggers", 200, {"items": [tricky], "next_cursor": None})

    result = invoke(api.url, "triggers", "list")

    assert result.exit_code == 0
    assert "[bold]report[/bold] [x]" in result.stdout


def test_list_stops_with_exit_1_when_the_server_repeats_a_cursor(api: FakeCronhook) -> None:
    api.answer("GET", "/v1/triggers", 200, {"items": [TRIGGER], "next_cursor": "again"})

    result = invoke(api.url, "triggers", "list")

    assert result.exit_code == 1
    assert "repeated page cursor 'again'" in result.stderr
    assert len(api.requests) == 2


# --------------------------------------------------------------------------- triggers create


def test_create_cron_sends_schedule_title_tags_and_state(api: FakeCronhook) -> None:
    api.answer("POST", "/v1/triggers", 201, TRIGGER)

    result = invoke(
        api.url,
        "triggers",
        "create",
        "--workflow",
        "echo",
        "--cron",
        "0 8 * * 1",
        "--tz",
        "Europe/Berlin",
        "--title",
        "Weekly report for client 7",
        "--tag",
        "client-7",
        "--tag",
        "weekly",
        "--state",
        '{"cursor": null}',
    )

    assert result.exit_code == 0, result.output
    request = only_request(api)
    assert (request.method, request.path) == ("POST", "/v1/triggers")
    assert request.headers["content-type"] == "application/json"
    assert request.body == {
        "workflow": "echo",
        "title": "Weekly report for client 7",
        "tags": ["client-7", "weekly"],
        "schedule": {"cron": "0 8 * * 1", "timezone": "Europe/Berlin"},
        "state": {"cursor": None},
    }
    assert "trg_01" in result.stdout
    assert "At 08:00 on Monday (Europe/Berlin)" in result.stdout


def test_create_cron_without_tz_sends_utc(api: FakeCronhook) -> None:
    api.answer("POST", "/v1/triggers", 201, TRIGGER)

    result = invoke(api.url, "triggers", "create", "--workflow", "echo", "--cron", "*/5 * * * *")

    assert result.exit_code == 0
    assert only_request(api).body == {
        "workflow": "echo",
        "schedule": {"cron": "*/5 * * * *", "timezone": "UTC"},
    }


@pytest.mark.parametrize(
    ("every", "interval_s"),
    [("1h", 3600), ("15m", 900), ("90s", 90), ("2d", 172800), ("1h30m", 5400)],
)
def test_create_every_sends_the_interval_in_seconds(
    api: FakeCronhook, every: str, interval_s: int
) -> None:
    api.answer("POST", "/v1/triggers", 201, DISABLED_TRIGGER)

    result = invoke(api.url, "triggers", "create", "--workflow", "echo", "--every", every)

    assert result.exit_code == 0, result.output
    assert only_request(api).body == {"workflow": "echo", "schedule": {"interval_s": interval_s}}


def test_create_at_sends_the_instant_in_utc_with_z(api: FakeCronhook) -> None:
    api.answer("POST", "/v1/triggers", 201, TRIGGER)

    result = invoke(
        api.url, "triggers", "create", "--workflow", "echo", "--at", "2030-03-31T02:30:00+02:00"
    )

    assert result.exit_code == 0, result.output
    assert only_request(api).body["schedule"] == {"at": "2030-03-31T00:30:00Z"}


def test_create_webhook_prints_the_url_and_the_one_time_secret_with_a_warning(
    api: FakeCronhook,
) -> None:
    api.answer("POST", "/v1/triggers", 201, WEBHOOK_TRIGGER)

    result = invoke(api.url, "triggers", "create", "--workflow", "echo", "--webhook", "github")

    assert result.exit_code == 0, result.output
    assert only_request(api).body == {"workflow": "echo", "event": {"source": "github"}}
    lines = [line.split() for line in result.stdout.splitlines()]
    assert ["webhook", "url", "http://127.0.0.1:8000/hooks/tok_abc"] in lines
    assert ["webhook", "secret", "whsec_only_once"] in lines
    assert "shown only this once" in result.stderr


def test_create_webhook_json_keeps_stdout_parseable_and_warns_on_stderr(
    api: FakeCronhook,
) -> None:
    api.answer("POST", "/v1/triggers", 201, WEBHOOK_TRIGGER)

    result = invoke(
        api.url, "triggers", "create", "--workflow", "echo", "--webhook", "github", "--json"
    )

    assert result.exit_code == 0
    assert json.loads(result.stdout)["webhook"]["secret"] == "whsec_only_once"
    assert "shown only this once" in result.stderr


def test_create_stripe_webhook_sends_secret_filter_and_max_failures(api: FakeCronhook) -> None:
    api.answer("POST", "/v1/triggers", 201, {**WEBHOOK_TRIGGER, "webhook": None})

    result = invoke(
        api.url,
        "triggers",
        "create",
        "--workflow",
        "echo",
        "--webhook",
        "stripe",
        "--secret",
        "whsec_from_stripe",
        "--filter",
        '{"type": ["invoice.paid"]}',
        "--max-failures",
        "3",
    )

    assert result.exit_code == 0, result.output
    assert only_request(api).body == {
        "workflow": "echo",
        "event": {
            "source": "stripe",
            "secret": "whsec_from_stripe",
            "filter": {"type": ["invoice.paid"]},
        },
        "limits": {"max_failures": 3},
    }
    assert "webhook secret" not in result.stdout
    assert "shown only this once" not in result.stderr


def test_create_prints_the_servers_warnings_on_stderr(api: FakeCronhook) -> None:
    api.answer("POST", "/v1/triggers", 201, {**TRIGGER, "warnings": ["state does not match"]})

    result = invoke(api.url, "triggers", "create", "--workflow", "echo", "--every", "1h", "--json")

    assert result.exit_code == 0
    assert json.loads(result.stdout)["id"] == "trg_01"
    assert "warning: state does not match" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give exactly one of --cron, --every, --at or --webhook"),
        (["--cron", "* * * * *", "--every", "1h"], "(got --cron, --every)"),
        (["--at", "2030-01-01T00:00:00Z", "--webhook", "github"], "(got --at, --webhook)"),
        (["--every", "1x"], "'1x' is not a duration"),
        (["--every", "0m"], "'0m' is not a positive duration"),
        (["--every", "h"], "'h' is not a duration"),
        (["--every", "1h", "--state", "{not json"], "not valid JSON"),
        (["--every", "1h", "--state", "[1, 2]"], "must be a JSON object"),
        (["--every", "1h", "--tz", "Europe/Berlin"], "--tz only applies to --cron"),
        (["--every", "1h", "--secret", "s"], "--secret only applies to --webhook"),
        (["--at", "2030-01-01T08:00:00"], "needs a UTC offset or Z"),
        (["--at", "next tuesday"], "is not an ISO-8601 instant"),
        (["--webhook", "gitlab"], "'gitlab' is not one of"),
        (["--every", "1h", "--max-failures", "0"], "--max-failures"),
        (["--s3", "b", "--email", "a@example.com"], "give one event source, not --s3, --email"),
        (["--every", "1h", "--s3", "b"], "(got --every, --s3)"),
        (["--email", "a@example.com", "--prefix", "in/"], "--prefix and --suffix only apply"),
        (["--file", "--bus", "orders"], "--bus only applies to --eventbridge"),
        (["--eventbridge", "[1]"], "must be a JSON object"),
        (["--every", "1h", "--filter", "{}"], "--filter only applies to event triggers"),
    ],
)
def test_create_usage_errors_exit_2_without_calling_the_api(
    api: FakeCronhook, args: list[str], message: str
) -> None:
    result = invoke(api.url, "triggers", "create", "--workflow", "echo", *args)

    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert api.requests == []
    assert_no_traceback(result)


def test_create_without_workflow_is_a_usage_error(api: FakeCronhook) -> None:
    result = invoke(api.url, "triggers", "create", "--every", "1h")

    assert result.exit_code == 2
    assert "Missing option '--workflow'" in result.stderr
    assert api.requests == []


# --------------------------------------------------------------------------- one trigger


def test_get_prints_the_trigger_in_detail(api: FakeCronhook) -> None:
    api.answer("GET", "/v1/triggers/trg_02", 200, DISABLED_TRIGGER)

    result = invoke(api.url, "triggers", "get", "trg_02")

    assert result.exit_code == 0, result.output
    assert only_request(api).method == "GET"
    for text in ("trg_02", "Every 2 hours", "disabled (failures)", "failed", "boom"):
        assert text in result.stdout


def test_get_json_prints_the_trigger_as_the_api_sent_it(api: FakeCronhook) -> None:
    api.answer("GET", "/v1/triggers/trg_01", 200, TRIGGER)

    result = invoke(api.url, "triggers", "get", "trg_01", "--json")

    assert result.exit_code == 0
    assert json.loads(result.stdout) == TRIGGER


def test_get_of_an_unknown_trigger_exits_1_with_the_404_message(api: FakeCronhook) -> None:
    result = invoke(api.url, "triggers", "get", "trg_missing")

    assert result.exit_code == 1
    assert "404 not_found: trigger not found" in result.stderr
    assert result.stdout == ""


def test_fire_posts_to_fire_and_prints_the_run_id(api: FakeCronhook) -> None:
    api.answer("POST", "/v1/triggers/trg_01/fire", 202, {"run_id": "run_42"})

    result = invoke(api.url, "triggers", "fire", "trg_01")

    assert result.exit_code == 0, result.output
    request = only_request(api)
    assert (request.method, request.path, request.body) == (
        "POST",
        "/v1/triggers/trg_01/fire",
        None,
    )
    assert "Fired trg_01: run run_42" in result.stdout


def test_fire_json_prints_the_run_id_object(api: FakeCronhook) -> None:
    api.answer("POST", "/v1/triggers/trg_01/fire", 202, {"run_id": "run_42"})

    result = invoke(api.url, "triggers", "fire", "trg_01", "--json")

    assert json.loads(result.stdout) == {"run_id": "run_42"}


@pytest.mark.parametrize(
    ("action", "answer", "shown"),
    [
        ("enable", TRIGGER, "active"),
        ("disable", {**TRIGGER, "status": "disabled", "disabled_reason": "manual"}, "manual"),
    ],
)
def test_enable_and_disable_post_to_their_action_and_show_the_trigger(
    api: FakeCronhook, action: str, answer: dict, shown: str
) -> None:
    api.answer("POST", f"/v1/triggers/trg_01/{action}", 200, answer)

    result = invoke(api.url, "triggers", action, "trg_01")

    assert result.exit_code == 0, result.output
    assert only_request(api).path == f"/v1/triggers/trg_01/{action}"
    assert shown in result.stdout


def test_delete_sends_delete_and_exits_0_on_204(api: FakeCronhook) -> None:
    api.answer("DELETE", "/v1/triggers/trg_01", 204)

    result = invoke(api.url, "triggers", "delete", "trg_01")

    assert result.exit_code == 0, result.output
    assert only_request(api).method == "DELETE"
    assert "Deleted trg_01" in result.stdout


def test_delete_json_prints_a_parseable_confirmation(api: FakeCronhook) -> None:
    api.answer("DELETE", "/v1/triggers/trg_01", 204)

    result = invoke(api.url, "triggers", "delete", "trg_01", "--json")

    assert json.loads(result.stdout) == {"id": "trg_01", "deleted": True}


def test_an_id_with_a_slash_is_a_usage_error(api: FakeCronhook) -> None:
    result = invoke(api.url, "triggers", "delete", "trg_01/../keys")

    assert result.exit_code == 2
    assert api.requests == []


# --------------------------------------------------------------------------- runs


def test_runs_of_a_trigger_use_its_runs_route_with_the_filters(api: FakeCronhook) -> None:
    api.answer("GET", "/v1/triggers/trg_01/runs", 200, {"items": [RUN], "next_cursor": None})

    result = invoke(api.url, "runs", "trg_01", "--surface", "schedule", "--status", "failed")

    assert result.exit_code == 0, result.output
    request = only_request(api)
    assert request.path == "/v1/triggers/trg_01/runs"
    assert request.query == {"surface": ["schedule"], "status": ["failed"]}
    line = next(line for line in result.stdout.splitlines() if "run_03" in line)
    for text in ("trg_01", "schedule", "failed", "2029-12-31T07:00:00Z", "250"):
        assert text in line
    assert "Traceback line one" in line and "line two" not in result.stdout


def test_runs_filters_again_when_the_server_ignores_the_filters(api: FakeCronhook) -> None:
    other = {**RUN, "id": "run_manual", "surface": "manual"}
    api.answer("GET", "/v1/triggers/trg_01/runs", 200, {"items": [other, RUN], "next_cursor": None})

    result = invoke(api.url, "runs", "trg_01", "--surface", "schedule", "--json")

    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["items"] == [RUN]


def test_runs_without_a_trigger_id_list_all_runs(api: FakeCronhook) -> None:
    api.answer("GET", "/v1/runs", 200, {"items": [RUN], "next_cursor": None})

    result = invoke(api.url, "runs", "--surface", "manual")

    assert result.exit_code == 0, result.output
    request = only_request(api)
    assert (request.path, request.query) == ("/v1/runs", {"surface": ["manual"]})


def test_runs_stop_at_the_limit_and_json_keeps_the_next_cursor(api: FakeCronhook) -> None:
    page = [{**RUN, "id": f"run_{n}"} for n in range(3)]
    api.answer("GET", "/v1/runs", 200, {"items": page, "next_cursor": "more"})

    result = invoke(api.url, "runs", "--limit", "2", "--json")

    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"items": page[:2], "next_cursor": "more"}
    assert len(api.requests) == 1


def test_runs_rejects_an_unknown_status_with_exit_2(api: FakeCronhook) -> None:
    result = invoke(api.url, "runs", "--status", "exploded")

    assert result.exit_code == 2
    assert api.requests == []


# --------------------------------------------------------------------------- preview


def test_preview_posts_the_expression_and_shows_utc_and_local_times(api: FakeCronhook) -> None:
    # Europe/Berlin springs forward at 2030-03-31T01:00:00Z (02:00 local becomes 03:00), so
    # 02:30 does not exist that day; a server shifting skipped times answers 03:30+02:00.
    fires = ["2030-03-30T01:30:00Z", "2030-03-31T01:30:00Z", "2030-04-01T00:30:00Z"]
    api.answer(
        "POST",
        "/v1/schedules/preview",
        200,
        {"fires": fires, "cadence": "At 02:30 (Europe/Berlin)"},
    )

    result = invoke(
        api.url,
        "preview",
        "30 2 * * *",
        "--tz",
        "Europe/Berlin",
        "--from",
        "2030-03-29T12:00:00Z",
        "--count",
        "3",
    )

    assert result.exit_code == 0, result.output
    request = only_request(api)
    assert (request.method, request.path) == ("POST", "/v1/schedules/preview")
    assert request.body == {
        "cron": "30 2 * * *",
        "timezone": "Europe/Berlin",
        "from": "2030-03-29T12:00:00Z",
        "count": 3,
    }
    assert result.stdout.startswith("At 02:30 (Europe/Berlin)\n")
    assert "2030-03-30T02:30:00+01:00" in result.stdout
    assert "2030-03-31T03:30:00+02:00" in result.stdout
    assert "2030-04-01T02:30:00+02:00" in result.stdout


def test_preview_marks_the_fires_dst_moved_and_lists_the_ones_it_removed(
    api: FakeCronhook,
) -> None:
    fires = ["2027-03-28T01:00:00.000Z", "2027-03-29T00:30:00.000Z"]
    dst = [
        {"at": "2027-03-28T01:00:00.000Z", "change": "shifted", "policy": "shift"},
        {"at": "2027-10-31T01:30:00.000Z", "change": "skipped", "policy": "skip"},
    ]
    api.answer("POST", "/v1/schedules/preview", 200, {"fires": fires, "dst": dst})

    result = invoke(api.url, "preview", "30 2 * * *", "--tz", "Europe/Berlin", "--count", "2")

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    (shifted,) = [line for line in lines if "2027-03-28T01:00:00.000Z" in line]
    assert "shifted (shift)" in shifted
    (plain,) = [line for line in lines if "2027-03-29T00:30:00.000Z" in line]
    assert "shift" not in plain
    assert "DST: skipped at 2027-10-31T01:30:00.000Z (policy skip)" in lines


def test_preview_without_from_sends_an_aware_utc_instant_and_five_fires(
    api: FakeCronhook,
) -> None:
    api.answer("POST", "/v1/schedules/preview", 200, {"fires": ["2030-01-01T00:00:00Z"]})

    result = invoke(api.url, "preview", "0 0 * * *", "--json")

    assert result.exit_code == 0, result.output
    body = only_request(api).body
    assert (body["timezone"], body["count"]) == ("UTC", 5)
    assert parse_instant(body["from"]) == body["from"]
    assert json.loads(result.stdout) == {"fires": ["2030-01-01T00:00:00Z"]}


def test_preview_of_a_bad_expression_exits_1_printing_the_field(api: FakeCronhook) -> None:
    error = {"code": "invalid", "message": "bad cron expression 'nope'", "field": "cron"}
    api.answer("POST", "/v1/schedules/preview", 422, {"error": error})

    result = invoke(api.url, "preview", "nope")

    assert result.exit_code == 1
    assert "bad cron expression 'nope' (field: cron)" in result.stderr


# --------------------------------------------------------------------------- keys


def test_keys_create_sends_role_and_tenant_and_shows_the_key_once(api: FakeCronhook) -> None:
    answer = {"id": "key_7", "key": "ck_secret", "tenant": "acme", "role": "operator"}
    api.answer("POST", "/v1/keys", 201, answer)

    result = invoke(api.url, "keys", "create", "--role", "operator", "--tenant", "acme")

    assert result.exit_code == 0, result.output
    assert only_request(api).body == {"role": "operator", "tenant": "acme"}
    assert "ck_secret" in result.stdout and "key_7" in result.stdout
    assert "shown only this once" in result.stderr


def test_keys_create_json_without_tenant_sends_only_the_role(api: FakeCronhook) -> None:
    answer = {"id": "key_8", "key": "ck_other", "tenant": "local", "role": "viewer"}
    api.answer("POST", "/v1/keys", 201, answer)

    result = invoke(api.url, "keys", "create", "--role", "viewer", "--json")

    assert only_request(api).body == {"role": "viewer"}
    assert json.loads(result.stdout) == answer


def test_keys_create_rejects_an_unknown_role_with_exit_2(api: FakeCronhook) -> None:
    result = invoke(api.url, "keys", "create", "--role", "root")

    assert result.exit_code == 2
    assert api.requests == []


def test_keys_create_by_a_viewer_exits_1_with_the_403_message(api: FakeCronhook) -> None:
    error = {"code": "forbidden", "message": "role admin required"}
    api.answer("POST", "/v1/keys", 403, {"error": error})

    result = invoke(api.url, "keys", "create", "--role", "admin")

    assert result.exit_code == 1
    assert "403 forbidden: role admin required" in result.stderr


# --------------------------------------------------------------------------- failures


def test_a_down_server_exits_1_with_a_friendly_message(closed_port_url: str) -> None:
    result = invoke(closed_port_url, "triggers", "list")

    assert result.exit_code == 1
    assert f"cannot reach cronhook at {closed_port_url}: Connection refused" in result.stderr
    assert "make run" in result.stderr
    assert result.stdout == ""
    assert_no_traceback(result)


def test_a_wrong_api_key_exits_1_with_the_401_message(api: FakeCronhook) -> None:
    result = invoke(api.url, "triggers", "list", api_key="wrong")

    assert result.exit_code == 1
    assert only_request(api).headers["authorization"] == "Bearer wrong"
    assert "401 unauthorized: missing or bad API key" in result.stderr
    assert "check CRONHOOK_API_KEY" in result.stderr
    assert_no_traceback(result)


def test_a_missing_api_key_sends_no_authorization_and_says_how_to_set_one(
    api: FakeCronhook,
) -> None:
    result = invoke(api.url, "triggers", "list", api_key=None)

    assert result.exit_code == 1
    assert "authorization" not in only_request(api).headers
    assert "no API key given: set CRONHOOK_API_KEY" in result.stderr


def test_a_422_exits_1_printing_the_message_and_the_field(api: FakeCronhook) -> None:
    error = {"code": "invalid", "message": "interval below 60 s", "field": "schedule.interval_s"}
    api.answer("POST", "/v1/triggers", 422, {"error": error})

    result = invoke(api.url, "triggers", "create", "--workflow", "echo", "--every", "30s")

    assert result.exit_code == 1
    assert "422 invalid: interval below 60 s (field: schedule.interval_s)" in result.stderr
    assert result.stdout == ""
    assert_no_traceback(result)


def test_an_error_answer_that_is_not_json_exits_1_with_the_status(api: FakeCronhook) -> None:
    api.answer("GET", "/v1/triggers", 502, "<html>Bad Gateway</html>")

    result = invoke(api.url, "triggers", "list")

    assert result.exit_code == 1
    assert "502 Bad Gateway: <html>Bad Gateway</html>" in result.stderr
    assert_no_traceback(result)


def test_a_success_answer_that_is_not_json_exits_1(api: FakeCronhook) -> None:
    api.answer("GET", "/v1/triggers/trg_01", 200, "<html>a login page</html>")

    result = invoke(api.url, "triggers", "get", "trg_01")

    assert result.exit_code == 1
    assert "is not JSON (is this a cronhook URL?)" in result.stderr


def test_a_server_slower_than_the_timeout_exits_1(api: FakeCronhook) -> None:
    def stall(request: Recorded) -> Answer:
        api.release.wait(timeout=10)
        return 200, {"items": [], "next_cursor": None}

    api.route("GET", "/v1/triggers", stall)

    result = invoke(api.url, "--timeout", "0.2", "triggers", "list")

    assert result.exit_code == 1
    assert "did not answer within 0.2 s" in result.stderr
    assert_no_traceback(result)


def test_url_and_api_key_options_override_the_environment(
    api: FakeCronhook, closed_port_url: str
) -> None:
    api.answer("GET", "/v1/triggers", 200, {"items": [], "next_cursor": None})

    result = invoke(
        closed_port_url,
        "--url",
        api.url + "/",
        "--api-key",
        API_KEY,
        "triggers",
        "list",
        api_key="env-key",
    )

    assert result.exit_code == 0, result.output
    request = only_request(api)
    assert (request.path, request.headers["authorization"]) == ("/v1/triggers", "Bearer test-key")


def test_a_url_without_http_scheme_is_a_usage_error() -> None:
    result = invoke("localhost:8000", "triggers", "list")

    assert result.exit_code == 2
    assert "is not an http(s) URL" in result.stderr


def test_the_default_url_is_the_local_stack(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []

    def record(self: Any, method: str, url: str, **kwargs: Any) -> Any:
        seen.append(url)
        raise cli_module.requests.ConnectionError("[Errno 111] Connection refused")

    monkeypatch.setattr(cli_module.requests.Session, "request", record)

    result = CliRunner().invoke(
        cli, ["triggers", "list"], env={"CRONHOOK_URL": None, "CRONHOOK_API_KEY": None}
    )

    assert seen == ["http://127.0.0.1:8000/v1/triggers"]
    assert result.exit_code == 1


# --------------------------------------------------------------------------- main()


def run_main(monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    monkeypatch.setattr(sys, "argv", ["cronhook", *args])
    with pytest.raises(SystemExit) as exited:
        cli_module.main()
    return exited.value.code  # type: ignore[return-value]


def test_main_exits_1_without_a_traceback_when_the_server_is_down(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], closed_port_url: str
) -> None:
    code = run_main(monkeypatch, "--url", closed_port_url, "triggers", "list")

    captured = capsys.readouterr()
    assert code == 1
    assert captured.err.startswith("Error: cannot reach cronhook at")
    assert "Traceback" not in captured.err and captured.out == ""


def test_main_exits_2_on_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_main(monkeypatch, "triggers", "create", "--workflow", "echo", "--every", "soon")

    assert code == 2
    assert "Invalid value for '--every'" in capsys.readouterr().err


def test_main_exits_0_on_success(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], api: FakeCronhook
) -> None:
    api.answer("POST", "/v1/triggers/trg_01/fire", 202, {"run_id": "run_1"})

    code = run_main(
        monkeypatch, "--url", api.url, "--api-key", API_KEY, "triggers", "fire", "trg_01", "--json"
    )

    assert code == 0
    assert json.loads(capsys.readouterr().out) == {"run_id": "run_1"}


def test_main_turns_an_unexpected_exception_into_exit_1_without_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def explode(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(cli_module.Client, "request", explode)

    code = run_main(monkeypatch, "triggers", "get", "trg_01")

    err = capsys.readouterr().err
    assert code == 1
    assert "unexpected failure: RuntimeError: a bug" in err
    assert "Traceback" not in err


# --------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90),
        ("15m", 900),
        ("1h", 3600),
        ("2d", 172800),
        ("1h30m", 5400),
        ("1d12h", 129600),
        (" 2H ", 7200),
    ],
)
def test_parse_every_turns_a_duration_into_seconds(text: str, seconds: int) -> None:
    assert parse_every(text) == seconds


@pytest.mark.parametrize("text", ["", "1", "h", "1x", "1.5h", "-5m", "0s", "0h0m", "1h 30m"])
def test_parse_every_rejects_anything_but_positive_unit_durations(text: str) -> None:
    with pytest.raises(ValueError):
        parse_every(text)


@pytest.mark.parametrize(
    ("text", "instant"),
    [
        ("2030-01-01T08:00:00Z", "2030-01-01T08:00:00Z"),
        ("2030-01-01T08:00:00+00:00", "2030-01-01T08:00:00Z"),
        ("2030-03-31T03:30:00+02:00", "2030-03-31T01:30:00Z"),
        ("2030-10-27T02:30:00+01:00", "2030-10-27T01:30:00Z"),
        ("2030-01-01T08:00:00.250Z", "2030-01-01T08:00:00.250000Z"),
    ],
)
def test_parse_instant_normalises_to_utc_with_z(text: str, instant: str) -> None:
    assert parse_instant(text) == instant


@pytest.mark.parametrize("text", ["2030-01-01T08:00:00", "2030-01-01", "tomorrow", ""])
def test_parse_instant_rejects_naive_or_unparseable_times(text: str) -> None:
    with pytest.raises(ValueError):
        parse_instant(text)


# --------------------------------------------------------------------------- v1.1 commands

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


def test_version_prints_the_package_version() -> None:
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.startswith("cronhook ")
    assert result.stdout.split()[1][0].isdigit() or result.stdout.split()[1] == "unknown"


def test_global_options_are_accepted_after_the_subcommand(
    api: FakeCronhook, closed_port_url: str
) -> None:
    api.answer("GET", "/v1/triggers/trg_01", 200, TRIGGER)
    env = {"CRONHOOK_URL": closed_port_url, "CRONHOOK_API_KEY": "wrong", "COLUMNS": "200"}
    args = ["triggers", "get", "trg_01", "--url", api.url, "--api-key", API_KEY, "-o", "json"]
    result = CliRunner().invoke(cli, args, env=env)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == TRIGGER
    assert only_request(api).headers["authorization"] == f"Bearer {API_KEY}"


@pytest.mark.parametrize("where", ["before", "after"])
def test_output_yaml_prints_the_answer_as_yaml(api: FakeCronhook, where: str) -> None:
    import yaml

    api.answer("GET", "/v1/triggers/trg_01", 200, TRIGGER)
    args = ["triggers", "get", "trg_01"]
    args = ["-o", "yaml", *args] if where == "before" else [*args, "--output", "yaml"]
    result = invoke(api.url, *args)
    assert result.exit_code == 0, result.output
    assert yaml.safe_load(result.stdout) == TRIGGER


def test_output_rejects_an_unknown_format(api: FakeCronhook) -> None:
    result = invoke(api.url, "triggers", "list", "-o", "xml")
    assert result.exit_code == 2
    assert api.requests == []


@pytest.mark.parametrize(
    ("args", "path", "answer", "whole"),
    [
        (
            ["triggers", "list"],
            "/v1/triggers",
            {"items": [LONG_TRIGGER, TRIGGER], "next_cursor": None},
            ["trg_abcdefghijklmnop", "2030-01-07T07:00:00.123Z", "(failures)"],
        ),
        (
            ["runs"],
            "/v1/runs",
            {"items": [LONG_RUN], "next_cursor": None},
            ["trg_abcdefghijklmnop.1893999600000s", "budget_exceeded", "2030-01-07T07:00:00Z"],
        ),
        (
            ["events", "trg_abcdefghijklmnop"],
            "/v1/triggers/trg_abcdefghijklmnop/events",
            {"items": [EVENT], "next_cursor": None},
            ["evt_abcdefghijklmnopqrstuvwx", "2030-01-07T07:00:00.250Z"],
        ),
        (
            ["audit"],
            "/v1/audit",
            {"items": [AUDIT], "next_cursor": None},
            ["2030-01-07T07:00:00.250Z", "key_abcdefghijklmnop", "trg_abcdefghijklmnop"],
        ),
        (
            ["keys", "list"],
            "/v1/keys",
            {"items": [KEY], "next_cursor": None},
            ["key_abcdefghijklmnop", "2030-01-07T07:00:00.250Z"],
        ),
    ],
)
def test_lists_fit_80_columns_and_never_cut_ids_or_instants(
    api: FakeCronhook, args: list[str], path: str, answer: dict, whole: list[str]
) -> None:
    api.answer("GET", path, 200, answer)
    result = invoke_at(api.url, 80, *args)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, result.stdout
    assert "…" not in result.stdout
    for text in whole:
        assert any(text in line for line in lines), (text, result.stdout)


def test_a_long_webhook_url_is_printed_whole_at_80_columns(api: FakeCronhook) -> None:
    url = "https://cronhook.example.com/hooks/trg_abcdefghijklmnop." + "x" * 32
    api.answer(
        "POST",
        "/v1/triggers",
        201,
        {**WEBHOOK_TRIGGER, "webhook_url": url, "webhook": {"url": url, "secret": "whsec_1"}},
    )
    result = invoke_at(
        api.url, 80, "triggers", "create", "--workflow", "echo", "--webhook", "github"
    )
    assert result.exit_code == 0, result.output
    assert "…" not in result.stdout
    # Folded at the edge, never cut: the pieces join back into the URL.
    joined = "".join(
        line.strip().split()[-1]
        for line in result.stdout.splitlines()
        if "x" * 8 in line or "https" in line
    )
    assert url in joined


def test_create_sends_every_listed_flag(api: FakeCronhook) -> None:
    api.answer("POST", "/v1/triggers", 201, TRIGGER)
    result = invoke(
        api.url,
        "triggers",
        "create",
        "--workflow",
        "echo",
        "--cron",
        "30 2 * * *",
        "--tz",
        "Europe/Berlin",
        "--dst-skipped",
        "skip",
        "--dst-repeated",
        "both",
        "--payload",
        '{"client": 7}',
        "--max-runs",
        "10",
        "--expires-at",
        "2031-01-01T00:00:00+01:00",
        "--max-usd",
        "5",
        "--budget-period",
        "week",
        "--overlap",
        "buffer_one",
        "--concurrency",
        "2",
        "--serialize-key",
        "client-7",
        "--secret-scope",
        "client-7",
        "--disabled",
    )
    assert result.exit_code == 0, result.output
    assert only_request(api).body == {
        "workflow": "echo",
        "schedule": {
            "cron": "30 2 * * *",
            "timezone": "Europe/Berlin",
            "dst": {"skipped": "skip", "repeated": "both"},
        },
        "payload": {"client": 7},
        "limits": {
            "max_runs": 10,
            "expires_at": "2030-12-31T23:00:00Z",
            "max_usd": 5.0,
            "budget_period": "week",
        },
        "overlap": "buffer_one",
        "concurrency": 2,
        "serialize_key": "client-7",
        "secret_scope": "client-7",
        "enabled": False,
    }


def test_an_http_targets_outbound_secret_is_printed_with_its_warning(api: FakeCronhook) -> None:
    api.answer(
        "POST",
        "/v1/triggers",
        201,
        {**TRIGGER, "workflow": "http:https://x.example", "outbound_secret": "whsec_out_1"},
    )
    for extra in ([], ["-o", "json"]):
        result = invoke(
            api.url,
            "triggers",
            "create",
            "--workflow",
            "http:https://x.example",
            "--every",
            "1h",
            *extra,
        )
        assert result.exit_code == 0, result.output
        assert "whsec_out_1" in result.stdout
        assert "outbound signing secret" in result.stderr and "only" in result.stderr


def test_update_sends_only_what_was_given_as_a_patch(api: FakeCronhook) -> None:
    api.answer("PATCH", "/v1/triggers/trg_01", 200, TRIGGER)
    result = invoke(
        api.url,
        "triggers",
        "update",
        "trg_01",
        "--every",
        "2h",
        "--state",
        '{"cursor": 3}',
        "--max-usd",
        "2.5",
        "--tag",
        "a",
        "--tag",
        "b",
        "--title",
        "New title",
        "--if-version",
        "4",
    )
    assert result.exit_code == 0, result.output
    request = only_request(api)
    assert request.method == "PATCH"
    assert request.body == {
        "schedule": {"interval_s": 7200},
        "title": "New title",
        "state": {"cursor": 3},
        "tags": ["a", "b"],
        "limits": {"max_usd": 2.5},
        "version": 4,
    }


def test_update_without_a_change_is_a_usage_error(api: FakeCronhook) -> None:
    result = invoke(api.url, "triggers", "update", "trg_01")
    assert result.exit_code == 2
    assert "nothing to change" in result.stderr
    assert api.requests == []


def test_fire_with_a_payload_sends_it(api: FakeCronhook) -> None:
    api.answer("POST", "/v1/triggers/trg_01/fire", 202, {"run_id": "run_42"})
    result = invoke(api.url, "triggers", "fire", "trg_01", "--payload", '[1, "two"]')
    assert result.exit_code == 0, result.output
    assert only_request(api).body == {"payload": [1, "two"]}


def test_pause_by_tag_with_a_note_uses_the_bulk_route(api: FakeCronhook) -> None:
    api.answer("POST", "/v1/triggers/disable", 200, {"changed": 2, "ids": ["trg_a", "trg_b"]})
    result = invoke(api.url, "pause", "--tag", "client-7", "--note", "until January")
    assert result.exit_code == 0, result.output
    assert only_request(api).body == {"tag": "client-7", "note": "until January"}
    assert "Paused 2 trigger(s)" in result.stdout
    assert "trg_a" in result.stdout and "trg_b" in result.stdout


def test_pause_by_ids_disables_each_with_the_note(api: FakeCronhook) -> None:
    for trigger_id in ("trg_a", "trg_b"):
        api.answer(
            "POST",
            f"/v1/triggers/{trigger_id}/disable",
            200,
            {**TRIGGER, "id": trigger_id, "status": "disabled"},
        )
    result = invoke(api.url, "pause", "trg_a", "trg_b", "--note", "hold", "-o", "json")
    assert result.exit_code == 0, result.output
    assert [(r.path, r.body) for r in api.requests] == [
        ("/v1/triggers/trg_a/disable", {"note": "hold"}),
        ("/v1/triggers/trg_b/disable", {"note": "hold"}),
    ]
    assert json.loads(result.stdout) == {"changed": 2, "ids": ["trg_a", "trg_b"]}


def test_resume_by_workflow_reports_what_it_could_not_resume(api: FakeCronhook) -> None:
    api.answer(
        "POST",
        "/v1/triggers/enable",
        200,
        {"changed": 1, "ids": ["trg_a"], "skipped": [{"id": "trg_b", "reason": "no future fire"}]},
    )
    result = invoke(api.url, "resume", "--workflow", "echo")
    assert result.exit_code == 0, result.output
    assert only_request(api).body == {"workflow": "echo"}
    assert "trg_b not resumed: no future fire" in result.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["pause"], "give trigger ids, or --tag"),
        (["pause", "trg_a", "--tag", "t"], "not both"),
        (["resume", "--note", "x"], "give trigger ids, or --tag"),
    ],
)
def test_pause_and_resume_usage_errors(api: FakeCronhook, args: list[str], says: str) -> None:
    result = invoke(api.url, *args)
    assert result.exit_code == 2
    assert says in result.stderr
    assert api.requests == []


def test_page_disable_shows_the_note_who_and_when(api: FakeCronhook) -> None:
    paused = {
        **TRIGGER,
        "status": "disabled",
        "disabled_reason": "manual",
        "disabled_note": "client asked",
        "disabled_by": "key_abcdefghijklmnop",
        "disabled_at": "2030-01-01T09:00:00.000Z",
    }
    api.answer("POST", "/v1/triggers/trg_01/disable", 200, paused)
    result = invoke(api.url, "triggers", "disable", "trg_01", "--note", "client asked")
    assert result.exit_code == 0, result.output
    assert only_request(api).body == {"note": "client asked"}
    assert "client asked" in result.stdout
    assert "key_abcdefghijklmnop 2030-01-01T09:00:00Z" in result.stdout


def test_backfill_dry_run_and_run(api: FakeCronhook) -> None:
    plan = {
        "slots": 6,
        "first": "2030-01-01T00:00:00.000Z",
        "last": "2030-01-01T05:00:00.000Z",
        "estimated_usd": 1.5,
        "estimate_from_runs": 2,
        "already_ran": 0,
    }
    started = {"slots": 2, "run_ids": ["trg_01.1893456000000s", "trg_01.1893459600000s"]}

    def answer(request: Recorded) -> Answer:
        return (200, plan) if request.body.get("dry_run") else (202, started)

    api.route("POST", "/v1/triggers/trg_01/backfill", answer)
    dry = invoke(
        api.url,
        "backfill",
        "trg_01",
        "--from",
        "2030-01-01T00:00:00Z",
        "--to",
        "2030-01-01T05:00:00Z",
        "--dry-run",
    )
    assert dry.exit_code == 0, dry.output
    assert api.requests[0].body == {
        "from": "2030-01-01T00:00:00Z",
        "to": "2030-01-01T05:00:00Z",
        "dry_run": True,
    }
    assert "2030-01-01T00:00:00Z" in dry.stdout and "1.5" in dry.stdout
    real = invoke(
        api.url,
        "backfill",
        "trg_01",
        "--from",
        "2030-01-01T00:00:00Z",
        "--to",
        "2030-01-01T01:00:00Z",
    )
    assert real.exit_code == 0, real.output
    assert "dry_run" not in api.requests[1].body
    assert "trg_01.1893459600000s" in real.stdout


def test_runs_get_shows_one_run(api: FakeCronhook) -> None:
    api.answer("GET", "/v1/runs/run_03", 200, RUN)
    result = invoke(api.url, "runs", "get", "run_03")
    assert result.exit_code == 0, result.output
    assert only_request(api).path == "/v1/runs/run_03"
    assert "Traceback line one" in result.stdout and "2029-12-31T07:00:01Z" in result.stdout


def test_replay_rotate_secret_workflows_and_keys_delete(api: FakeCronhook) -> None:
    api.answer("POST", "/v1/events/evt_1/replay", 202, {"run_id": "run_7"})
    api.answer(
        "POST",
        "/v1/triggers/trg_hook/rotate-secret",
        200,
        {"secret": "whsec_new", "previous_valid_until": "2030-01-02T00:00:00.000Z"},
    )
    api.answer(
        "GET",
        "/v1/workflows",
        200,
        {
            "items": [{"name": "echo", "description": "Echoes", "state_schema": None}],
            "next_cursor": None,
        },
    )
    api.answer("DELETE", "/v1/keys/key_1", 204)

    replayed = invoke(api.url, "replay", "evt_1")
    assert "Replayed evt_1: run run_7" in replayed.stdout
    rotated = invoke(api.url, "rotate-secret", "trg_hook", "--grace", "60")
    assert api.requests[1].body == {"grace_s": 60}
    assert "whsec_new" in rotated.stdout and "shown only this once" in rotated.stderr
    flows = invoke(api.url, "workflows")
    assert "echo" in flows.stdout and "Echoes" in flows.stdout
    deleted = invoke(api.url, "keys", "delete", "key_1")
    assert deleted.exit_code == 0 and "Deleted key_1" in deleted.stdout
    assert [r.method for r in api.requests] == ["POST", "POST", "GET", "DELETE"]


def test_audit_sends_its_filters(api: FakeCronhook) -> None:
    api.answer("GET", "/v1/audit", 200, {"items": [AUDIT], "next_cursor": None})
    result = invoke(api.url, "audit", "--trigger", "trg_01", "--action", "disable")
    assert result.exit_code == 0, result.output
    assert only_request(api).query == {"trigger_id": ["trg_01"], "action": ["disable"]}


def test_docs_cli_md_carries_the_current_reference() -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
    start = text.index(cli_module.REFERENCE_BEGIN)
    end = text.index(cli_module.REFERENCE_END) + len(cli_module.REFERENCE_END) + 1
    assert text[start:end] == cli_module.render_reference(), (
        "docs/cli.md's reference is out of date: run .venv/bin/python -c "
        "'from chalicelib.cli import write_reference; write_reference()'"
    )


def test_shell_completion_completes_commands() -> None:
    # What docs/cli.md tells people to put in their shell's start-up file.
    env = {"_CRONHOOK_COMPLETE": "bash_complete", "COMP_WORDS": "cronhook tri", "COMP_CWORD": "1"}
    result = CliRunner().invoke(cli, [], env=env, prog_name="cronhook", standalone_mode=True)
    assert result.stdout.split() == ["plain,triggers"]


@pytest.mark.parametrize(
    ("args", "event"),
    [
        (
            ["--eventbridge", '{"source": ["shop"]}', "--bus", "orders"],
            {"source": "eventbridge", "pattern": {"source": ["shop"]}, "bus": "orders"},
        ),
        (
            ["--s3", "inbox", "--prefix", "in/", "--suffix", ".csv"],
            {"source": "s3", "bucket": "inbox", "prefix": "in/", "suffix": ".csv"},
        ),
        (
            ["--email", "reports@example.com", "--filter", '{"from": "a@example.com"}'],
            {
                "source": "email",
                "address": "reports@example.com",
                "filter": {"from": "a@example.com"},
            },
        ),
        (["--file"], {"source": "file"}),
        (
            ["--webhook", "linkedin", "--secret", "li-secret-1"],
            {"source": "linkedin", "secret": "li-secret-1"},
        ),
    ],
)
def test_create_sends_the_event_of_each_source_flag(
    api: FakeCronhook, args: list[str], event: dict
) -> None:
    api.answer("POST", "/v1/triggers", 201, TRIGGER)
    result = invoke(api.url, "triggers", "create", "--workflow", "echo", "--json", *args)

    assert result.exit_code == 0, result.output
    body = api.requests[-1].body
    assert {k: v for k, v in body["event"].items() if v is not None} == event
