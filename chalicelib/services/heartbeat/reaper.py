"""Reaping: a run whose lease ran out is recorded ``lost`` and its claim cleared.

The reaper is fenced on the run id and its lease, so a run that settles meanwhile wins:
its ``lost`` record is written only while the run is in flight on the lease it read (one
transaction with a check of the entry), then the claim is reaped on that same lease.
After each reap the pipeline's ``after_lost`` hooks run (the event is retried or failed,
a budget hold charged, a backfill goes on).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from chalicelib.domain.epoch_ms import ms, opt_dt
from chalicelib.domain.records import Trigger
from chalicelib.domain.rules import (
    due_at,
    event_will_retry,
    surface_of_entry,
)
from chalicelib.domain.settle import Limits, disable_reason_after_run
from chalicelib.domain.trigger_spec import TriggerSpec
from chalicelib.observability import logger, record_metric
from chalicelib.services.alerts import detect as alerts
from chalicelib.services.pipeline import Pipeline
from chalicelib.services.runs import new_run_record
from chalicelib.settings import get_settings
from chalicelib.store import claims, event_reads, triggers
from chalicelib.store import runs as runs_store

__all__ = ["LOST_ERROR", "reap_expired", "record_terminal", "refresh_due"]

LOST_ERROR = "lost: the run did not settle before its lease expired (runner crashed or timed out)"


def record_terminal(
    item: Trigger,
    run_id: str,
    slot_ms: int | None,
    status: str,
    error: str,
    now: datetime,
    *,
    only_new: bool = False,
) -> None:
    """Record a scheduled slot that ended without running (``skipped``)."""
    run = new_run_record(item, run_id=run_id, surface="schedule", scheduled_ms=slot_ms, now=now)
    run = replace(run, status=status, error=error, finished_at=ms(now))
    if runs_store.put_run(run, only_new=only_new):
        record_metric("Runs", status=status)


def reap_expired(
    item: Trigger,
    *,
    now: datetime,
    pipeline: Pipeline,
    reap_all: bool = False,
    sparing: str | None = None,
    error: str = LOST_ERROR,
) -> int:
    """Reap every run of ``item`` whose lease has expired; each is recorded ``lost``.

    ``reap_all`` also reaps live leases: only for a restart of the local stack, where
    every run of the old process is known to be dead. ``sparing``: a run id never
    reaped here (the run whose claim is reaping). ``error``: why the runs were lost, as
    their records say (a restart of the local stack knows better than a lease).
    """
    now_ms = ms(now)
    reaped = 0
    for run_id, entry in triggers.in_flight_of(item).items():
        lease = triggers.entry_lease(entry)
        if (lease > now_ms and not reap_all) or run_id == sparing:
            continue
        if _reap_one(item, run_id, entry, lease=lease, now=now, pipeline=pipeline, error=error):
            reaped += 1
    return reaped


def _reap_one(
    item: Trigger,
    run_id: str,
    entry: dict,
    *,
    lease: int,
    now: datetime,
    pipeline: Pipeline,
    error: str = LOST_ERROR,
) -> bool:
    now_ms = ms(now)
    last_run = {"id": run_id, "status": "lost", "finished_at": now_ms, "error": error}
    slot = entry.get("t")
    # Record first, then reap: a reap whose record failed to write would be a lost run
    # that no record shows. The record lands only while the run is still in flight on
    # the lease read (one transaction): a run that settled since (the runner writes its
    # record after its settle), started (a new lease) or that another reaped is left
    # alone. If the reap is then fenced out (the run settled or started between the two
    # writes), the run's own record, written after its settle, replaces this one.
    if not _record_lost(
        item,
        run_id,
        surface_of_entry(entry),
        int(slot) if slot is not None else None,
        now,
        lease=lease,
        error=error,
        started_ms=_started_ms(entry),
    ):
        return False
    # A lost event attempt that will be retried is not (yet) a failure of the trigger,
    # as for a failed one (settle.will_retry): only an event's last attempt counts.
    # A run that never started (a claim still waiting) is not a failure of its workflow.
    counts = not _event_will_retry(item, entry) and int(entry.get("s", 1)) == 1
    if not claims.reap_run(
        item.id, run_id=run_id, lease_ms=lease, last_run=last_run, failure_counts=counts
    ):
        return False
    pipeline.after_lost(item=item, run_id=run_id, entry=entry, now=now)
    logger.warning(
        "lease expired; run reaped as lost", extra={"trigger_id": item.id, "run_id": run_id}
    )
    # The rules other than failures hold for a run that did not count too: an ``at``
    # trigger whose one claim was lost before it started has no slot left either.
    fresh = triggers.get_trigger(item.id)
    if fresh is not None and fresh.status == "active":
        reason = _disable_after_lost(fresh, now=now)
        if counts or reason is not None:
            alerts.note_lost(fresh, run_id=run_id, disabled_reason=reason, now=now)
    return True


def _disable_after_lost(fresh: Trigger, *, now: datetime) -> str | None:
    reason = disable_reason_after_run(
        kind=fresh.kind,
        succeeded=False,
        consecutive_failures=int(fresh.consecutive_failures),
        run_count=int(fresh.run_count),
        limits=Limits(max_failures=TriggerSpec.from_json(fresh.spec).max_failures),
        next_fire_at=opt_dt(triggers.next_slot_of(fresh)),
        now=now,
    )
    # Every rule, not only failures: an ``at`` trigger whose only run was lost is
    # over (it has no next slot) and must not stay active, never to fire again.
    if reason is not None and triggers.disable_trigger(fresh.id, reason=reason, now_ms=ms(now)):
        record_metric("Disables", reason=reason)
        return reason
    return None


def _event_will_retry(item: Trigger, entry: object) -> bool:
    """Whether a reaped run is an event attempt that another attempt will follow."""
    if not isinstance(entry, dict) or entry.get("k") != "e" or not entry.get("e"):
        return False
    try:
        event = event_reads.get_event(str(entry["e"]))
    except Exception:  # unknown: count it, as any lost run
        return False
    if event is None:
        return False
    max_attempts = TriggerSpec.from_json(item.spec).max_attempts
    return event.status == "running" and event_will_retry(
        int(event.attempt or 1), max_attempts=max_attempts
    )


def _started_ms(entry: dict) -> int | None:
    """When the runner started a run in flight (``a``), if it did start."""
    started = entry.get("a") if int(entry.get("s", 0) or 0) == 1 else None
    return int(started) if started is not None else None


def _record_lost(
    item: Trigger,
    run_id: str,
    surface: str,
    slot_ms: int | None,
    now: datetime,
    *,
    lease: int,
    error: str = LOST_ERROR,
    started_ms: int | None = None,
) -> bool:
    """Record the run ``lost``, only while it is in flight on ``lease``; False if not."""
    existing = runs_store.get_run(item.id, run_id)
    run = existing or new_run_record(
        item, run_id=run_id, surface=surface, scheduled_ms=slot_ms, now=now
    )
    # A run that started and then died: its record says when it started (the entry
    # kept it), not null as if it had never run.
    if run.started_at is None and started_ms is not None:
        run = replace(run, started_at=started_ms)
    run = replace(run, status="lost", error=error, finished_at=ms(now))
    if not runs_store.put_run_if_in_flight(run, lease_ms=lease):
        return False  # settled, or reaped by another, since the trigger was read
    record_metric("Runs", status="lost")
    return True


def refresh_due(item: Trigger | None, *, now: datetime) -> None:
    """Re-key ``item`` in the due index: its earliest lease or, if active, its next slot."""
    if item is None:
        return
    leases = [triggers.entry_lease(e) for e in triggers.in_flight_of(item).values()]
    active = item.status == "active" and triggers.next_slot_of(item) is not None
    if active and triggers.is_standing(item):
        wanted: int | None = triggers.STANDING_DUE  # its key never moves (``rules.stands``)
    else:
        wanted = due_at(leases, next_slot_ms=triggers.next_slot_of(item) if active else None)
    current = int(item.due_at) if item.due_at is not None else None
    if wanted != current:
        triggers.set_due(
            item.id,
            expected_due_at=current,
            due_at=wanted,
            shard=triggers.shard_of(item.id, get_settings().due_shards),
        )
