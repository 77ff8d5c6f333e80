"""Poison: an always-failing workflow disables its trigger after five failures, and the
API says why (``disabled_reason``, ``last_run.error``) instead of failing forever."""

from __future__ import annotations

import pytest

import app as app_module
from chalicelib import assembly
from devstack.gateway import contract_client as Client
from tests.functional.api_client import Api


@pytest.fixture
def api(aws, clock, monkeypatch):
    monkeypatch.setattr("chalicelib.routes.resource.now_utc", clock)
    with Client(app_module.app, stage_name="test") as client:
        yield Api(client)


def test_always_failing_workflow_disables_after_five_failures_with_the_error_visible(
    aws, clock, api
):
    created = api.create_trigger({"workflow": "fail", "schedule": {"interval_s": 60}})
    trigger_id = created["id"]
    runner = assembly.build_runner(clock=clock)
    seen = []
    for minute in range(1, 9):
        clock.advance(60)
        assembly.tick(now=clock())
        aws.drain(runner)
        view = api.call("GET", f"/v1/triggers/{trigger_id}").body
        seen.append((view["status"], view["consecutive_failures"]))
        if minute < 5:
            assert view["status"] == "active", view

    assert seen[:5] == [("active", n) for n in range(1, 5)] + [("disabled", 5)]
    assert seen[5:] == [("disabled", 5)] * 3, "a disabled trigger does not fire again"
    view = api.call("GET", f"/v1/triggers/{trigger_id}").body
    assert view["disabled_reason"] == "failures"
    assert view["next_fire_at"] is None
    assert view["last_run"]["status"] == "failed"
    assert "always fails" in view["last_run"]["error"]

    runs = api.call("GET", f"/v1/triggers/{trigger_id}/runs").body["items"]
    assert [r["status"] for r in runs] == ["failed"] * 5
    assert all("always fails" in r["error"] for r in runs)
    assert api.call("GET", f"/v1/runs/{runs[0]['id']}").body["error"] == runs[0]["error"]

    listed = api.call("GET", "/v1/triggers?status=disabled").body["items"]
    assert [t["id"] for t in listed] == [trigger_id]
