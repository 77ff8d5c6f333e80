"""``history``: a ``failures`` trigger keeps no run record of a success, and says so truthfully.

Time is driven by hand (the heartbeat with an explicit ``now``, the runner with the test
clock), on the moto server.
"""

from __future__ import annotations

import pytest
from chalice.test import Client

import app as app_module
from chalicelib import assembly
from chalicelib.domain.errors import ValidationError
from chalicelib.services import switch, triggers
from chalicelib.store.runs import RunModel
from chalicelib.workflows import Result, workflow
from tests.functional.api_client import Api

SEEN: list = []  # what the "history-peek" workflow saw of its own trigger while it ran
HOLD: list = []  # actions the "history-hold" workflow runs while its run is in flight


@workflow("history-peek")
def history_peek(fire):
    """Lists its own trigger's runs (and the tenant's running runs) while it runs."""
    root = SEEN.pop(0)
    SEEN.append(triggers.list_trigger_runs(root, fire.trigger_id, {})["items"])
    SEEN.append(triggers.list_runs(root, {"status": "running"})["items"])
    return Result(output={"ok": True})


@workflow("history-hold")
def history_hold(fire):
    """Runs the queued actions inside its own run: time passes while it executes."""
    while HOLD:
        HOLD.pop(0)()
    return Result(output={"ok": True})


def _create(root, clock, **fields):
    body = {"workflow": "echo", "schedule": {"interval_s": 60}, **fields}
    return triggers.create_trigger(root, body, now=clock())


def _tick_and_drain(aws, clock):
    clock.advance(60)
    assembly.tick(now=clock())
    return aws.drain(assembly.build_runner(clock=clock))


def _records(trigger_id):
    return [(r.run_id, r.status) for r in RunModel.query(trigger_id)]


def test_the_default_is_full_history_and_every_success_is_recorded(aws, clock, root):
    created = _create(root, clock)
    assert created["history"] == "full"
    assert _tick_and_drain(aws, clock) == ["succeeded"]
    assert [status for _, status in _records(created["id"])] == ["succeeded"]


def test_a_failures_trigger_writes_no_record_for_a_success_and_keeps_last_run(aws, clock, root):
    created = _create(root, clock, history="failures")
    assert created["history"] == "failures"
    assert _tick_and_drain(aws, clock) == ["succeeded"]
    assert _tick_and_drain(aws, clock) == ["succeeded"]
    assert _records(created["id"]) == []
    view = triggers.get_trigger_view(root, created["id"])
    assert view["history"] == "failures"
    assert view["run_count"] == 2
    assert view["consecutive_failures"] == 0
    assert view["last_run"]["status"] == "succeeded"
    assert view["last_run"]["finished_at"] is not None
    # The latest success is still listed (and found by id), from last_run; older ones are not.
    listed = triggers.list_trigger_runs(root, created["id"], {})["items"]
    assert [(r["id"], r["status"]) for r in listed] == [(view["last_run"]["id"], "succeeded")]
    assert listed[0]["scheduled_for"] is not None
    one = triggers.get_run_view(root, view["last_run"]["id"])
    assert (one["status"], one["surface"]) == ("succeeded", "schedule")


def test_a_failures_trigger_records_a_failed_run(aws, clock, root):
    created = _create(root, clock, workflow="fail", history="failures")
    assert _tick_and_drain(aws, clock) == ["failed"]
    assert [status for _, status in _records(created["id"])] == ["failed"]
    view = triggers.get_trigger_view(root, created["id"])
    assert view["last_run"]["status"] == "failed"
    assert view["consecutive_failures"] == 1
    listed = triggers.list_trigger_runs(root, created["id"], {})["items"]
    assert [r["status"] for r in listed] == ["failed"]
    assert listed[0]["started_at"] is not None  # the record itself, not last_run
    org = triggers.list_runs(root, {"status": "failed"})["items"]
    assert [r["id"] for r in org] == [listed[0]["id"]]


def test_a_failures_trigger_records_a_slot_skipped_by_the_switch(aws, clock, root):
    created = _create(root, clock, history="failures")
    clock.advance(60)
    assembly.tick(now=clock())  # the slot's message waits in the queue
    switch.set_override(False)
    try:
        assert aws.drain(assembly.build_runner(clock=clock)) == ["skipped"]
    finally:
        switch.set_override(None)
        switch._cache.clear()
    assert [status for _, status in _records(created["id"])] == ["skipped"]
    view = triggers.get_trigger_view(root, created["id"])
    assert (view["last_run"]["status"], view["consecutive_failures"]) == ("skipped", 0)


def test_a_failures_trigger_records_a_slot_skipped_for_overlap(aws, clock, root):
    created = _create(root, clock, workflow="history-hold", history="failures")
    during: list = []

    def next_minute():
        clock.advance(60)
        assembly.tick(now=clock())
        during.extend(aws.drain(assembly.build_runner(clock=clock)))

    HOLD.append(next_minute)  # runs inside the first run: the next slot comes due then
    assert _tick_and_drain(aws, clock) == ["succeeded"]
    assert during == ["skipped"]
    assert [status for _, status in _records(created["id"])] == ["skipped"]
    listed = triggers.list_trigger_runs(root, created["id"], {})["items"]
    assert sorted(r["status"] for r in listed) == ["skipped", "succeeded"]


def test_a_failures_trigger_lists_its_run_in_flight(aws, clock, root):
    created = _create(root, clock, workflow="history-peek", history="failures")
    SEEN.clear()
    SEEN.append(root)
    assert _tick_and_drain(aws, clock) == ["succeeded"]
    own, running = SEEN
    SEEN.clear()
    assert [r["status"] for r in own] == ["running"]
    assert own[0]["trigger_id"] == created["id"]
    assert [r["id"] for r in running] == [own[0]["id"]]
    # Once it settled: no record, and last_run is this run.
    assert _records(created["id"]) == []
    assert triggers.get_trigger_view(root, created["id"])["last_run"]["id"] == own[0]["id"]


def test_a_failures_trigger_still_records_a_manual_fire(aws, clock, root):
    created = _create(root, clock, history="failures")
    fired = triggers.fire_now(root, created["id"], now=clock())
    assert aws.drain(assembly.build_runner(clock=clock)) == ["succeeded"]
    assert _records(created["id"]) == [(fired["run_id"], "succeeded")]


def test_patch_switches_history_both_ways(aws, clock, root):
    created = _create(root, clock)
    assert _tick_and_drain(aws, clock) == ["succeeded"]
    assert len(_records(created["id"])) == 1
    edited = triggers.patch_trigger(root, created["id"], {"history": "failures"}, now=clock())
    assert edited["history"] == "failures"
    assert triggers.get_trigger_view(root, created["id"])["history"] == "failures"
    assert _tick_and_drain(aws, clock) == ["succeeded"]
    assert len(_records(created["id"])) == 1  # the success after the switch left no record
    back = triggers.patch_trigger(root, created["id"], {"history": "full"}, now=clock())
    assert back["history"] == "full"
    assert _tick_and_drain(aws, clock) == ["succeeded"]
    assert len(_records(created["id"])) == 2


def test_a_patch_that_does_not_name_history_keeps_it(aws, clock, root):
    created = _create(root, clock, history="failures")
    edited = triggers.patch_trigger(root, created["id"], {"title": "renamed"}, now=clock())
    assert edited["history"] == "failures"


@pytest.mark.parametrize("value", ["none", "", 1, True, ["full"]])
def test_a_bad_history_is_a_422_naming_history_on_create_and_patch(aws, clock, root, value):
    with pytest.raises(ValidationError) as created:
        _create(root, clock, history=value)
    assert created.value.field == "history"
    trigger = _create(root, clock)
    with pytest.raises(ValidationError) as patched:
        triggers.patch_trigger(root, trigger["id"], {"history": value}, now=clock())
    assert patched.value.field == "history"


def test_a_null_history_in_a_patch_is_a_422_naming_history(aws, clock, root):
    trigger = _create(root, clock)
    with pytest.raises(ValidationError) as patched:
        triggers.patch_trigger(root, trigger["id"], {"history": None}, now=clock())
    assert patched.value.field == "history"


def test_history_over_http_create_get_patch_and_a_bad_value(aws):
    with Client(app_module.app, stage_name="test") as client:
        api = Api(client)
        body = {"workflow": "echo", "schedule": {"cron": "0 8 * * 1"}, "history": "failures"}
        created = api.create_trigger(body)
        assert created["history"] == "failures"
        path = f"/v1/triggers/{created['id']}"
        assert api.call("GET", path).body["history"] == "failures"
        patched = api.call("PATCH", path, {"history": "full"})
        assert (patched.status, patched.body["history"]) == (200, "full")
        bad = api.call("PATCH", path, {"history": "sometimes"})
        assert (bad.status, bad.error.get("field")) == (422, "history")
        bad = api.call("POST", "/v1/triggers", {**body, "history": "sometimes"})
        assert (bad.status, bad.error.get("field")) == (422, "history")


def test_a_backfill_of_a_failures_trigger_never_reruns_a_slot_that_may_have_succeeded(
    aws, clock, root
):
    from chalicelib.services import ondemand

    created = _create(root, clock, schedule={"cron": "* * * * *"}, history="failures")
    assert _tick_and_drain(aws, clock) == ["succeeded"]
    assert _tick_and_drain(aws, clock) == ["succeeded"]  # 12:01 and 12:02, unrecorded
    window = {"from": "2026-11-30T11:55:00Z", "to": "2026-11-30T12:02:00Z", "dry_run": True}
    dry = ondemand.backfill(root, created["id"], window, now=clock())
    # 11:55 ... 12:00 run (before the trigger existed); 12:01 and 12:02 may have succeeded.
    assert (dry["slots"], dry["already_ran"]) == (6, 2)
    assert (dry["first"], dry["last"]) == ("2026-11-30T11:55:00.000Z", "2026-11-30T12:00:00.000Z")
