"""The cookbook's examples, run through the local stack as a team would run them."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import ROOT, Stack, _free_port, start_stack, stop_stack

COOKBOOK = ROOT / "docs" / "cookbook"
EXAMPLES = ("weekly_report", "rss_repurposer", "client_approval", "freshness")
MODULES = ",".join(str(COOKBOOK / name / "workflow.py") for name in EXAMPLES)


@pytest.fixture(scope="session")
def aws_port() -> int:
    return _free_port()


@pytest.fixture(scope="session")
def cookbook_stack(tmp_path_factory: pytest.TempPathFactory, aws_port: int) -> Iterator[Stack]:
    """One local stack with the four example modules loaded (CRONHOOK_WORKFLOW_MODULES)."""
    running = start_stack(
        tmp_path_factory.mktemp("cookbook"),
        env={"CRONHOOK_WORKFLOW_MODULES": MODULES, "CRONHOOK_AWS_PORT": str(aws_port)},
    )
    yield running
    stop_stack(running)


class Receiver:
    """A third party the examples talk to: serves a feed, records every POST it accepts.

    ``fail_once`` names POST bodies (by ``title``) answered 500 the first time they come.
    ``hold_s`` keeps each POST open that long, counting how many are in flight per client.
    """

    def __init__(self, *, feed: str = "", fail_once: set[str] | None = None, hold_s: float = 0):
        self.feed = feed
        self.fail_once = set(fail_once or ())
        self.hold_s = hold_s
        self.posts: list[dict] = []
        self.refused: list[dict] = []
        self.in_flight: dict[str, int] = {}
        self.max_in_flight: dict[str, int] = {}
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                data = receiver.feed.encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/rss+xml")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                post = {
                    "path": self.path,
                    "key": self.headers.get("Idempotency-Key"),
                    "auth": self.headers.get("Authorization"),
                    "body": body,
                }
                who = str((body or {}).get("client") or "")
                with receiver.lock:
                    title = (body or {}).get("title")
                    if title in receiver.fail_once:
                        receiver.fail_once.discard(title)
                        receiver.refused.append(post)
                        self.send_response(500)
                        self.end_headers()
                        return
                    receiver.in_flight[who] = receiver.in_flight.get(who, 0) + 1
                    receiver.max_in_flight[who] = max(
                        receiver.max_in_flight.get(who, 0), receiver.in_flight[who]
                    )
                time.sleep(receiver.hold_s)
                with receiver.lock:
                    receiver.in_flight[who] -= 1
                    receiver.posts.append(post)
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver_factory() -> Iterator[Any]:
    made: list[Receiver] = []

    def make(**kw: Any) -> Receiver:
        made.append(Receiver(**kw))
        return made[-1]

    yield make
    for receiver in made:
        receiver.close()


def create(stack: Stack, body: dict) -> dict:
    answer = stack.call("POST", "/v1/triggers", body)
    assert answer.status_code == 201, answer.text
    return answer.json()


def fire(stack: Stack, trigger_id: str) -> str:
    answer = stack.call("POST", f"/v1/triggers/{trigger_id}/fire")
    assert answer.status_code == 202, answer.text
    return answer.json()["run_id"]


def settled(stack: Stack, run_id: str, *, timeout_s: float = 90) -> dict:
    """The run once it has finished (any final status)."""

    def done() -> dict | None:
        answer = stack.call("GET", f"/v1/runs/{run_id}")
        if answer.status_code != 200:
            return None
        run = answer.json()
        return run if run["status"] not in ("queued", "running") else None

    return stack.wait_for(done, timeout_s=timeout_s)


def load_example(name: str) -> Any:
    """An example's module, imported from its file (as CRONHOOK_WORKFLOW_MODULES does)."""
    import importlib.util
    import sys

    path: Path = COOKBOOK / name / "workflow.py"
    module_name = f"cookbook_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module
