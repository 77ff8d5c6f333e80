"""Issue 30 against the local stack: runs in flight, two fires in a row, a run's log lines,
the webhook URL copied from the CLI at 80 columns and through a pipe, port clashes."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import socket
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
import requests

from tests.e2e.conftest import ROOT, _free_port
from tests.signing import signed_headers

pytestmark = pytest.mark.e2e


def _settled(stack, run_id: str) -> dict:
    def done():
        answer = stack.call("GET", f"/v1/runs/{run_id}")
        if answer.status_code != 200:  # an event's run is known once its event starts
            return None
        run = answer.json()
        # Final, and from its record: between the settle and the record (the runner's next
        # write, late on a loaded machine) the run is shown from last_run, without its
        # start, duration or output.
        final = run["status"] not in ("queued", "running")
        return run if final and run["duration_ms"] is not None else None

    return stack.wait_for(done, timeout_s=90)


def test_a_running_run_shows_when_it_started(stack):
    created = stack.call(
        "POST", "/v1/triggers", {"workflow": "sleep", "schedule": {"cron": "0 0 1 1 *"}}
    ).json()
    fired = stack.call(
        "POST", f"/v1/triggers/{created['id']}/fire", {"payload": {"seconds": 4}}
    ).json()

    def running():
        run = stack.call("GET", f"/v1/runs/{fired['run_id']}").json()
        return run if run["status"] == "running" else None

    run = stack.wait_for(running, timeout_s=60)
    assert run["started_at"] and run["started_at"].endswith("Z")
    done = _settled(stack, fired["run_id"])
    assert done["duration_ms"] >= 3000


def test_two_fires_in_a_row_both_run_the_second_after_the_first(stack):
    created = stack.call(
        "POST", "/v1/triggers", {"workflow": "sleep", "schedule": {"cron": "0 0 1 1 *"}}
    ).json()
    path = f"/v1/triggers/{created['id']}/fire"
    first = stack.call("POST", path, {"payload": {"seconds": 1}})
    second = stack.call("POST", path, {"payload": {"seconds": 0}})
    assert (first.status_code, second.status_code) == (202, 202), second.text
    assert second.json()["queued"] is True
    assert _settled(stack, first.json()["run_id"])["status"] == "succeeded"
    assert _settled(stack, second.json()["run_id"])["status"] == "succeeded"


def test_a_run_has_its_log_lines_and_its_traceback(stack):
    created = stack.call(
        "POST", "/v1/triggers", {"workflow": "fail", "schedule": {"cron": "0 0 1 1 *"}}
    ).json()
    run_id = stack.call("POST", f"/v1/triggers/{created['id']}/fire").json()["run_id"]
    run = _settled(stack, run_id)
    assert run["status"] == "failed"
    assert "Traceback" in run["error_detail"]["traceback"]

    def lines():
        found = stack.call("GET", f"/v1/runs/{run_id}/logs").json()["items"]
        return found or None

    found = stack.wait_for(lines, timeout_s=30)
    assert all(line["at"].endswith("Z") for line in found)
    assert any("fire handled" in line["message"] for line in found), found


# -- the webhook URL, copied from what the CLI printed ---------------------------------------


def _cli_env(stack) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env.update({"CRONHOOK_URL": stack.url, "CRONHOOK_API_KEY": stack.api_key, "NO_COLOR": "1"})
    return env


def _command() -> list[str]:
    script = Path(sys.executable).parent / "cronhook"
    return [str(script)] if script.exists() else [sys.executable, "-m", "cronhook_cli"]


CREATE = ["triggers", "create", "--workflow", "echo", "--webhook", "webhook"]


def _through_a_pipe(stack) -> str:
    done = subprocess.run(
        [*_command(), *CREATE], capture_output=True, text=True, env=_cli_env(stack), timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _on_an_80_column_terminal(stack) -> str:
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    process = subprocess.Popen(
        [*_command(), *CREATE],
        stdin=follower,
        stdout=follower,
        stderr=subprocess.DEVNULL,
        env=_cli_env(stack),
        close_fds=True,
    )
    os.close(follower)
    chunks = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.5)
        if ready:
            try:
                data = os.read(leader, 4096)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        elif process.poll() is not None:
            break
    process.wait(timeout=30)
    os.close(leader)
    assert process.returncode == 0
    text = b"".join(chunks).decode()
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text).replace("\r", "")


@pytest.mark.parametrize("where", [_through_a_pipe, _on_an_80_column_terminal])
def test_the_webhook_url_and_secret_copied_from_the_cli_work(stack, where):
    printed = where(stack)
    # The value on its own line, or beside its name: either way whole, on one line.
    urls = set(re.findall(r"^(?:webhook url[ \t]+)?(http://\S+/hooks/\S+)[ \t]*$", printed, re.M))
    secrets = set(re.findall(r"^(?:webhook secret[ \t]+)?(whsec_\S+)[ \t]*$", printed, re.M))
    assert len(urls) == 1 and len(secrets) == 1, printed
    urls, secrets = list(urls), list(secrets)
    body = b'{"hello": "world"}'
    headers = signed_headers("webhook", secrets[0], body, ts=int(time.time()))
    answer = requests.post(urls[0], data=body, headers=headers, timeout=30)
    assert answer.status_code == 202, (answer.text, printed)
    run = _settled(stack, answer.json()["run_id"])
    assert run["status"] == "succeeded"


# -- a port in use ----------------------------------------------------------------------------


@pytest.mark.parametrize("variable", ["CRONHOOK_PORT", "CRONHOOK_AWS_PORT"])
def test_a_port_in_use_ends_the_start_in_one_line_naming_its_variable(tmp_path, variable):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        env = {
            **os.environ,
            "CRONHOOK_PORT": str(_free_port()),
            "CRONHOOK_AWS_PORT": str(_free_port()),
            "CRONHOOK_SMTP_PORT": str(_free_port()),
            "CRONHOOK_DATA_DIR": str(tmp_path / "data"),
            variable: str(taken.getsockname()[1]),
        }
        done = subprocess.run(
            [sys.executable, "-m", "devstack.stack"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr, done.stderr
    said = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(said) == 1, done.stderr
    assert variable in said[0] and "in use" in said[0].lower()


def test_a_run_cut_short_by_ctrl_c_is_recorded_as_stopped_not_crashed(tmp_path):
    from devstack.restore import STOPPED_ERROR
    from tests.e2e.conftest import start_stack, stop_stack

    first = start_stack(tmp_path)
    try:
        created = first.call(
            "POST", "/v1/triggers", {"workflow": "sleep", "schedule": {"cron": "0 0 1 1 *"}}
        ).json()
        fired = first.call(
            "POST", f"/v1/triggers/{created['id']}/fire", {"payload": {"seconds": 120}}
        ).json()
        first.wait_for(
            lambda: first.call("GET", f"/v1/runs/{fired['run_id']}").json()["status"] == "running"
        )
    finally:
        stop_stack(first)  # Ctrl-C: the run in hand outlives the stop's grace
    assert first.process.returncode == 0
    second = start_stack(tmp_path)
    try:
        run = second.call("GET", f"/v1/runs/{fired['run_id']}").json()
        assert run["status"] == "lost"
        assert run["error"] == STOPPED_ERROR
    finally:
        stop_stack(second)
