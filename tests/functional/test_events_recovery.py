"""An event whose run ended without its bookkeeping is finished by the heartbeat's sweep.

The runner settles the trigger (the slot is free), records the run, then its finish hook
records the attempt on the event. A process that dies in between (or a hook that fails)
left the event ``running`` for ever. These tests cut the runner at each of those points
and drive the heartbeat with an explicit clock: before the run's lease is over (plus the
sweep's grace) nothing happens; after it, the event ends as its run did, exactly once,
without running the workflow again (a lost attempt is retried, as a reaped run is).
"""

from __future__ import annotations

import pytest

from chalicelib import assembly
from chalicelib.domain.errors import Conflict
from chalicelib.services import events, triggers
from chalicelib.services.pipeline import AfterSettleFailed, Pipeline
from chalicelib.store import runs as runs_store
from chalicelib.store import triggers as triggers_store
from chalicelib.store.runs import RunModel
from chalicelib.store.sqs import FireMessage
from tests.scenarios import accept, event_of, webhook_trigger

pytestmark = pytest.mark.usefixtures("fresh_secrets")


class Crash(BaseException):
    """The process dies here (not an Exception: nothing in the runner catches it)."""


def without_event_hook(monkeypatch, how: str, runner_):
    """Cut ``runner_`` after it settled the trigger: the event's finish hook never records."""
    if how == "process dies":

        class Dies(events.EventRunPolicy):
            def after_settle(self, ctx):
                raise Crash()

        policies = tuple(Dies() if p is events.EVENT_RUNS else p for p in assembly.POLICIES)
        monkeypatch.setattr(runner_, "pipeline", Pipeline(policies))
    else:  # "hook fails": the runner retries it, then fails the message (not swallowed)

        def unavailable(*args, **kwargs):
            raise RuntimeError("ProvisionedThroughputExceededException (injected)")

        monkeypatch.setattr(events.attempts, "settle_event", unavailable)


def run_all(aws, runner_) -> list[str]:
    """Like ``aws.drain``, but a Crash leaves the message (a dead runner never deletes it)."""
    statuses = []
    for _ in range(20):
        aws.purge_delays()
        messages = aws.receive()
        if not messages:
            break
        for m in messages:
            try:
                statuses.append(runner_.handle(FireMessage.parse(m["Body"])))
            except Crash:
                statuses.append("crashed")
            except AfterSettleFailed:
                # The message would come back and finish the bookkeeping; here it is
                # deleted, as if it had been dead-lettered: the sweep is the last resort.
                statuses.append("hook failed")
        aws.delete(messages)
    return statuses


def past(clock, ms: int, seconds: float) -> None:
    """Move the clock to ``seconds`` after the instant ``ms``."""
    clock.advance((ms - clock().timestamp() * 1000) / 1000 + seconds)


@pytest.mark.parametrize("how", ["process dies", "hook fails"])
def test_a_succeeded_run_whose_event_was_not_recorded_ends_succeeded_once(
    aws, clock, root, ran, monkeypatch, how
):
    created = webhook_trigger(root, clock)
    answer = accept(created, clock, 1)
    run_ = assembly.build_runner(clock=clock)
    with monkeypatch.context() as m:
        without_event_hook(m, how, run_)
        assert run_all(aws, run_) == ["crashed" if how == "process dies" else "hook failed"]
    stuck = event_of(answer)
    assert (stuck.status, stuck.attempt) == ("running", 1)
    assert triggers_store.in_flight_of(triggers_store.get_trigger(created["id"])) == {}
    with pytest.raises(Conflict):  # replay refuses a running event
        events.replay_event(root, answer["event_id"], now=clock())

    # Not while the run's lease (plus the grace) could still cover a live run.
    past(clock, int(stuck.lease_ms), events.SWEEP_GRACE_S - 1)
    report = assembly.tick(now=clock())
    assert (report.events_recovered, report.events_dispatched) == (0, 0)
    assert event_of(answer).status == "running"

    clock.advance(2)
    report = assembly.tick(now=clock())
    assert (report.events_recovered, report.events_dispatched) == (1, 0)
    event = event_of(answer)
    assert (event.status, event.attempt) == ("succeeded", 1)
    assert event.finished_ms == int(clock().timestamp() * 1000)
    assert event.pending_sk is None and event.pending_shard is None  # out of the sweep's index

    # Exactly once: nothing queued, the workflow ran once, a second tick does nothing, and
    # a finish hook that runs late after all is fenced out.
    assert run_all(aws, run_) == []
    assert ran == [1]
    clock.advance(60)
    assert assembly.tick(now=clock()).events_recovered == 0
    late = events.settle_event(
        answer["event_id"],
        run_id=answer["run_id"],
        trigger_id=created["id"],
        status="failed",
        attempt=1,
        max_attempts=3,
        now_ms=int(clock().timestamp() * 1000),
    )
    assert late is None
    assert event_of(answer).status == "succeeded"
    run = triggers.get_run_view(root, answer["run_id"])
    assert (run["status"], run["attempt"], run["output"]) == ("succeeded", 1, {"n": 1})
    view = events.list_events(root, created["id"], {})["items"][0]
    assert view["status"] == "succeeded"
    # And it can be replayed now.
    clock.advance(1)
    assert events.replay_event(root, answer["event_id"], now=clock())["run_id"]


def test_a_failed_attempt_whose_event_was_not_recorded_is_retried(
    aws, clock, root, ran, monkeypatch
):
    created = webhook_trigger(root, clock, workflow="flaky", event={"max_attempts": 3})
    answer = accept(created, clock, 5)
    run_ = assembly.build_runner(clock=clock)
    with monkeypatch.context() as m:
        without_event_hook(m, "process dies", run_)
        assert run_all(aws, run_) == ["crashed"]
    stuck = event_of(answer)
    assert stuck.status == "running"
    past(clock, int(stuck.lease_ms), events.SWEEP_GRACE_S + 1)
    assert assembly.tick(now=clock()).events_recovered == 1
    event = event_of(answer)
    assert (event.status, event.attempt) == ("pending", 1)
    assert event.retry_at == int(clock().timestamp() * 1000) + 2000

    clock.advance(2)
    assert run_all(aws, run_) == ["succeeded"]
    event = event_of(answer)
    assert (event.status, event.attempt) == ("succeeded", 2)
    assert ran == [5, 5]  # the failed attempt and its one retry
    assert assembly.tick(now=clock()).events_recovered == 0


def test_a_run_settled_but_never_recorded_is_recorded_from_the_triggers_last_run(
    aws, clock, root, ran, monkeypatch
):
    created = webhook_trigger(root, clock)
    answer = accept(created, clock, 2)
    run_ = assembly.build_runner(clock=clock)

    def die(run, **kwargs):
        raise Crash()

    with monkeypatch.context() as m:
        m.setattr(runs_store, "put_run", die)  # the trigger is settled, the record never written
        assert run_all(aws, run_) == ["crashed"]
    assert RunModel.count(created["id"]) == 0
    item = triggers_store.get_trigger(created["id"])
    assert item.last_run["id"] == answer["run_id"] and triggers_store.in_flight_of(item) == {}
    stuck = event_of(answer)
    past(clock, int(stuck.lease_ms), events.SWEEP_GRACE_S + 1)
    assert assembly.tick(now=clock()).events_recovered == 1
    assert event_of(answer).status == "succeeded"
    assert ran == [2]
    run = triggers.get_run_view(root, answer["run_id"])
    assert (run["status"], run["attempt"]) == ("succeeded", 1)
    assert run["started_at"] is not None and run["finished_at"] is not None


@pytest.mark.parametrize(("max_attempts", "ends"), [(1, "failed"), (2, "succeeded")])
def test_a_run_that_left_no_trace_is_a_lost_attempt(
    aws, clock, root, ran, monkeypatch, max_attempts, ends
):
    created = webhook_trigger(root, clock, event={"max_attempts": max_attempts})
    answer = accept(created, clock, 3)
    run_ = assembly.build_runner(clock=clock)

    def die(run, **kwargs):
        raise Crash()

    with monkeypatch.context() as m:
        m.setattr(runs_store, "put_run", die)
        assert run_all(aws, run_) == ["crashed"]
    # A manual run of the trigger settles after it: the trigger's last_run no longer
    # tells how the event's run ended, and it has no record.
    clock.advance(1)
    manual = triggers.fire_now(root, created["id"], now=clock())
    assert run_all(aws, run_) == ["failed"]  # (a manual run has no payload: count fails)
    assert triggers_store.get_trigger(created["id"]).last_run["id"] == manual["run_id"]

    stuck = event_of(answer)
    past(clock, int(stuck.lease_ms), events.SWEEP_GRACE_S + 1)
    assert assembly.tick(now=clock()).events_recovered == 1
    run = triggers.get_run_view(root, answer["run_id"])
    assert run["status"] == "lost" and run["error"].startswith("lost:")
    clock.advance(2)
    run_all(aws, run_)
    event = event_of(answer)
    assert event.status == ends
    assert ran == ([3] if ends == "failed" else [3, 3])


def test_a_live_run_is_left_to_its_lease_and_a_reaped_one_is_retried_once(aws, clock, root, ran):
    created = webhook_trigger(root, clock)
    answer = accept(created, clock, 4)
    (message,) = aws.receive()
    aws.delete([message])
    now_ms = int(clock().timestamp() * 1000)
    lease_ms = now_ms + 600_000
    assert events.start_event_run(
        FireMessage.parse(message["Body"]), lease_ms=lease_ms, now=clock()
    )
    # A long run: its row is overdue for the sweep, but its run is in flight.
    clock.advance(300)
    report = assembly.tick(now=clock())
    assert (report.events_recovered, report.events_dispatched, report.reaped) == (0, 0, 0)
    assert event_of(answer).status == "running"
    # Its lease expires: the reaper (not the sweep) counts the lost attempt, once.
    past(clock, lease_ms, events.SWEEP_GRACE_S + 1)
    report = assembly.tick(now=clock())
    assert (report.reaped, report.events_recovered) == (1, 0)
    assert (event_of(answer).status, event_of(answer).attempt) == ("pending", 1)
    clock.advance(2)
    assert run_all(aws, assembly.build_runner(clock=clock)) == ["succeeded"]
    assert ran == [4]
    assert event_of(answer).status == "succeeded"


def test_a_lost_retry_message_is_resent_even_while_another_event_runs(aws, clock, root, ran):
    created = webhook_trigger(root, clock, workflow="flaky", event={"max_attempts": 3})
    first = accept(created, clock, 1)
    run_ = assembly.build_runner(clock=clock)
    aws.purge_delays()
    (message,) = aws.receive()
    assert run_.handle(FireMessage.parse(message["Body"])) == "failed"
    aws.delete([message])
    aws.purge_delays()
    aws.delete(aws.receive())  # the retry's message is lost
    assert event_of(first).status == "pending"

    # A second event takes the slot and runs for a long time.
    clock.advance(1)
    second = accept(created, clock, 2)
    (message,) = aws.receive()
    aws.delete([message])
    lease_ms = int(clock().timestamp() * 1000) + 600_000
    assert events.start_event_run(
        FireMessage.parse(message["Body"]), lease_ms=lease_ms, now=clock()
    )

    # The first event's retry is overdue: its message again, though the trigger is busy.
    clock.advance(2 + events.SWEEP_GRACE_S)
    assert assembly.tick(now=clock()).events_dispatched == 1
    assert run_all(aws, run_) == ["dropped"]  # full: back in the queue, pulled in its turn
    event = event_of(first)
    assert (event.status, event.pending_trigger) == ("pending", created["id"])
    assert event_of(second).status == "running"
    # Waiting in the queue behind a live run is not lost: nothing more is sent.
    clock.advance(60)
    assert assembly.tick(now=clock()).events_dispatched == 0
