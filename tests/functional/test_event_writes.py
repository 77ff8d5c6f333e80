"""The fenced writes of an event's life (``store/event_writes``): each counts once, or not at all."""

from __future__ import annotations

import dataclasses

import pytest

from chalicelib.domain.event_rules import pending_key
from chalicelib.domain.records import EventRecord
from chalicelib.store import event_reads, event_writes
from chalicelib.store import runs as run_store
from chalicelib.store.runs import RunModel

NOW = 1_790_000_000_000
TRIGGER = "trg_events_writes"
RUN = "run_1"


def _event(event_id: str = "evt_1", *, until: int = NOW + 60_000) -> EventRecord:
    return EventRecord(
        id=event_id,
        trigger_id=TRIGGER,
        tenant="t1",
        received_ms=NOW,
        received_sk=f"{NOW:013d}#{event_id}",
        status="pending",
        run_id=RUN,
        attempt=0,
        source="webhook",
        pending_trigger=TRIGGER,
        pending_shard="0",
        pending_sk=pending_key(NOW, RUN),
        dedupe_until=until,
    )


@pytest.fixture
def stored(aws) -> EventRecord:
    assert event_writes.put_event(_event(), now_ms=NOW) is None
    return _event()


def test_a_second_put_within_the_dedupe_window_returns_the_original(stored):
    again = dataclasses.replace(_event(), run_id="run_2")
    original = event_writes.put_event(again, now_ms=NOW + 1)
    assert original is not None and original.run_id == RUN


def test_a_put_after_the_dedupe_window_stores_the_event_again(aws):
    assert event_writes.put_event(_event(until=NOW + 10), now_ms=NOW) is None
    fresh = dataclasses.replace(_event(), run_id="run_2")
    assert event_writes.put_event(fresh, now_ms=NOW + 11) is None
    assert event_reads.get_event("evt_1").run_id == "run_2"


def test_an_event_starts_once_and_leaves_its_queue(stored):
    kw = dict(run_id=RUN, now_ms=NOW, lease_ms=NOW + 5_000, ready_by_ms=NOW + 1_000)
    started = event_writes.start_attempt("evt_1", **kw)
    assert started is not None
    assert event_writes.start_attempt("evt_1", **kw) is None  # a duplicate message
    event = event_reads.get_event("evt_1")
    assert (event.status, event.attempt, event.pending_trigger) == ("running", 1, None)
    assert event.pending_sk == pending_key(NOW, RUN)  # still in the sweep's index
    assert event_reads.queue_of(TRIGGER, limit=5) == []


def test_a_start_for_another_run_id_is_fenced_out(stored):
    kw = dict(now_ms=NOW, lease_ms=NOW + 5_000, ready_by_ms=NOW + 1_000)
    assert event_writes.start_attempt("evt_1", run_id="run_other", **kw) is None


def _running(stored) -> None:
    assert event_writes.start_attempt(
        "evt_1", run_id=RUN, now_ms=NOW, lease_ms=NOW + 5_000, ready_by_ms=NOW + 1_000
    )


def test_a_retry_waits_out_its_backoff_before_it_can_be_queued_or_started(stored):
    _running(stored)
    ready = NOW + 8_000
    assert event_writes.wait_again(
        "evt_1", run_id=RUN, ready_ms=ready, shard="0", counted=True, max_attempts=3
    )
    assert not event_writes.requeue("evt_1", run_id=RUN, trigger_id=TRIGGER, ready_by_ms=ready - 1)
    assert (
        event_writes.start_attempt(
            "evt_1", run_id=RUN, now_ms=NOW, lease_ms=NOW + 5_000, ready_by_ms=ready - 1
        )
        is None
    )
    assert event_writes.requeue("evt_1", run_id=RUN, trigger_id=TRIGGER, ready_by_ms=ready)
    assert not event_writes.requeue("evt_1", run_id=RUN, trigger_id=TRIGGER, ready_by_ms=ready)
    assert [r.id for r in event_reads.queue_of(TRIGGER, limit=5)] == ["evt_1"]


def test_a_retry_holds_only_while_attempts_are_left(stored):
    _running(stored)
    assert not event_writes.wait_again(
        "evt_1", run_id=RUN, ready_ms=NOW, shard="0", counted=True, max_attempts=1
    )
    assert event_reads.get_event("evt_1").status == "running"


def test_a_deferral_gives_its_attempt_back(stored):
    _running(stored)
    assert event_writes.wait_again(
        "evt_1", run_id=RUN, ready_ms=NOW + 5_000, shard="0", counted=False, max_attempts=1
    )
    event = event_reads.get_event("evt_1")
    assert (event.status, event.attempt, event.retry_at) == ("pending", 0, None)


def test_an_attempt_ends_once_and_leaves_the_sweeps_index(stored):
    _running(stored)
    assert event_writes.end_attempt("evt_1", run_id=RUN, status="succeeded", now_ms=NOW + 9)
    assert not event_writes.end_attempt("evt_1", run_id=RUN, status="failed", now_ms=NOW + 10)
    event = event_reads.get_event("evt_1")
    assert (event.status, event.finished_ms, event.pending_sk) == ("succeeded", NOW + 9, None)


def test_a_pending_event_that_will_never_run_ends_but_a_running_one_does_not(stored):
    assert event_writes.end_pending("evt_1", run_id=RUN, status="skipped", now_ms=NOW)
    assert event_reads.get_event("evt_1").status == "skipped"
    assert event_writes.put_event(_event("evt_2"), now_ms=NOW) is None
    _running_2 = event_writes.start_attempt(
        "evt_2", run_id=RUN, now_ms=NOW, lease_ms=NOW + 5_000, ready_by_ms=NOW + 1_000
    )
    assert _running_2 is not None
    assert not event_writes.end_pending("evt_2", run_id=RUN, status="skipped", now_ms=NOW)


def test_a_replay_is_fenced_on_the_status_and_run_it_was_read_with(stored):
    _running(stored)
    event_writes.end_attempt("evt_1", run_id=RUN, status="failed", now_ms=NOW)
    read, stale = event_reads.get_event("evt_1"), event_reads.get_event("evt_1")
    assert event_writes.reset_for_replay(
        read, run_id="run_2", trigger_id=TRIGGER, shard="0", now_ms=NOW + 1
    )
    assert not event_writes.reset_for_replay(  # a second replay, read at the same time
        stale, run_id="run_3", trigger_id=TRIGGER, shard="0", now_ms=NOW + 2
    )
    event = event_reads.get_event("evt_1")
    assert (event.status, event.run_id, event.attempt) == ("pending", "run_2", 0)


def _run(finished: int | None, status: str) -> RunModel:
    return RunModel(
        TRIGGER,
        RUN,
        tenant="t1",
        sort_key="k",
        surface="event",
        status=status,
        workflow="echo",
        finished_at=finished,
    )


def test_a_recovered_run_record_never_overwrites_this_attempts_own(aws):
    assert event_writes.put_recovered_run(_run(NOW, "lost"), started_ms=NOW - 5)
    assert not event_writes.put_recovered_run(_run(NOW + 1, "failed"), started_ms=NOW - 5)
    assert run_store.get_run(TRIGGER, RUN, consistent=True).status == "lost"
    # A record of an older attempt (it ended before this one started) is replaced.
    assert event_writes.put_recovered_run(_run(NOW + 100, "failed"), started_ms=NOW + 50)
    assert run_store.get_run(TRIGGER, RUN, consistent=True).status == "failed"
