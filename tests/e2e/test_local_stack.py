"""End to end: the local stack as a user runs it, over real HTTP."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e


def test_healthz_answers_without_a_key(stack):
    assert stack.call("GET", "/healthz", key="nothing").status_code == 200


def test_interval_trigger_fires_repeatedly_and_its_state_round_trips(stack):
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

    done = stack.wait_for(three_runs, timeout_s=60)
    assert len({r["id"] for r in done}) == len(done)
    state = stack.call("GET", f"/v1/triggers/{trigger_id}").json()["state"]
    assert state["count"] >= 3
    assert stack.call("DELETE", f"/v1/triggers/{trigger_id}").status_code == 204


def test_fire_now_runs_once_with_surface_manual(stack):
    created = stack.call(
        "POST",
        "/v1/triggers",
        {"workflow": "echo", "schedule": {"cron": "0 0 1 1 *"}, "state": {"count": 0}},
    )
    trigger_id = created.json()["id"]
    fired = stack.call("POST", f"/v1/triggers/{trigger_id}/fire")
    assert fired.status_code == 202, fired.text
    run_id = fired.json()["run_id"]

    def finished():
        run = stack.call("GET", f"/v1/runs/{run_id}").json()
        return run if run.get("status") == "succeeded" else None

    run = stack.wait_for(finished, timeout_s=30)
    assert run["surface"] == "manual"
    runs = stack.call("GET", f"/v1/triggers/{trigger_id}/runs").json()["items"]
    assert [r["id"] for r in runs] == [run_id]
    assert stack.call("GET", f"/v1/triggers/{trigger_id}").json()["state"] == {"count": 1}
