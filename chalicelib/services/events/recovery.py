"""Finishing the bookkeeping of an event whose run ended without it.

The runner settles the trigger (the slot is free), records the run, then its
after-settle hook records the attempt on the event. A runner that dies between the
first and the last of these (or a hook that fails) leaves the event ``running`` with no
run in flight: never retried, never finished, and refused by replay. Recovery applies
what the hook would have, from what the run left behind (``event_rules.run_outcome``),
with the same fenced ``settle_event``: if the hook does run after all, only one counts.
The workflow is never run again for an attempt that is on record as finished.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from chalicelib.domain.event_rules import (
    RUN_ENDED,
    attempt_status,
    max_attempts_of,
    run_outcome,
)
from chalicelib.domain.records import EventRecord, Trigger
from chalicelib.observability import logger, record_metric
from chalicelib.services import runs
from chalicelib.services.events import attempts
from chalicelib.services.events.spec import event_spec, ms
from chalicelib.store import event_reads, event_writes, triggers
from chalicelib.store import runs as run_store

__all__ = ["recover", "outcome_of_run", "finish_if_run_over"]


def _last_run_of(item: Trigger | None) -> dict:
    if item is None or item.last_run is None:
        return {}
    last = item.last_run.as_dict() if hasattr(item.last_run, "as_dict") else item.last_run
    return last if isinstance(last, dict) else {}


def outcome_of_run(item: Trigger | None, event: EventRecord, *, now: datetime) -> str:
    """How the attempt of ``event`` ended; its run record is written if only ``last_run``
    (or nothing: ``lost``) says so. See ``event_rules.run_outcome`` for the order."""
    trigger_id, run_id = event.trigger_id, event.run_id
    started_ms = int(event.started_ms or 0)
    run = run_store.get_run(trigger_id, run_id, consistent=True)
    outcome = run_outcome(
        run_id=run_id,
        started_ms=started_ms,
        record_status=run.status if run is not None else None,
        record_finished_ms=int(run.finished_at) if run and run.finished_at is not None else None,
        last_run=_last_run_of(item),
        now_ms=ms(now),
    )
    if outcome.found_in == "record" or item is None:
        return outcome.status  # on record already; or the trigger is gone: no new record
    record = runs.new_run_record(
        item,
        run_id=run_id,
        surface="event",
        scheduled_ms=None,
        now=datetime.fromtimestamp(started_ms / 1000, tz=UTC) if started_ms else now,
        event_id=event.id,
    )
    record = replace(
        record,
        status=outcome.status,
        error=outcome.error,
        started_at=started_ms or None,
        finished_at=outcome.finished_ms,
        attempt=int(event.attempt or 1),
    )
    if event_writes.put_recovered_run(record, started_ms=started_ms):
        record_metric("Runs", status=outcome.status, surface="event")
        return outcome.status
    # A record of this attempt was there after all (a late runner's): it is the better one.
    written = run_store.get_run(trigger_id, run_id, consistent=True)
    if written is not None and written.status in RUN_ENDED:
        return str(written.status)
    return outcome.status


def recover(event: EventRecord, *, now: datetime) -> str | None:
    """Finish the bookkeeping of a running event whose run is over; None if not ours to do.

    A failed or lost attempt is retried while attempts are left.
    """
    trigger_id, run_id = event.trigger_id, event.run_id
    item = triggers.get_trigger(trigger_id)  # consistent: a run still in flight is the reaper's
    if item is not None and run_id in triggers.in_flight_of(item):
        return None
    status = outcome_of_run(item, event, now=now)
    attempt = int(event.attempt or 1)
    # A deleted trigger: no retry.
    max_attempts = max_attempts_of(event_spec(item)[1]) if item is not None else attempt
    outcome = attempts.settle_event(
        event.id,
        run_id=run_id,
        trigger_id=trigger_id,
        status=attempt_status(status),
        attempt=attempt,
        max_attempts=max_attempts,
        now_ms=ms(now),
    )
    if outcome is None:
        return None  # the finish hook (or another sweep) got there first
    record_metric("EventAttempts", outcome=outcome)
    logger.warning(
        "event bookkeeping finished by the sweep (its run ended without it)",
        extra={"trigger_id": trigger_id, "event_id": event.id, "run_id": run_id, "run": status},
    )
    return outcome


def finish_if_run_over(event_id: str, *, run_id: str, now: datetime) -> None:
    """A message of an event still ``running`` whose run is no longer in flight: the run
    settled but its bookkeeping failed (the after-settle hook raised, so the message came
    back). Finish it now, from the run's record, instead of waiting for the sweep."""
    event = event_reads.get_event(event_id)
    if event is not None and event.status == "running" and event.run_id == run_id:
        recover(event, now=now)
