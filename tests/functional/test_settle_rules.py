"""Settle rules and overlap policies through the runner, on the moto server."""

from __future__ import annotations

from datetime import timedelta

import pytest

from chalicelib.domain.errors import ValidationError
from chalicelib.services import heartbeat, triggers
from chalicelib.services.runner import Runner
from chalicelib.store import dynamo
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
    heartbeat.tick(now=clock())
    return aws.drain(Runner(clock=clock))


def test_an_at_trigger_runs_once_then_is_done(aws, clock, root):
    at = clock() + timedelta(seconds=90)
    created = triggers.create_trigger(
        root, {"workflow": "echo", "schedule": {"at": _iso(at)}}, now=clock()
    )
    assert _tick_and_drain(aws, clock, 60) == ["succeeded"]
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
    assert _tick_and_drain(aws, clock) == []
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
    assert _tick_and_drain(aws, clock, 3600) == ["succeeded"]
    item = dynamo.get_trigger(created["id"])
    assert int(item.next_fire_at) == int((clock() + timedelta(seconds=1)).timestamp() * 1000)


def test_echo_schedules_itself_when_its_state_asks(aws, clock, root):
    created = triggers.create_trigger(
        root,
        {"workflow": "echo", "schedule": {"interval_s": 3600}, "state": {"next_in_s": 90}},
        now=clock(),
    )
    assert _tick_and_drain(aws, clock, 3600) == ["succeeded"]
    item = dynamo.get_trigger(created["id"])
    assert int(item.next_fire_at) == int((clock() + timedelta(seconds=90)).timestamp() * 1000)


def _claim_and_start(aws, clock):
    """Tick and start the queued run without settling it (a run in progress)."""
    clock.advance(60)
    heartbeat.tick(now=clock())
    aws.purge_delays()
    (message,) = aws.receive()
    fire = FireMessage.parse(message["Body"])
    aws.delete([message])
    lease = int((clock() + timedelta(seconds=360)).timestamp() * 1000)
    assert dynamo.start_run(fire.trigger_id, run_id=fire.run_id, lease_ms=lease) is not None
    return fire


def test_overlap_buffer_one_waits_for_the_running_fire_and_then_fires_once(aws, clock, root):
    created = triggers.create_trigger(
        root,
        {"workflow": "echo", "schedule": {"interval_s": 60}, "overlap": "buffer_one"},
        now=clock(),
    )
    running = _claim_and_start(aws, clock)
    for _ in range(3):  # three slots pass while it runs: they collapse into one buffered fire
        clock.advance(60)
        assert heartbeat.tick(now=clock()).busy == 1
    item = dynamo.get_trigger(created["id"])
    dynamo.settle_run(
        item.id, run_id=running.run_id, succeeded=True, last_run={"id": running.run_id}, shard="0"
    )
    clock.advance(1)
    report = heartbeat.tick(now=clock())
    assert report.claimed == 1
    assert aws.drain(Runner(clock=clock)) == ["succeeded"]


def test_overlap_allow_runs_fires_side_by_side_up_to_the_concurrency(aws, clock, root):
    triggers.create_trigger(
        root,
        {"workflow": "echo", "schedule": {"interval_s": 60}, "overlap": "allow", "concurrency": 2},
        now=clock(),
    )
    _claim_and_start(aws, clock)
    _claim_and_start(aws, clock)  # the second fire starts while the first still runs
    clock.advance(60)
    report = heartbeat.tick(now=clock())
    assert (report.claimed, report.skipped, report.busy) == (0, 0, 1)  # the third waits


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
