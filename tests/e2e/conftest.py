"""The local stack started the way a user starts it (``python -m devstack.stack``
is what ``make run`` runs), in a subprocess, talked to over real HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
E2E_KEY = "chr_e2e_root_key"
# How long a start may take before /healthz answers (a bound, not a measurement).
START_TIMEOUT_S = 240


# A port no other xdist worker is handed (``make test`` runs the suite on two workers).
_free_port = free_port


@dataclass
class Stack:
    """A running local stack: its URL, root key, process and data dir."""

    url: str
    api_key: str
    process: subprocess.Popen
    data_dir: Path
    log_path: Path
    aws_url: str = ""
    smtp_port: int = 0

    def headers(self, key: str | None = None) -> dict:
        return {
            "Authorization": f"Bearer {key or self.api_key}",
            "Content-Type": "application/json",
        }

    def call(
        self, method: str, path: str, body: Any = None, *, key: str | None = None, **kw: Any
    ) -> requests.Response:
        data = None if body is None else json.dumps(body)
        return requests.request(
            method, self.url + path, data=data, headers=self.headers(key), timeout=30, **kw
        )

    def wait_for(self, predicate: Any, *, timeout_s: float = 60, every_s: float = 0.25) -> Any:
        """Poll ``predicate`` until it returns something truthy (bounded)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(every_s)
        raise AssertionError(
            f"condition not met within {timeout_s}s; stack log tail:\n{self.log_tail()}"
        )

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text().splitlines()[-lines:])
        except OSError:
            return ""


def start_stack(
    tmp: Path,
    *,
    heartbeat_s: int = 2,
    min_interval_s: int = 1,
    max_concurrency: int = 5,
    env: dict | None = None,
) -> Stack:
    """Start ``python -m devstack.stack`` and wait for ``/healthz``."""
    port = _free_port()
    aws_port = _free_port()
    data_dir = tmp / "data"
    log_path = tmp / "stack.log"
    environment = {
        **os.environ,
        "CRONHOOK_PORT": str(port),
        "CRONHOOK_AWS_PORT": str(aws_port),
        "CRONHOOK_SMTP_PORT": str(_free_port()),
        "CRONHOOK_API_KEY": E2E_KEY,
        "CRONHOOK_HEARTBEAT_S": str(heartbeat_s),
        "CRONHOOK_MIN_INTERVAL_S": str(min_interval_s),
        "CRONHOOK_MAX_CONCURRENCY": str(max_concurrency),
        "CRONHOOK_DATA_DIR": str(data_dir),
        "PYTHONUNBUFFERED": "1",
        **(env or {}),
    }
    log = open(log_path, "w")  # noqa: SIM115 (kept open for the process's life)
    process = subprocess.Popen(
        [sys.executable, "-m", "devstack.stack"],
        cwd=ROOT,
        env=environment,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    stack = Stack(
        url=f"http://127.0.0.1:{port}",
        api_key=E2E_KEY,
        process=process,
        data_dir=data_dir,
        log_path=log_path,
        aws_url=f"http://127.0.0.1:{environment['CRONHOOK_AWS_PORT']}",
        smtp_port=int(environment["CRONHOOK_SMTP_PORT"]),
    )

    def healthy() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"local stack exited early:\n{stack.log_tail()}")
        try:
            return requests.get(stack.url + "/healthz", timeout=2).status_code == 200
        except requests.RequestException:
            return False

    try:
        # Generous: on a loaded 2-core box (two test workers, other jobs) a start has
        # taken over a minute. A stack that never answers is stopped, not left behind.
        stack.wait_for(healthy, timeout_s=START_TIMEOUT_S)
    except BaseException:
        stop_stack(stack)
        raise
    return stack


def stop_stack(stack: Stack) -> None:
    """Ctrl-C, as a user stops it; kill if it does not stop in time."""
    import signal

    if stack.process.poll() is None:
        stack.process.send_signal(signal.SIGINT)
        try:
            stack.process.wait(timeout=90)
        except subprocess.TimeoutExpired:
            stack.process.kill()
            stack.process.wait(timeout=10)


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """One local stack shared by the e2e tests of a session (heartbeat 2 s, min interval 1 s)."""
    running = start_stack(tmp_path_factory.mktemp("stack"))
    yield running
    stop_stack(running)


# -- the cronhook command, as a user runs it -------------------------------------------


@dataclass
class Ran:
    code: int
    out: str
    err: str

    def json(self):
        return json.loads(self.out)


def _command() -> list[str]:
    script = Path(sys.executable).parent / "cronhook"
    return [str(script)] if script.exists() else [sys.executable, "-m", "cronhook_cli"]


@pytest.fixture
def cronhook(stack):
    def run(*args: str, key: str | None = None, url: str | None = None) -> Ran:
        env = {
            **os.environ,
            "CRONHOOK_URL": url or stack.url,
            "CRONHOOK_API_KEY": key if key is not None else stack.api_key,
            "NO_COLOR": "1",
            "COLUMNS": "200",
        }
        done = subprocess.run(
            [*_command(), *args], capture_output=True, text=True, env=env, timeout=60
        )
        assert "Traceback" not in done.stderr, done.stderr
        return Ran(done.returncode, done.stdout, done.stderr)

    return run
