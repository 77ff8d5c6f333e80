"""Settle rules and overlap policies through the runner, on the moto server."""

from __future__ import annotations

from datetime import timedelta

import pytest

from chalicelib import assembly
from chalicelib.domain.errors import ValidationError
from chalicelib.services import triggers
from chalicelib.store import triggers as triggers_store
from chalicelib.store.sqs import FireMessage
from chalicelib.workflows import Result, WorkflowFailed, workflow


@workflow("partial-progress")
def partial_progress(fire):
    cursor = (fire.state or {}).get("cursor", 0)
    raise WorkflowFailed("upstream timed out", state={"cursor": cursor + 10})


@workflow("self-schedule")
def self_schedule(fire):
    return Result(state=fire.state, next_fire_at=fire.scheduled_for - timedelta(hours=1))


def _iso(at):
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def _tick_and_drain(aws, clock, seconds=60):
    clock.advance(seconds)
    assembly.tick(now=clock())
    return aws.drain(assembly.build_runner(clock=clock))


def test_an_at_trigger_runs_once_then_is_done(aws, clock, root):
    at = clock() + timedelta(seconds=90)
    created = triggers.create_trigger(
        root, {"workflow": "echo", "schedule": {"at": _iso(at)}}, now=clock()
    )
    assert _tick_and_drain(aws, clock, 60) == []  # enqueued, due in 30 s
    clock.advance(30)
    assert aws.drain(assembly.build_runner(clock=clock)) == ["succeeded"]
    view = triggers.get_trigger_view(root, created["id"])
    assert (view["status"], view["disabled_reason"], view["run_count"]) == (
        "disabled",
        "max_runs",
        1,
    )
    assert _tick_and_drain(aws, clock, 600) == []


def test_max_runs_disables_after_the_last_allowed_run(aws, clock, root):
    created = triggers.create_trigger(
        root,
        {"workflow": "echo", "schedule": {"interval_s": 60}, "limits": {"max_runs": 2}},
        now=clock(),
    )
    assert _tick_and_drain(aws, clock) == ["succeeded"]
    assert _tick_and_drain(aws, clock) == ["succeeded"]
    # The third slot was enqueued before the trigger was done: its message is dropped.
    assert _tick_and_drain(aws, clock) == ["dropped"]
    assert _tick_and_drain(aws, clock) in (["dropped"], [])  # sent before it was dropped
    assert _tick_and_drain(aws, clock) == []  # out of the due index: nothing more is sent
    assert triggers.get_trigger_view(root, created["id"])["disabled_reason"] == "max_runs"


def test_expires_at_disables_with_reason_expired(aws, clock, root):
    expires = clock() + timedelta(seconds=150)
    created = triggers.create_trigger(
        root,
        {
            "workflow": "echo",
            "schedule": {"interval_s": 60},
            "limits": {"expires_at": _iso(expires)},
        },
        now=clock(),
    )
    assert _tick_and_drain(aws, clock) == ["succeeded"]
    assert _tick_and_drain(aws, clock) == ["succeeded"]
    view = triggers.get_trigger_view(root, created["id"])
    assert (view["status"], view["disabled_reason"]) == ("disabled", "expired")


def test_max_failures_disables_with_the_last_error_kept(aws, clock, root):
    created = triggers.create_trigger(
        root,
        {"workflow": "fail", "schedule": {"interval_s": 60}, "limits": {"max_failures": 3}},
        now=clock(),
    )
    for _ in range(3):
        assert _tick_and_drain(aws, clock) == ["failed"]
    view = triggers.get_trigger_view(root, created["id"])
    assert (view["status"], view["disabled_reason"], view["consecutive_failures"]) == (
        "disabled",
        "failures",
        3,
    )
    assert "always fails" in view["last_run"]["error"]


def test_a_failed_run_that_raised_workflow_failed_keeps_its_partial_state(aws, clock, root):
    created = triggers.create_trigger(
        root,
        {"workflow": "partial-progress", "schedule": {"interval_s": 60}, "state": {"cursor": 5}},
        now=clock(),
    )
    assert _tick_and_drain(aws, clock) == ["failed"]
    view = triggers.get_trigger_view(root, created["id"])
    assert view["state"] == {"cursor": 15}
    assert view["last_run"]["error"] == "upstream timed out"


def test_a_returned_next_fire_at_in_the_past_is_clamped_to_one_second_ahead(aws, clock, root):
    created = triggers.create_trigger(
        root, {"workflow": "self-schedule", "schedule": {"interval_s": 3600}}, now=clock()
    )
    clock.advance(3600)
    assembly.tick(now=clock())
    assert _handle_one(aws, clock) == "succeeded"
    item = triggers_store.get_trigger(created["id"])
    clamped = int((clock() + timedelta(seconds=1)).timestamp() * 1000)
    assert int(item.next_fire_at) == clamped
    # The clamped slot is inside the window the heartbeat already enqueued: the settle
    # sent its message, so it fires on its second rather than at the overdue pass.
    aws.purge_delays(clock() + timedelta(seconds=1))
    (message,) = aws.receive()
    assert FireMessage.parse(message["Body"]).scheduled_ms == clamped


def _handle_one(aws, clock) -> str:
    aws.purge_delays(clock())
    (message,) = aws.receive(max_messages=1)
    aws.delete([message])
    return assembly.build_runner(clock=clock).handle(FireMessage.parse(message["Body"]))


def test_echo_schedules_itself_when_its_state_asks(aws, clock, root):
    created = triggers.create_trigger(
        root,
        {"workflow": "echo", "schedule": {"interval_s": 3600}, "state": {"next_in_s": 90}},
        now=clock(),
    )
    assert _tick_and_drain(aws, clock, 3600) == ["succeeded"]
    item = triggers_store.get_trigger(created["id"])
    assert int(item.next_fire_at) == int((clock() + timedelta(seconds=90)).timestamp() * 1000)


HOLD: list = []  # actions the "hold" workflow runs while its run is in flight


@workflow("hold")
def hold(fire):
    """Runs the queued actions inside its own run: time passes while it executes."""
    while HOLD:
        HOLD.pop(0)()
    return Result(output={"fire_id": fire.fire_id})


def _running_minutes(aws, clock, minutes: int, statuses: list) -> None:
    """While the current run executes: ``minutes`` ticks, each followed by a drain."""
    for _ in range(minutes):
        clock.advance(60)
        assembly.tick(now=clock())
        statuses.extend(aws.drain(assembly.build_runner(clock=clock)))


def test_overlap_buffer_one_waits_for_the_running_fire_and_then_fires_once(aws, clock, root):
    created = triggers.create_trigger(
        root,
        {"workflow": "hold", "schedule": {"interval_s": 60}, "overlap": "buffer_one"},
        now=clock(),
    )
    during: list = []
    HOLD.append(lambda: _running_minutes(aws, clock, 3, during))
    # Three slots come due while the first run executes: the first is buffered (left
    # due), the next two collapse into it; none is skipped.
    assert _tick_and_drain(aws, clock) == ["succeeded", "succeeded"]
    # Later slots find the buffered one still due and are dropped; the overdue pass may
    # send the buffered slot again, and it is buffered again. Nothing else runs.
    assert during[:2] == ["buffered", "dropped"]
    assert set(during) <= {"buffered", "dropped"}
    runs = triggers.list_trigger_runs(root, created["id"], {})["items"]
    assert [r["status"] for r in runs] == ["succeeded", "succeeded"]
    # The buffered fire was sent by the settle of the run it waited for, and ran late,
    # with its lateness recorded.
    late = runs[0]
    assert late["lateness_ms"] > 0
    assert late["started_at"] >= runs[1]["finished_at"]


def test_overlap_allow_runs_fires_side_by_side_up_to_the_concurrency(aws, clock, root):
    triggers.create_trigger(
        root,
        {"workflow": "hold", "schedule": {"interval_s": 60}, "overlap": "allow", "concurrency": 2},
        now=clock(),
    )
    inner: list = []
    innermost: list = []
    HOLD.append(lambda: _running_minutes(aws, clock, 1, inner))  # runs inside the first run
    HOLD.append(lambda: _running_minutes(aws, clock, 1, innermost))  # inside the second
    assert _tick_and_drain(aws, clock) == ["succeeded"]
    # The second started while the first ran; the third came due while both ran and
    # waited (buffered), then ran when the second settled and sent it again.
    assert innermost == ["buffered"]
    assert inner == ["succeeded", "succeeded"]


def test_a_slot_is_skipped_only_if_a_run_is_executing_when_it_comes_due(aws, clock, root):
    # Seen: created at hh:mm:59.6 with the default 60 s heartbeat, 4 of 11 slots were
    # skipped though each run takes milliseconds: a tick claimed slot S+1 while slot S's
    # claim still waited, unstarted, in the queue. Now the tick claims nothing.
    clock.advance(59.6)
    created = triggers.create_trigger(
        root, {"workflow": "echo", "schedule": {"interval_s": 60}}, now=clock()
    )
    clock.advance(0.4)
    statuses = []
    for _ in range(11):
        assembly.tick(now=clock())  # slot S (at :59.6) is still queued when this ticks
        clock.advance(60)
        assembly.tick(now=clock())
        statuses += aws.drain(assembly.build_runner(clock=clock))
    runs = triggers.list_trigger_runs(root, created["id"], {"limit": "50"})["items"]
    assert [r["status"] for r in runs] == ["succeeded"] * len(runs)
    assert len(runs) >= 11
    assert "skipped" not in statuses


def test_overlap_skip_records_a_slot_that_comes_due_while_a_run_executes(aws, clock, root):
    created = triggers.create_trigger(
        root, {"workflow": "hold", "schedule": {"interval_s": 60}}, now=clock()
    )
    during: list = []
    HOLD.append(lambda: _running_minutes(aws, clock, 1, during))
    assert _tick_and_drain(aws, clock) == ["succeeded"]
    assert during == ["skipped"]
    runs = triggers.list_trigger_runs(root, created["id"], {})["items"]
    assert sorted(r["status"] for r in runs) == ["skipped", "succeeded"]


@pytest.mark.parametrize(
    ("schedule", "field"),
    [
        ({"cron": "61 * * * *"}, "schedule.cron"),
        ({"cron": "0 8 * * *", "timezone": "Mars/Olympus"}, "schedule.timezone"),
        ({"interval_s": 30}, "schedule.interval_s"),
        ({"at": "2020-01-01T00:00:00Z"}, "schedule.at"),
        ({"cron": "0 8 * * *", "interval_s": 3600}, "schedule"),
    ],
)
def test_an_unschedulable_trigger_is_refused_naming_the_field(aws, clock, root, schedule, field):
    with pytest.raises(ValidationError) as caught:
        triggers.create_trigger(root, {"workflow": "echo", "schedule": schedule}, now=clock())
    assert caught.value.field == field


def test_an_unknown_workflow_is_refused_naming_the_field(aws, clock, root):
    with pytest.raises(ValidationError) as caught:
        triggers.create_trigger(
            root, {"workflow": "nope", "schedule": {"interval_s": 60}}, now=clock()
        )
    assert caught.value.field == "workflow"
