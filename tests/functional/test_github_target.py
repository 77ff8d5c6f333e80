"""github: targets against a local fake of GitHub's REST API (never the network).

The fake speaks the two calls the target makes: ``POST .../actions/workflows/{file}/dispatches``
(204, GitHub's answer, with no run id) and ``GET .../actions/workflows/{file}/runs`` (the
``workflow_runs`` list, filtered by ``event`` and ``created``). Each test sets how it
behaves: list the run, never list it, refuse (4xx), fail (5xx).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from chalicelib import assembly
from chalicelib.domain.errors import ValidationError
from chalicelib.services import secrets, triggers
from chalicelib.settings import reset_settings
from chalicelib.store.aws import client
from tests.scenarios import fire_next

TOKEN = "ghp_fake_token_0123456789"
WORKFLOW = "github:acme/widgets/nightly.yml@main"


class FakeGitHub:
    """GitHub's dispatch and list-runs endpoints, in memory, on a loopback port."""

    def __init__(self) -> None:
        self.mode = "list"  # list | never | refuse | fail | fail-once
        self.dispatches: list[dict] = []
        self.runs: list[dict] = []
        self.lists = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _send(self, status: int, doc: object | None) -> None:
                body = b"" if doc is None else json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status, doc = outer.dispatch(self.path, dict(self.headers), body)
                self._send(status, doc)

            def do_GET(self) -> None:  # noqa: N802
                status, doc = outer.list_runs(self.path, dict(self.headers))
                self._send(status, doc)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _authorized(self, headers: dict) -> bool:
        return headers.get("Authorization") == f"Bearer {TOKEN}"

    def dispatch(self, path: str, headers: dict, body: dict) -> tuple[int, object]:
        assert path == "/repos/acme/widgets/actions/workflows/nightly.yml/dispatches", path
        if not self._authorized(headers):
            return 401, {"message": "Bad credentials", "documentation_url": "https://docs"}
        self.dispatches.append(body)
        if self.mode == "refuse":
            return 422, {"message": 'Unexpected inputs provided: ["n"]'}
        if self.mode == "fail" or (self.mode == "fail-once" and len(self.dispatches) == 1):
            return 502, {"message": "Server Error"}
        if self.mode != "never":
            now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            number = len(self.runs) + 1
            self.runs.append(
                {
                    "id": 9000 + number,
                    "event": "workflow_dispatch",
                    "head_branch": body["ref"],
                    "created_at": now,
                    "html_url": f"https://github.com/acme/widgets/actions/runs/{9000 + number}",
                }
            )
        return 204, None

    def list_runs(self, path: str, headers: dict) -> tuple[int, object]:
        parts = urlsplit(path)
        assert parts.path == "/repos/acme/widgets/actions/workflows/nightly.yml/runs", path
        if not self._authorized(headers):
            return 401, {"message": "Bad credentials"}
        self.lists += 1
        query = parse_qs(parts.query)
        since = query["created"][0].removeprefix(">=")
        runs = [
            r for r in self.runs if r["event"] == query["event"][0] and r["created_at"] >= since
        ]
        return 200, {"total_count": len(runs), "workflow_runs": runs[::-1]}


@pytest.fixture
def github(aws, monkeypatch) -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    fake.thread.start()
    monkeypatch.setenv("CRONHOOK_GITHUB_API_URL", fake.url)
    monkeypatch.setenv("CRONHOOK_GITHUB_CONFIRM_S", "1")
    monkeypatch.setenv("CRONHOOK_GITHUB_POLL_S", "0.05")
    reset_settings()
    client("ssm").put_parameter(
        Name="/cronhook/test/local/GITHUB_TOKEN", Value=TOKEN, Type="SecureString"
    )
    secrets.clear_cache()
    yield fake
    fake.server.shutdown()
    fake.server.server_close()
    secrets.clear_cache()
    reset_settings()


def _fire_once(aws, clock, root, workflow: str = WORKFLOW, **body) -> dict:
    created = triggers.create_trigger(
        root, {"workflow": workflow, "schedule": {"interval_s": 60}, **body}, now=clock()
    )
    fire_next(aws, clock, assembly.build_runner(clock=clock))
    return triggers.list_trigger_runs(root, created["id"], {})["items"][0]


def test_a_dispatch_github_lists_succeeds_naming_the_run(aws, clock, root, github):
    run = _fire_once(aws, clock, root, payload={"env": "prod", "dry_run": False})
    assert run["status"] == "succeeded", run
    assert run["output"] == {
        "run_id": 9001,
        "html_url": "https://github.com/acme/widgets/actions/runs/9001",
    }
    assert github.dispatches == [{"ref": "main", "inputs": {"env": "prod", "dry_run": "false"}}]


def test_a_dispatch_github_accepts_but_never_lists_fails_after_the_window(aws, clock, root, github):
    github.mode = "never"
    run = _fire_once(aws, clock, root)
    assert run["status"] == "failed"
    assert "accepted the dispatch but listed no run for it within 1 s" in run["error"]
    assert len(github.dispatches) == 1  # never dispatched again
    assert github.lists >= 2  # looked more than once within the window


def test_a_4xx_fails_the_run_with_githubs_message_and_is_not_retried(aws, clock, root, github):
    github.mode = "refuse"
    run = _fire_once(aws, clock, root, payload={"n": 1})
    assert run["status"] == "failed"
    assert 'GitHub refused the dispatch (422): Unexpected inputs provided: ["n"]' in run["error"]
    assert len(github.dispatches) == 1


def test_a_5xx_is_retried(aws, clock, root, github):
    github.mode = "fail-once"
    run = _fire_once(aws, clock, root)
    assert run["status"] == "succeeded", run
    assert len(github.dispatches) == 2


def test_a_5xx_every_time_fails_after_the_attempts(aws, clock, root, github):
    github.mode = "fail"
    run = _fire_once(aws, clock, root)
    assert run["status"] == "failed"
    assert "failed the dispatch 3 times (last 502: Server Error)" in run["error"]
    assert len(github.dispatches) == 3


def test_a_bad_token_is_githubs_401_and_the_token_never_shows(aws, clock, root, github):
    client("ssm").put_parameter(
        Name="/cronhook/test/local/GITHUB_TOKEN",
        Value="ghp_wrong_token_99",
        Type="SecureString",
        Overwrite=True,
    )
    secrets.clear_cache()
    run = _fire_once(aws, clock, root)
    assert run["status"] == "failed"
    assert "(401): Bad credentials" in run["error"]
    assert "ghp_wrong_token_99" not in json.dumps(run)


def test_no_token_fails_the_run_saying_which_secret(aws, clock, root, github):
    client("ssm").delete_parameter(Name="/cronhook/test/local/GITHUB_TOKEN")
    secrets.clear_cache()
    run = _fire_once(aws, clock, root)
    assert run["status"] == "failed"
    assert "no GITHUB_TOKEN secret" in run["error"]
    assert github.dispatches == []


@pytest.mark.parametrize(
    "workflow",
    [
        "github:acme/widgets",
        "github:acme/widgets/nightly.yml",
        "github:acme/widgets/nightly.txt@main",
        "github:acme/widgets/nightly.yml@ma in",
        "github:acme/../nightly.yml@main",
        "github:-acme/widgets/nightly.yml@main",
    ],
)
def test_a_malformed_github_target_is_a_422_on_workflow(aws, clock, root, workflow):
    with pytest.raises(ValidationError) as caught:
        triggers.create_trigger(
            root, {"workflow": workflow, "schedule": {"interval_s": 60}}, now=clock()
        )
    assert caught.value.field == "workflow"
