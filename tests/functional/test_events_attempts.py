"""An event's attempts (services/events/attempts.py), on the moto server: retries with
backoff, a reaped run counted as a failed attempt, and only an event's last failed
attempt counted toward max_failures.
"""

from __future__ import annotations

import pytest

from chalicelib import assembly
from chalicelib.services import events, triggers
from chalicelib.store.sqs import FireMessage
from tests.scenarios import deliver, event_of, webhook_trigger

pytestmark = pytest.mark.usefixtures("fresh_secrets")


def step(aws, runner) -> list[str]:
    """Handle what is queued now, once (delayed messages included: time is the test's clock)."""
    aws.purge_delays()
    messages = aws.receive()
    statuses = [runner.handle(FireMessage.parse(m["Body"])) for m in messages]
    aws.delete(messages)
    return statuses


def test_a_failed_event_is_retried_with_backoff_then_marked_failed_and_kept(aws, clock, root):
    created = webhook_trigger(root, clock, workflow="fail", event={"max_attempts": 3})
    answer = deliver(created, clock, 1)[1]
    runner = assembly.build_runner(clock=clock)
    assert step(aws, runner) == ["failed"]
    event = event_of(answer)
    assert (event.status, event.attempt) == ("pending", 1)
    assert event.retry_at == int(clock().timestamp() * 1000) + 2000

    # On time, the delayed retry message runs the second attempt.
    clock.advance(2)
    assert step(aws, runner) == ["failed"]
    event = event_of(answer)
    assert (event.status, event.attempt) == ("pending", 2)
    assert event.retry_at == int(clock().timestamp() * 1000) + 8000

    # A retry message that arrives before its time is dropped; the event keeps waiting,
    # and the heartbeat's sweep sends it again once it is overdue.
    assert step(aws, runner) == ["dropped"]
    assert event_of(answer).status == "pending"
    clock.advance(8 + events.SWEEP_GRACE_S)
    assert assembly.tick(now=clock()).events_dispatched == 1
    assert step(aws, runner) == ["failed"]
    event = event_of(answer)
    assert (event.status, event.attempt) == ("failed", 3)
    assert event.pending_sk is None

    clock.advance(3600)
    assert assembly.tick(now=clock()).events_dispatched == 0
    assert aws.drain(runner) == []
    (run,) = triggers.list_trigger_runs(root, created["id"], {})["items"]
    assert (run["id"], run["status"], run["attempt"]) == (answer["run_id"], "failed", 3)
    view = events.list_events(root, created["id"], {})["items"][0]
    assert (view["status"], view["attempt"]) == ("failed", 3)


def test_a_reaped_event_run_counts_as_a_failed_attempt_and_is_retried(aws, clock, root, ran):
    created = webhook_trigger(root, clock)
    answer = deliver(created, clock, 3)[1]
    (message,) = aws.receive()
    aws.delete([message])
    now_ms = int(clock().timestamp() * 1000)
    # A runner starts the event and dies before settling.
    started = events.start_event_run(
        FireMessage.parse(message["Body"]), lease_ms=now_ms + 5000, now=clock()
    )
    assert started is not None and event_of(answer).status == "running"

    clock.advance(6)
    assert assembly.tick(now=clock()).reaped == 1
    event = event_of(answer)
    assert (event.status, event.attempt) == ("pending", 1)
    assert triggers.get_run_view(root, answer["run_id"])["status"] == "lost"

    clock.advance(2)
    assert aws.drain(assembly.build_runner(clock=clock)) == ["succeeded"]
    assert ran == [3]
    event = event_of(answer)
    assert (event.status, event.attempt) == ("succeeded", 2)
    run = triggers.get_run_view(root, answer["run_id"])
    assert (run["status"], run["attempt"]) == ("succeeded", 2)


def test_only_an_events_last_failed_attempt_counts_toward_max_failures(aws, clock, root):
    created = webhook_trigger(
        root, clock, workflow="fail", event={"max_attempts": 2}, limits={"max_failures": 2}
    )
    runner = assembly.build_runner(clock=clock)

    def failures() -> tuple[str, int, str | None]:
        view = triggers.get_trigger_view(root, created["id"])
        return view["status"], view["consecutive_failures"], view["disabled_reason"]

    for n in (1, 2):
        deliver(created, clock, n)
        assert step(aws, runner) == ["failed"]  # attempt 1: retried, not counted
        assert failures() == ("active", n - 1, None)
        clock.advance(2)
        assert step(aws, runner) == ["failed"]  # attempt 2, the last: counted
        clock.advance(1)
    # Two events failed for good: the trigger is disabled, and says why.
    assert failures() == ("disabled", 2, "failures")
    runs = triggers.list_trigger_runs(root, created["id"], {})["items"]
    # One run record per event (its attempts share the run id).
    assert [(r["status"], r["attempt"]) for r in runs] == [("failed", 2)] * 2


def test_a_reaped_attempt_that_will_be_retried_does_not_count_toward_max_failures(
    aws, clock, root, ran
):
    created = webhook_trigger(root, clock, event={"max_attempts": 2}, limits={"max_failures": 1})
    answer = deliver(created, clock, 4)[1]

    def die_after_start() -> None:
        aws.purge_delays()
        (message,) = aws.receive()
        aws.delete([message])
        now_ms = int(clock().timestamp() * 1000)
        fire = FireMessage.parse(message["Body"])
        assert events.start_event_run(fire, lease_ms=now_ms + 5000, now=clock()) is not None

    def trigger() -> tuple[str, int]:
        view = triggers.get_trigger_view(root, created["id"])
        return view["status"], view["consecutive_failures"]

    die_after_start()  # attempt 1 is lost: retried, not counted
    clock.advance(6)
    assert assembly.tick(now=clock()).reaped == 1
    assert trigger() == ("active", 0)
    assert event_of(answer).status == "pending"

    clock.advance(2)
    die_after_start()  # attempt 2, the last, is lost too: counted, and max_failures is 1
    clock.advance(6)
    assert assembly.tick(now=clock()).reaped == 1
    assert trigger() == ("disabled", 1)
    assert event_of(answer).status == "failed"
    assert ran == []
