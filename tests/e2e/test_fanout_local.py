"""``make run`` with fan-out on: the heartbeat hands every due shard to the local tick
queue, the stack's enqueuer threads read them, and each slot still runs once."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import start_stack, stop_stack

pytestmark = pytest.mark.e2e


def _log_records(stack, message: str) -> list[dict]:
    records = []
    for line in stack.log_path.read_text(errors="replace").splitlines():
        if line.startswith("{") and f'"message":"{message}"' in line.replace(" ", ""):
            try:
                records.append(json.loads(line))
            except ValueError:
                continue
    return records


def test_the_local_stack_fans_out_each_tick_and_every_slot_runs_once(tmp_path):
    stack = start_stack(tmp_path, env={"CRONHOOK_FANOUT_SHARDS": "1"})
    try:
        created = stack.call(
            "POST",
            "/v1/triggers",
            {"workflow": "echo", "schedule": {"interval_s": 1}, "state": {"count": 0}},
        )
        assert created.status_code == 201, created.text
        trigger_id = created.json()["id"]

        def three_runs():
            runs = stack.call("GET", f"/v1/triggers/{trigger_id}/runs").json()["items"]
            done = [r for r in runs if r["status"] == "succeeded"]
            return done if len(done) >= 3 else None

        done = stack.wait_for(three_runs, timeout_s=90)
        assert len({r["id"] for r in done}) == len(done)  # no slot twice
        assert stack.call("DELETE", f"/v1/triggers/{trigger_id}").status_code == 204
        # The ticks handed their shards over, and the enqueuer threads sent the fires.
        ticks = _log_records(stack, "heartbeat")
        assert any(t.get("fanned_out", 0) > 0 for t in ticks), stack.log_tail()
        enqueued = [r for r in _log_records(stack, "enqueuer") if r.get("enqueued", 0) > 0]
        assert enqueued, stack.log_tail()
    finally:
        stop_stack(stack)
