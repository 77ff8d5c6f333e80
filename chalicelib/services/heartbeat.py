"""The heartbeat: once a minute, reap, find due, claim, enqueue.

1. For each shard of the due index, read the rows with ``due_at <= now + lookahead``.
   The cost of a tick grows with what is due, never with what is registered.
2. A row whose slot is due is claimed with one conditional update that also advances
   ``next_fire_at`` past now. A failed condition means another heartbeat got there
   first (or the trigger changed): skip it.
3. A row that is due only because of a lease is inspected: expired leases are reaped
   (fenced on the run id) and recorded ``lost``, then the row is re-keyed.
4. Rows are claimed most urgent first (across shards) and sent ten at a time as they
   are claimed, with ``DelaySeconds`` counted from the send, so they land on their
   second. A fire whose message could not be sent is released, and the next tick
   retries it: a send failure never becomes a missed fire.
5. The claims run on ``heartbeat_workers`` threads (``CRONHOOK_HEARTBEAT_WORKERS``,
   8; the local stack, with moto in the same process, uses 1): a claim is a
   network round trip, and claims of different triggers never contend. Each row's outcome still comes back in order, so the sending order is
   unchanged, and a thread's failure costs only its own row.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from chalicelib.domain import schedule
from chalicelib.domain.ids import schedule_run_id
from chalicelib.domain.settle import Limits, disable_reason_after_run
from chalicelib.domain.spec import decode_schedule
from chalicelib.observability import logger, record_metric
from chalicelib.settings import get_settings
from chalicelib.store import dynamo
from chalicelib.store.models import EventModel, TriggerModel
from chalicelib.store.sqs import FireMessage, send_fires

__all__ = ["TickReport", "tick", "reap_expired", "refresh_due", "sweep_hooks"]


@dataclass
class TickReport:
    """What one tick saw and did."""

    rows_read: int = 0
    due: int = 0
    claimed: int = 0
    lost_races: int = 0
    skipped: int = 0
    busy: int = 0
    reaped: int = 0
    send_failed: int = 0
    enqueued: int = 0
    events_dispatched: int = 0
    events_recovered: int = 0  # running events whose bookkeeping the sweep finished
    errors: int = 0  # AWS calls that failed; each cost only its own row
    duration_ms: float = 0.0
    run_ids: list[str] = field(default_factory=list)

    def add(self, other: TickReport) -> None:
        """Add the counts of ``other`` (one row's work) to these."""
        for name in _COUNTS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.run_ids += other.run_ids


_COUNTS = tuple(name for name, kind in TickReport.__annotations__.items() if kind == "int")


# Extra passes run by each tick after the claims (e.g. the pending-event sweep);
# each takes ``now`` and the report.
sweep_hooks: list = []


def _ms(at: datetime) -> int:
    return int(round(at.timestamp() * 1000))


def _dt(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def _capacity(policy: dict) -> int:
    return int(policy.get("n", 1)) if policy.get("o") == "allow" else 1


def tick(*, now: datetime) -> TickReport:
    """One heartbeat at ``now``."""
    started = time.perf_counter()
    settings = get_settings()
    report = TickReport()
    now_ms = _ms(now)
    horizon_ms = now_ms + settings.lookahead_s * 1000
    # One failed AWS call costs only its own row (or shard): a tick that gave up at the
    # first error would drop every fire it had already claimed and not yet sent.
    rows: list[tuple[dynamo.DueRow, str]] = []
    for shard_no in range(settings.due_shards):
        shard = str(shard_no)
        try:
            rows.extend((row, shard) for row in dynamo.query_due(shard, until_ms=horizon_ms))
        except Exception:
            report.errors += 1
            logger.exception("due query failed; the shard is read again next tick")
    report.rows_read = len(rows)
    # Most urgent first, across shards, and sent ten at a time as they are claimed: a
    # fire due in two seconds must not wait for the claims of fires due in fifty.
    rows.sort(key=lambda pair: pair[0].due_at)
    claimed: list[tuple[FireMessage, str]] = []
    for part, message, shard in _process_rows(rows, now=now, horizon_ms=horizon_ms):
        report.add(part)
        if message is not None:
            claimed.append((message, shard))
        if len(claimed) >= 10:
            _send(claimed, now_ms=now_ms, started=started, report=report)
            claimed = []
    if claimed:
        _send(claimed, now_ms=now_ms, started=started, report=report)
    for hook in list(sweep_hooks):
        try:
            hook(now=now, report=report)
        except Exception:
            report.errors += 1
            logger.exception("heartbeat sweep failed; the next tick sweeps again")
    report.duration_ms = (time.perf_counter() - started) * 1000
    record_metric("HeartbeatDuration", report.duration_ms, unit="Milliseconds")
    record_metric("DueCount", report.due)
    record_metric("Fires", report.enqueued, surface="schedule")
    if report.lost_races:
        record_metric("ClaimsLost", report.lost_races)
    if report.reaped:
        record_metric("LeasesReaped", report.reaped)
    if report.errors:
        record_metric("HeartbeatErrors", report.errors)
    logger.info("heartbeat", extra={k: v for k, v in report.__dict__.items() if k != "run_ids"})
    return report


def _process_row(
    row: dynamo.DueRow, shard: str, *, now: datetime, horizon_ms: int
) -> tuple[TickReport, FireMessage | None, str]:
    """Claim one due row (or reap one whose lease is due): its own counts and message.

    Runs on a worker thread: it touches nothing but its own row and report, and one
    failed AWS call costs only this row (it stays due for the next tick).
    """
    part = TickReport()
    message = None
    try:
        if row.next_fire_at is not None and row.next_fire_at <= horizon_ms and row.sched:
            part.due += 1
            message = _claim_row(row, shard=shard, now=now, report=part)
        else:
            item = dynamo.get_trigger(row.trigger_id)
            if item is not None:
                part.reaped += reap_expired(item, now=now)
                refresh_due(dynamo.get_trigger(row.trigger_id), now=now)
    except Exception:
        part.errors += 1
        logger.exception(
            "due row failed; it stays due for the next tick",
            extra={"trigger_id": row.trigger_id},
        )
    return part, message, shard


_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _claim_pool(workers: int) -> ThreadPoolExecutor:
    """The claimers, kept across ticks: a warm Lambda reuses their threads (and clients)."""
    global _pool
    with _pool_lock:
        if _pool is None or _pool._max_workers != workers:
            _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="claim")
        return _pool


def _process_rows(
    rows: list[tuple[dynamo.DueRow, str]], *, now: datetime, horizon_ms: int
) -> Iterator[tuple[TickReport, FireMessage | None, str]]:
    """Each row's outcome, in the order of ``rows`` (most urgent first).

    With ``heartbeat_workers`` > 1 the claims run on that many threads: a claim is one
    conditional UpdateItem round trip, so a tick's claims per second grow with the
    workers (DynamoDB itself serialises the writes to one item, and claims of
    different triggers do not contend). Results still come back in order, so fires are
    sent most urgent first, ten at a time, as soon as they are claimed.
    """
    workers = get_settings().heartbeat_workers
    if workers <= 1 or len(rows) <= 1:
        for row, shard in rows:
            yield _process_row(row, shard, now=now, horizon_ms=horizon_ms)
        return
    pool = _claim_pool(workers)
    futures = [
        pool.submit(_process_row, row, shard, now=now, horizon_ms=horizon_ms) for row, shard in rows
    ]
    for future in futures:
        yield future.result()


def _send(
    claimed: list[tuple[FireMessage, str]], *, now_ms: int, started: float, report: TickReport
) -> None:
    """Send claimed fires; release the claim of any that could not be sent.

    ``DelaySeconds`` counts from when the message is sent, not from the tick's ``now``:
    the claims before it took time, and a fire must land on its second, not that late.
    """
    sent_at_ms = now_ms + int((time.perf_counter() - started) * 1000)
    messages = [
        replace(m, delay_s=max(0, (int(m.scheduled_ms or 0) - sent_at_ms + 999) // 1000))
        for m, _ in claimed
    ]
    failed = {m.run_id for m in send_fires(messages)}
    report.send_failed += len(failed)
    report.enqueued += len(messages) - len(failed)
    for message, shard in claimed:
        if message.run_id not in failed:
            report.run_ids.append(message.run_id)
            continue
        try:
            dynamo.release_claim(
                message.trigger_id,
                run_id=message.run_id,
                slot_ms=message.scheduled_ms,
                shard=shard,
            )
        except Exception:  # the claim stays until its lease expires: reaped, lost
            report.errors += 1
            logger.exception(
                "releasing an unsent claim failed",
                extra={"trigger_id": message.trigger_id, "run_id": message.run_id},
            )
            continue
        logger.warning(
            "enqueue failed; claim released for the next tick",
            extra={"trigger_id": message.trigger_id, "run_id": message.run_id},
        )


def _claim_row(
    row: dynamo.DueRow, *, shard: str, now: datetime, report: TickReport
) -> FireMessage | None:
    settings = get_settings()
    policy = json.loads(row.sched or "{}")
    spec = decode_schedule(row.sched or "{}")
    slot_ms = int(row.next_fire_at or 0)
    now_ms = _ms(now)
    next_slot = schedule.next_fire_after(spec, max(now, _dt(slot_ms)))
    next_slot_ms = _ms(next_slot) if next_slot is not None else None
    run_id = schedule_run_id(row.trigger_id, slot_ms)
    lease_ms = max(now_ms, slot_ms) + settings.lease_s * 1000
    capacity = _capacity(policy)
    for _attempt in range(2):
        outcome = dynamo.claim_slot(
            row.trigger_id,
            due_at=row.due_at,
            slot_ms=slot_ms,
            next_slot_ms=next_slot_ms,
            run_id=run_id,
            lease_ms=lease_ms,
            capacity=capacity,
            shard=shard,
        )
        if outcome == dynamo.ClaimResult.CLAIMED:
            report.claimed += 1
            return FireMessage(
                run_id=run_id,
                trigger_id=row.trigger_id,
                surface="schedule",
                scheduled_ms=slot_ms,
                delay_s=max(0, (slot_ms - now_ms + 999) // 1000),
                tenant=policy.get("tn"),
            )
        item = dynamo.get_trigger(row.trigger_id)
        if item is None or item.next_fire_at is None or int(item.next_fire_at) != slot_ms:
            report.lost_races += 1
            return None
        if item.status != "active":
            refresh_due(item, now=now)
            return None
        if item.due_at is not None and int(item.due_at) != row.due_at:
            row = dynamo.DueRow(row.trigger_id, int(item.due_at), slot_ms, row.sched)
        in_flight = dynamo.in_flight_of(item)
        if len(in_flight) < capacity:
            continue  # the row was stale; retry once with what we just read
        if reap_expired(item, now=now):
            report.reaped += 1
            item = dynamo.get_trigger(row.trigger_id)
            if item is None or item.due_at is None:
                return None
            row = dynamo.DueRow(row.trigger_id, int(item.due_at), slot_ms, row.sched)
            continue
        # The trigger is busy with a run that is still alive.
        if policy.get("o", "skip") == "skip" or slot_ms < now_ms - settings.lease_s * 1000:
            leases = [dynamo.entry_lease(e) for e in in_flight.values()]
            due = min([*leases, next_slot_ms] if next_slot_ms else leases)
            # Record first, then move past the slot: if the record cannot be written the
            # slot stays due and the next tick tries again, so a skip never goes unrecorded.
            # The record is only created, never overwritten: if another heartbeat ran this
            # slot, its run's own record wins.
            _record_terminal(
                item,
                run_id,
                slot_ms,
                "skipped",
                "previous run still in flight (overlap: skip)",
                now,
                only_new=True,
            )
            if dynamo.advance_slot(
                row.trigger_id, slot_ms=slot_ms, next_slot_ms=next_slot_ms, due_at=due, shard=shard
            ):
                report.skipped += 1
            return None
        report.busy += 1  # buffer_one: it stays due and fires when the run settles
        return None
    report.lost_races += 1
    return None


def _record_terminal(
    item: TriggerModel,
    run_id: str,
    slot_ms: int | None,
    status: str,
    error: str,
    now: datetime,
    *,
    only_new: bool = False,
) -> None:
    from chalicelib.services.runs import new_run_record

    run = new_run_record(item, run_id=run_id, surface="schedule", scheduled_ms=slot_ms, now=now)
    run.status = status
    run.error = error
    run.finished_at = _ms(now)
    if dynamo.put_run(run, only_new=only_new):
        record_metric("Runs", status=status)


def reap_expired(item: TriggerModel, *, now: datetime, reap_all: bool = False) -> int:
    """Reap every run of ``item`` whose lease has expired; each is recorded ``lost``.

    ``reap_all`` also reaps live leases: only for a restart of the local stack, where
    every run of the old process is known to be dead.
    """
    from chalicelib.services.runs import lost_hooks

    now_ms = _ms(now)
    reaped = 0
    for run_id, entry in dynamo.in_flight_of(item).items():
        lease = dynamo.entry_lease(entry)
        if lease > now_ms and not reap_all:
            continue
        error = (
            "lost: the run did not settle before its lease expired (runner crashed or timed out)"
        )
        last_run = {"id": run_id, "status": "lost", "finished_at": now_ms, "error": error}
        surface = {"s": "schedule", "e": "event", "m": "manual", "b": "backfill"}.get(
            entry.get("k", "s"), "schedule"
        )
        slot = entry.get("t")
        # Record first, then reap: a reap whose record failed to write would be a lost run
        # that no record shows. If the reap is then fenced out (the run started after
        # all), the run's own record replaces this one when it settles.
        _record_lost(item, run_id, surface, int(slot) if slot is not None else None, error, now)
        # A lost event attempt that will be retried is not (yet) a failure of the trigger,
        # as for a failed one (runner._will_retry): only an event's last attempt counts.
        counts = not _event_will_retry(item, entry)
        if not dynamo.reap_run(
            item.id, run_id=run_id, lease_ms=lease, last_run=last_run, failure_counts=counts
        ):
            continue
        reaped += 1
        for hook in lost_hooks:
            hook(item=item, run_id=run_id, entry=entry, now=now)
        logger.warning(
            "lease expired; run reaped as lost", extra={"trigger_id": item.id, "run_id": run_id}
        )
        fresh = dynamo.get_trigger(item.id) if counts else None
        if fresh is not None and fresh.status == "active":
            limits = json.loads(fresh.spec).get("limits") or {}
            reason = disable_reason_after_run(
                kind=fresh.kind,
                succeeded=False,
                consecutive_failures=int(fresh.consecutive_failures),
                run_count=int(fresh.run_count),
                limits=Limits(max_failures=int(limits.get("max_failures") or 5)),
                next_fire_at=_dt(int(fresh.next_fire_at))
                if fresh.next_fire_at is not None
                else None,
                now=now,
            )
            if reason == "failures":
                dynamo.disable_trigger(item.id, reason=reason, now_ms=now_ms)
                record_metric("Disables", reason=reason)
    return reaped


def _event_will_retry(item: TriggerModel, entry: object) -> bool:
    """Whether a reaped run is an event attempt that another attempt will follow."""
    if not isinstance(entry, dict) or entry.get("k") != "e" or not entry.get("e"):
        return False
    try:
        event = EventModel.get(str(entry["e"]), consistent_read=True)
    except Exception:  # unknown: count it, as any lost run
        return False
    max_attempts = int((json.loads(item.spec or "{}").get("event") or {}).get("max_attempts") or 3)
    return event.status == "running" and int(event.attempt or 1) < max_attempts


def _record_lost(
    item: TriggerModel, run_id: str, surface: str, slot_ms: int | None, error: str, now: datetime
) -> None:
    from chalicelib.services.runs import new_run_record

    existing = dynamo.get_run(item.id, run_id)
    run = existing or new_run_record(
        item, run_id=run_id, surface=surface, scheduled_ms=slot_ms, now=now
    )
    run.status = "lost"
    run.error = error
    run.finished_at = _ms(now)
    dynamo.put_run(run)
    record_metric("Runs", status="lost")


def refresh_due(item: TriggerModel | None, *, now: datetime) -> None:
    """Re-key ``item`` in the due index: its earliest lease or, if active, its next slot."""
    if item is None:
        return
    settings = get_settings()
    leases = [dynamo.entry_lease(e) for e in dynamo.in_flight_of(item).values()]
    candidates = list(leases)
    if item.status == "active" and item.next_fire_at is not None:
        candidates.append(int(item.next_fire_at))
    wanted = min(candidates) if candidates else None
    current = int(item.due_at) if item.due_at is not None else None
    if wanted != current:
        dynamo.set_due(
            item.id,
            expected_due_at=current,
            due_at=wanted,
            shard=dynamo.shard_of(item.id, settings.due_shards),
        )
