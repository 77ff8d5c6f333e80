"""The local stack keeps its triggers, runs and state across a restart (Ctrl-C, start again)."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import start_stack, stop_stack

pytestmark = pytest.mark.e2e


def test_triggers_and_state_survive_a_restart_and_keep_firing(tmp_path):
    first = start_stack(tmp_path)
    try:
        created = first.call(
            "POST",
            "/v1/triggers",
            {"workflow": "echo", "schedule": {"interval_s": 1}, "state": {"count": 0}},
        ).json()
        trigger_id = created["id"]
        first.wait_for(
            lambda: first.call("GET", f"/v1/triggers/{trigger_id}").json()["state"]["count"] >= 2
        )
    finally:
        stop_stack(first)
    assert first.process.returncode == 0
    assert (tmp_path / "data" / "tables.json").exists()

    second = start_stack(tmp_path)
    try:
        before = second.call("GET", f"/v1/triggers/{trigger_id}").json()
        assert before["status"] == "active"
        count = before["state"]["count"]
        assert count >= 2
        second.wait_for(
            lambda: (
                second.call("GET", f"/v1/triggers/{trigger_id}").json()["state"]["count"]
                >= count + 2
            )
        )
        runs = second.call("GET", f"/v1/triggers/{trigger_id}/runs", params={"limit": 200}).json()[
            "items"
        ]
        ids = [r["id"] for r in runs]
        assert len(ids) == len(set(ids))
        assert {r["status"] for r in runs} <= {"succeeded", "queued", "running", "lost", "skipped"}
    finally:
        stop_stack(second)
