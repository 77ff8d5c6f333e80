"""PATCH /v1/triggers/{id}: cadence edits in place, optimistic locking, 422s, no double fire.

Time is driven by hand: the heartbeat runs with an explicit ``now`` and the runner with
the test clock. T0 is Monday 2026-11-30 12:00 UTC (Berlin is UTC+1 then).
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from chalicelib import assembly
from chalicelib.domain.errors import Conflict, ValidationError
from chalicelib.services import triggers
from chalicelib.services.triggers import patch as patch_module
from chalicelib.settings import get_settings, reset_settings
from chalicelib.store import cursors
from chalicelib.store import state as state_store
from chalicelib.store import triggers as triggers_store
from chalicelib.store.runs import RunModel
from tests.conftest import T0


def create(root, clock, **fields):
    body = {"workflow": "echo", "state": {"count": 0}, **fields}
    return triggers.create_trigger(root, body, now=clock())


def patch(root, trigger, body, clock):
    return triggers.patch_trigger(root, trigger["id"], body, now=clock())


def scheduled_runs(trigger_id):
    return sorted(r.run_id for r in RunModel.query(trigger_id) if r.surface == "schedule")


# -- cadence edits, both directions ------------------------------------------------------


def test_interval_to_cron_infers_the_kind_clears_the_interval_and_recomputes_next_fire(
    aws, root, clock
):
    trigger = create(root, clock, schedule={"interval_s": 3600})
    clock.advance(600)
    edited = patch(
        root, trigger, {"schedule": {"cron": "0 8 * * *", "timezone": "Europe/Berlin"}}, clock
    )
    assert edited["kind"] == "cron"
    assert edited["schedule"]["cron"] == "0 8 * * *"
    assert edited["schedule"].get("interval_s") is None
    assert edited["schedule"]["timezone"] == "Europe/Berlin"
    assert edited["next_fire_at"] == "2026-12-01T07:00:00.000Z"
    assert edited["version"] == trigger["version"] + 1
    assert "08:00" in edited["cadence"]
    item = triggers_store.get_trigger(trigger["id"])
    assert item.due_at == item.next_fire_at
    assert '"i"' not in item.sched


def test_cron_to_interval_counts_from_now_when_nothing_fired_yet(aws, root, clock):
    trigger = create(root, clock, schedule={"cron": "0 8 * * 1", "timezone": "Europe/Berlin"})
    clock.advance(90)
    edited = patch(root, trigger, {"schedule": {"interval_s": 7200}}, clock)
    assert edited["kind"] == "interval"
    assert edited["schedule"].get("cron") is None
    assert edited["schedule"]["timezone"] == "UTC"  # a zone means nothing to an interval
    assert edited["next_fire_at"] == "2026-11-30T14:01:30.000Z"
    assert edited["cadence"] == "Every 2 hours"


def test_new_interval_counts_from_the_last_slot_that_fired(aws, root, clock):
    trigger = create(root, clock, schedule={"interval_s": 3600})
    runner = assembly.build_runner(clock=clock)
    clock.advance(3600)  # 13:00: the first slot
    assert assembly.tick(now=clock()).due == 1
    assert aws.drain(runner) == ["succeeded"]
    clock.advance(600)  # 13:10
    edited = patch(root, trigger, {"schedule": {"interval_s": 7200}}, clock)
    assert edited["next_fire_at"] == "2026-11-30T15:00:00.000Z"


def test_cron_to_at_and_back_to_cron(aws, root, clock):
    trigger = create(root, clock, schedule={"cron": "*/15 * * * *"})
    at = patch(root, trigger, {"schedule": {"at": "2026-12-24T18:00:00+01:00"}}, clock)
    assert at["kind"] == "at"
    assert at["schedule"]["at"] == "2026-12-24T17:00:00Z"
    assert at["schedule"].get("cron") is None
    assert at["next_fire_at"] == "2026-12-24T17:00:00.000Z"
    back = patch(root, trigger, {"schedule": {"cron": "30 6 * * *"}}, clock)
    assert back["kind"] == "cron"
    assert back["schedule"].get("at") is None
    assert back["next_fire_at"] == "2026-12-01T06:30:00.000Z"


def test_timezone_only_edit_keeps_the_expression_and_moves_the_next_fire(aws, root, clock):
    trigger = create(root, clock, schedule={"cron": "0 18 * * *"})
    assert trigger["next_fire_at"] == "2026-11-30T18:00:00.000Z"
    edited = patch(root, trigger, {"schedule": {"timezone": "America/New_York"}}, clock)
    assert edited["schedule"]["cron"] == "0 18 * * *"
    assert edited["next_fire_at"] == "2026-11-30T23:00:00.000Z"


def test_non_cadence_edit_leaves_the_slot_alone_and_merges_limits(aws, root, clock):
    trigger = create(
        root,
        clock,
        schedule={"cron": "0 8 * * 1"},
        limits={"max_usd": 5.0, "max_failures": 5},
        tags=["a"],
    )
    before = triggers_store.get_trigger(trigger["id"])
    clock.advance(3600)
    edited = patch(
        root, trigger, {"title": "Weekly", "tags": ["b"], "limits": {"max_failures": 2}}, clock
    )
    after = triggers_store.get_trigger(trigger["id"])
    assert (after.next_fire_at, after.due_at, after.sched) == (
        before.next_fire_at,
        before.due_at,
        before.sched,
    )
    assert edited["display_name"] == "Weekly"
    assert edited["tags"] == ["b"]
    assert edited["limits"]["max_failures"] == 2
    assert edited["limits"]["max_usd"] == 5.0
    cleared = patch(root, trigger, {"title": None}, clock)
    assert cleared["title"] is None and cleared["display_name"] == "echo"


def test_disable_and_enable_through_patch(aws, root, clock):
    trigger = create(root, clock, schedule={"interval_s": 3600})
    off = patch(root, trigger, {"enabled": False}, clock)
    assert (off["status"], off["disabled_reason"], off["next_fire_at"]) == (
        "disabled",
        "manual",
        None,
    )
    assert triggers_store.get_trigger(trigger["id"]).due_at is None
    clock.advance(3 * 3600 + 5)
    on = patch(root, trigger, {"enabled": True}, clock)
    assert on["status"] == "active" and on["disabled_reason"] is None
    assert on["next_fire_at"] == "2026-11-30T16:00:00.000Z"  # from now: no burst of 3


def test_state_edit_is_written_with_the_trigger(aws, root, clock):
    trigger = create(root, clock, schedule={"interval_s": 3600})
    edited = patch(root, trigger, {"state": {"count": 41}}, clock)
    assert edited["state"] == {"count": 41}
    runner = assembly.build_runner(clock=clock)
    clock.advance(3600)
    assembly.tick(now=clock())
    assert aws.drain(runner) == ["succeeded"]
    assert triggers.get_trigger_view(root, trigger["id"])["state"] == {"count": 42}


def test_state_edit_that_loses_to_a_run_is_a_409_and_changes_nothing(aws, root, clock, monkeypatch):
    trigger = create(root, clock, schedule={"interval_s": 3600})
    real_get_state = state_store.get_state

    def stale(trigger_id):
        state, version = real_get_state(trigger_id)
        state_store.write_state(trigger_id, {"count": 7}, expected_version=version)  # a run wins
        return state, version

    monkeypatch.setattr(state_store, "get_state", stale)
    with pytest.raises(Conflict) as caught:
        patch(root, trigger, {"state": {"count": 100}, "title": "t"}, clock)
    monkeypatch.setattr(state_store, "get_state", real_get_state)
    assert caught.value.field == "state"
    view = triggers.get_trigger_view(root, trigger["id"])
    assert view["state"] == {"count": 7}
    assert view["title"] is None and view["version"] == 1


# -- optimistic locking ------------------------------------------------------------------


def test_stale_version_is_a_409_naming_version(aws, root, clock):
    trigger = create(root, clock, schedule={"interval_s": 3600})
    first = patch(root, trigger, {"version": 1, "title": "one"}, clock)
    assert first["version"] == 2
    with pytest.raises(Conflict) as caught:
        patch(root, trigger, {"version": 1, "title": "two"}, clock)
    assert caught.value.STATUS_CODE == 409 and caught.value.field == "version"
    assert triggers.get_trigger_view(root, trigger["id"])["title"] == "one"


def test_a_runner_disable_between_read_and_write_makes_the_patch_409(aws, root, clock, monkeypatch):
    trigger = create(root, clock, schedule={"interval_s": 3600})
    real_load = patch_module.load_owned
    calls = []

    def load_then_disable(principal, trigger_id):
        item = real_load(principal, trigger_id)
        if not calls:
            triggers_store.disable_trigger(trigger_id, reason="failures", now_ms=1)
        calls.append(1)
        return item

    monkeypatch.setattr(patch_module, "load_owned", load_then_disable)
    with pytest.raises(Conflict):
        patch(root, trigger, {"version": 1, "schedule": {"interval_s": 7200}}, clock)
    item = triggers_store.get_trigger(trigger["id"])
    assert item.disabled_reason == "failures"
    assert '"i":3600' in item.sched


# -- 422s name the field -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"schedule": {"cron": "61 * * * *"}}, "schedule.cron"),
        ({"schedule": {"cron": "0 8 * * *", "interval_s": 3600}}, "schedule"),
        ({"schedule": {"interval_s": 5}}, "schedule.interval_s"),
        ({"schedule": {"at": "2026-11-30T11:00:00Z"}}, "schedule.at"),
        ({"schedule": {"at": "2026-12-01T08:00:00"}}, "schedule.at"),
        ({"schedule": {"timezone": "Mars/Olympus_Mons"}}, "schedule.timezone"),
        ({"schedule": {"cron": None}}, "schedule.cron"),
        ({"schedule": None}, "schedule"),
        ({"event": {"source": "github"}}, "event"),
        ({"workflow": "no-such-workflow"}, "workflow"),
        ({"workflow": None}, "workflow"),
        ({"concurrency": "many"}, "concurrency"),
        ({"concurrency": 0}, "concurrency"),
        ({"limits": {"max_failures": 0}}, "limits.max_failures"),
        ({"limits": {"max_usd": float("inf")}}, "limits.max_usd"),
        ({"overlap": "sometimes"}, "overlap"),
        ({"nickname": "x"}, "nickname"),
        ({"limits": {"max_runs": 1, "colour": "red"}}, "limits.colour"),
        ({"state": None}, "state"),
        ({"version": 1}, None),
        ({"title": "x" * 201}, "title"),
    ],
)
def test_unschedulable_or_invalid_edit_is_a_422_naming_the_field(aws, root, clock, body, field):
    trigger = create(root, clock, schedule={"cron": "0 8 * * 1"})
    before = triggers_store.get_trigger(trigger["id"])
    with pytest.raises(ValidationError) as caught:
        patch(root, trigger, body, clock)
    assert caught.value.field == field
    after = triggers_store.get_trigger(trigger["id"])
    assert (after.version, after.sched, after.spec) == (before.version, before.sched, before.spec)


def test_event_trigger_edits_its_filter_but_not_its_source_secret_or_cadence(aws, root, clock):
    trigger = create(root, clock, event={"source": "github", "secret": "gh-secret-123"})
    edited = patch(
        root, trigger, {"event": {"source": "github", "filter": {"branch": "main"}}}, clock
    )
    assert edited["event"]["filter"] == {"branch": "main"}
    assert "secret" not in edited["event"]
    for body, field in (
        ({"event": {"source": "stripe"}}, "event.source"),
        ({"event": {"source": "github", "secret": "another-secret"}}, "event.secret"),
        ({"schedule": {"interval_s": 3600}}, "schedule"),
    ):
        with pytest.raises(ValidationError) as caught:
            patch(root, trigger, body, clock)
        assert caught.value.field == field


# -- never a double fire -----------------------------------------------------------------


def test_cron_edit_after_a_slot_was_enqueued_early_never_fires_that_slot_twice(aws, root, clock):
    # The Dagster bug: changing the cron re-ran a tick that had already run. Here the
    # 12:05 slot is enqueued at 12:04:30 (lookahead), then the cron changes to every
    # minute at 12:04:40: the new schedule also has 12:05. Nothing was claimed yet, so
    # 12:05 stays the next slot; its queued message runs it once, under the new schedule.
    trigger = create(root, clock, schedule={"cron": "*/5 * * * *"})
    runner = assembly.build_runner(clock=clock)
    clock.advance(4 * 60 + 30)
    assert assembly.tick(now=clock()).due == 1
    clock.advance(10)
    edited = patch(root, trigger, {"schedule": {"cron": "* * * * *"}}, clock)
    assert edited["next_fire_at"] == "2026-11-30T12:05:00.000Z"
    clock.advance(20)  # 12:05:00
    assert aws.drain(runner) == ["succeeded"]
    for _ in range(3):
        clock.advance(60)
        assembly.tick(now=clock())
        aws.drain(runner)
    # A re-fired slot would reuse its run id (one record), so count executions too.
    view = triggers.get_trigger_view(root, trigger["id"])
    assert view["run_count"] == 4
    assert view["state"] == {"count": 4}
    slots = scheduled_runs(trigger["id"])
    assert [s.split(".")[1][:13] for s in slots] == [
        str(int((T0 + timedelta(minutes=m)).timestamp() * 1000)).zfill(13) for m in (5, 6, 7, 8)
    ]


def test_an_edit_to_a_faster_schedule_sends_its_slots_inside_the_window_already_enqueued(
    aws, root, clock, monkeypatch
):
    # The tick at 12:04:30 took the window up to its horizon and sent 12:05, the only
    # slot of */5 in it. At 12:04:40 the schedule becomes every 20 s: its slots up to the
    # horizon fall in a window no tick sends again. Each must still run on its second,
    # once: not merged into a later one, not left to the overdue pass.
    monkeypatch.setenv("CRONHOOK_MIN_INTERVAL_S", "1")
    reset_settings()
    trigger = create(root, clock, schedule={"cron": "*/5 * * * *"})
    runner = assembly.build_runner(clock=clock)
    clock.advance(4 * 60 + 30)
    assert assembly.tick(now=clock()).due == 1
    horizon_ms = cursors.get_cursor(
        triggers_store.shard_of(trigger["id"], get_settings().due_shards)
    )
    clock.advance(10)
    edited = patch(root, trigger, {"schedule": {"interval_s": 20}}, clock)
    first_ms = int(datetime.fromisoformat(edited["next_fire_at"]).timestamp() * 1000)
    inside = list(range(first_ms, horizon_ms + 1, 20_000))
    assert len(inside) >= 2  # the edit put slots after the next one inside the taken window
    ran: list[str] = []
    end_ms = horizon_ms + 20_000
    while int(clock().timestamp() * 1000) < end_ms:
        clock.advance(5)
        if int(clock().timestamp() * 1000) % 60_000 == 30_000:
            assembly.tick(now=clock())
        ran += [s for s in aws.drain(runner) if s != "dropped"]
    slots = [int(run_id.split(".")[1][:13]) for run_id in scheduled_runs(trigger["id"])]
    assert slots[: len(inside)] == inside
    runs = {r.run_id: r for r in RunModel.query(trigger["id"])}
    for slot in inside:
        [run] = [r for run_id, r in runs.items() if run_id.split(".")[1][:13] == f"{slot:013d}"]
        assert run.status == "succeeded"
        # On its second: started when the test's clock reached the slot, not a tick later.
        assert int(run.started_at) - slot < 5_000, (slot, run.started_at)


def test_claim_between_the_patch_read_and_its_write_is_fenced_and_retried(
    aws, root, clock, monkeypatch
):
    # Timeline: the PATCH reads the item (next_fire_at 12:05); a runner then claims and
    # runs 12:05; the PATCH's conditional write fails on next_fire_at, re-reads, and
    # computes its slot after the one that ran. The version was not touched by the claim.
    trigger = create(root, clock, schedule={"cron": "*/5 * * * *"})
    clock.advance(4 * 60 + 30)
    assembly.tick(now=clock())
    clock.advance(30)  # 12:05:00
    runner = assembly.build_runner(clock=clock)
    real_load = patch_module.load_owned
    reads = []

    def load_then_claim(principal, trigger_id):
        item = real_load(principal, trigger_id)
        if not reads:
            assert aws.drain(runner) == ["succeeded"]
        reads.append(item.next_fire_at)
        return item

    monkeypatch.setattr(patch_module, "load_owned", load_then_claim)
    edited = patch(root, trigger, {"version": 1, "schedule": {"cron": "* * * * *"}}, clock)
    monkeypatch.setattr(patch_module, "load_owned", real_load)
    assert len(reads) == 2  # one lost race, one retry
    assert edited["next_fire_at"] == "2026-11-30T12:06:00.000Z"
    clock.advance(60)
    assembly.tick(now=clock())
    aws.drain(runner)
    slots = scheduled_runs(trigger["id"])
    assert len(slots) == 2
    view = triggers.get_trigger_view(root, trigger["id"])
    assert view["run_count"] == 2 and view["state"] == {"count": 2}


def test_a_patch_written_after_its_slot_was_enqueued_fences_that_message_out(aws, root, clock):
    trigger = create(root, clock, schedule={"cron": "*/5 * * * *"})
    clock.advance(4 * 60 + 30)
    assert assembly.tick(now=clock()).due == 1  # 12:05 is enqueued
    patch(root, trigger, {"schedule": {"cron": "0 9 * * *"}}, clock)
    clock.advance(30)
    # The 12:05 message finds the trigger moved on: dropped by the claim's fence.
    assert aws.drain(assembly.build_runner(clock=clock)) == ["dropped"]
    item = triggers_store.get_trigger(trigger["id"])
    assert triggers_store.in_flight_of(item) == {}
    assert scheduled_runs(trigger["id"]) == []
    assert triggers.trigger_view(item)["next_fire_at"] == "2026-12-01T09:00:00.000Z"


def test_patch_is_audited_with_a_field_diff_and_no_secret(aws, root, clock):
    from chalicelib.services import audit

    trigger = create(root, clock, schedule={"cron": "0 8 * * 1"}, title="before")
    patch(root, trigger, {"title": "after", "schedule": {"interval_s": 3600}, "state": {}}, clock)
    entries = audit.list_audit(root, {"trigger_id": trigger["id"], "action": "update"})["items"]
    assert len(entries) == 1
    changes = entries[0]["detail"]["changes"]
    assert changes["title"] == {"from": "before", "to": "after"}
    assert changes["kind"] == {"from": "cron", "to": "interval"}
    assert changes["schedule"]["to"]["interval_s"] == 3600
    assert changes["state"] == {"changed": True}
    assert entries[0]["actor"] == "root"


def test_switching_to_an_http_target_shows_its_outbound_secret_once(aws, root, clock):
    trigger = create(root, clock, schedule={"cron": "0 8 * * 1"})
    edited = patch(root, trigger, {"workflow": "http:https://93.184.215.14/hook"}, clock)
    assert edited["workflow"] == "http:https://93.184.215.14/hook"
    secret = edited["outbound_secret"]
    assert secret
    sealed = triggers_store.get_trigger(trigger["id"]).outbound_secret_sealed
    assert sealed and secret not in sealed
    assert "outbound_secret" not in triggers.get_trigger_view(root, trigger["id"])
    moved = patch(root, trigger, {"workflow": "http:https://93.184.215.15/other"}, clock)
    assert "outbound_secret" not in moved  # the receiver keeps verifying with the same one
    assert triggers_store.get_trigger(trigger["id"]).outbound_secret_sealed == sealed
    with pytest.raises(ValidationError) as caught:
        patch(root, trigger, {"workflow": "http:http://93.184.215.14/plain"}, clock)
    assert caught.value.field == "workflow"
