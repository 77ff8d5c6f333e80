"""The local stack's embedded AWS and runners: their own processes (the AWS on a fixed port),
gone when the stack is."""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path

import boto3
import pytest

from tests.e2e.conftest import Stack, start_stack, stop_stack

pytestmark = pytest.mark.e2e


def _children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces, so split after its ")".
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid:
            found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _port_open(url: str) -> bool:
    host, port = url.removeprefix("http://").split(":")
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex((host, int(port))) == 0


def _wait(predicate, timeout_s: float = 60) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def _aws(stack: Stack, service: str):
    return boto3.client(
        service,
        endpoint_url=stack.aws_url,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )


def _child_running(stack: Stack, module: str) -> int:
    """The pid of the stack's one child process running ``python -m module``."""

    def found() -> list[int]:
        return [
            pid
            for pid in _children_of(stack.process.pid)
            if module.encode() in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        ]

    assert _wait(lambda: len(found()) == 1, timeout_s=30), (module, _children_of(stack.process.pid))
    return found()[0]


def _embedded_aws_pid(stack: Stack) -> int:
    return _child_running(stack, "devstack.embedded_aws")


def _runners_pid(stack: Stack) -> int:
    return _child_running(stack, "devstack.runner_process")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_the_embedded_aws_is_its_own_process_on_the_given_port_and_boto3_drives_it(tmp_path):
    stack = start_stack(tmp_path)
    try:
        child = _embedded_aws_pid(stack)
        runners = _runners_pid(stack)
        assert len({child, runners, stack.process.pid}) == 3
        assert sorted(_children_of(stack.process.pid)) == sorted([child, runners])
        banner = stack.log_path.read_text()
        assert f"--endpoint-url {stack.aws_url}" in banner
        queues = _aws(stack, "sqs").list_queues()["QueueUrls"]
        assert any(url.endswith("/cronhook-fires") for url in queues)
        tables = _aws(stack, "dynamodb").list_tables()["TableNames"]
        assert "cronhook-local-triggers" in tables
        created = stack.call(
            "POST", "/v1/triggers", {"workflow": "echo", "schedule": {"cron": "0 0 1 1 *"}}
        ).json()
        # The stack's writes land in the process boto3 reads from.
        item = _aws(stack, "dynamodb").get_item(
            TableName="cronhook-local-triggers", Key={"id": {"S": created["id"]}}
        )
        assert item.get("Item", {}).get("id") == {"S": created["id"]}
    finally:
        stop_stack(stack)
    assert stack.process.returncode == 0
    assert _wait(lambda: not _alive(child))
    assert _wait(lambda: not _alive(runners))
    assert not _port_open(stack.aws_url)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_sigterm_stops_the_stack_and_its_embedded_aws_and_saves_the_tables(tmp_path):
    stack = start_stack(tmp_path)
    child, runners = _embedded_aws_pid(stack), _runners_pid(stack)
    trigger_id = stack.call(
        "POST", "/v1/triggers", {"workflow": "echo", "schedule": {"cron": "0 0 1 1 *"}}
    ).json()["id"]
    stack.process.send_signal(signal.SIGTERM)
    assert stack.process.wait(timeout=90) == 0
    assert _wait(lambda: not _alive(child))
    assert _wait(lambda: not _alive(runners))
    assert trigger_id in (tmp_path / "data" / "tables.json").read_text()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_killed_stack_leaves_no_embedded_aws_or_runners_behind(tmp_path):
    stack = start_stack(tmp_path)
    child, runners = _embedded_aws_pid(stack), _runners_pid(stack)
    trigger_id = stack.call(
        "POST", "/v1/triggers", {"workflow": "echo", "schedule": {"cron": "0 0 1 1 *"}}
    ).json()["id"]
    os.kill(stack.process.pid, signal.SIGKILL)
    stack.process.wait(timeout=30)
    assert _wait(lambda: not _alive(child)), "the embedded AWS outlived its stack"
    assert _wait(lambda: not _alive(runners)), "the runners outlived their stack"
    assert not _port_open(stack.aws_url)
    # It saved what it held on its way out, so even a killed stack keeps its triggers.
    assert trigger_id in (tmp_path / "data" / "tables.json").read_text()


def test_a_busy_aws_port_fails_the_start_with_a_message_naming_it(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(AssertionError) as failed:
            start_stack(tmp_path, env={"CRONHOOK_AWS_PORT": str(port)})
    assert "CRONHOOK_AWS_PORT" in str(failed.value)
