"""The heartbeat: once a minute, find due, enqueue, reap. It claims nothing.

1. For each shard of the due index, read the rows with ``due_at <= now + lookahead``,
   page after page until the tick's deadline (``TICK_BUDGET_S``). The cost of a tick
   grows with what is due, never with what is registered, and nothing caps a shard at
   a fixed number of rows: what a tick does not reach is handed over to the next one
   through the cursor (step 3).
2. Each row's slots in ``(cursor, now + lookahead]`` are sent (ten per batch) with
   ``DelaySeconds`` rounded *down*, so the message lands up to a second early and the
   runner waits out the fraction: a fire starts on its second. No write per fire: the
   runner's claim is the fence (``dynamo.claim_slot_and_start``), taken when the fire
   is due, so overlap and busy are decided then, and a duplicate message never runs.
3. The shard's cursor (one item per shard) moves to the horizon before the sends, fenced
   on the value read, so two ticks never enqueue the same window twice. A send that
   fails moves it back to just before the first slot not sent: nothing is dropped.
4. A row whose slot is at or before the cursor was sent already. If that slot is
   ``OVERDUE_S`` past, its message was lost (a restart of the local stack, the dead-
   letter queue): it is sent again, after 1, 2, 4... times ``OVERDUE_S``; the claim's
   fence drops any spare. A fire that waited in a backlog runs late, with its lateness
   recorded: it is neither lost nor a failure.
5. A row that is due only because of a lease (a run that never settled) is reaped,
   fenced on the run id and its lease, and recorded ``lost``.

Whoever else sets a slot at or before the cursor (a create, an edit, an enable, a
workflow's ``next_fire_at``) sends its message itself: ``enqueue_if_sent_window``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from chalicelib.domain import schedule
from chalicelib.domain.codec import decode_schedule
from chalicelib.domain.ids import schedule_run_id
from chalicelib.domain.settle import Limits, disable_reason_after_run
from chalicelib.observability import logger, record_metric
from chalicelib.settings import get_settings
from chalicelib.store import dynamo
from chalicelib.store.models import EventModel, TriggerModel
from chalicelib.store.sqs import MAX_DELAY_S, FireMessage, send_fires

__all__ = [
    "TickReport",
    "tick",
    "reap_expired",
    "refresh_due",
    "sweep_hooks",
    "fire_message",
    "enqueue_if_sent_window",
    "OVERDUE_S",
    "TICK_BUDGET_S",
]

# A slot this long past, still the trigger's next one, lost its message: send it again.
OVERDUE_S = 120
# A tick stops reading due rows after this long (the heartbeat Lambda's timeout is 60 s)
# and hands what it did not reach to the next tick through the cursor.
TICK_BUDGET_S = 40.0
# At most this many slots of one trigger are sent by one tick (a schedule faster than
# the lookahead): the rest are sent by the next tick.
MAX_SLOTS_PER_ROW = 60


@dataclass
class TickReport:
    """What one tick saw and did."""

    rows_read: int = 0
    due: int = 0  # slots sent for the first time
    overdue: int = 0  # slots sent again: their first message was lost
    reaped: int = 0
    send_failed: int = 0
    enqueued: int = 0
    handed_over: int = 0  # shards whose rows the tick did not all reach (deadline)
    events_dispatched: int = 0
    events_recovered: int = 0  # running events whose bookkeeping the sweep finished
    sent_late: int = 0  # future slots whose message went out after their second
    errors: int = 0  # AWS calls that failed; each cost only its own row
    duration_ms: float = 0.0
    send_ms: float = 0.0
    run_ids: list[str] = field(default_factory=list)
    now_ms: int = 0  # the tick's now, and its start on the process clock
    started: float = 0.0

    def add(self, other: TickReport) -> None:
        """Add the counts of ``other`` (one row's work) to these."""
        for name in _COUNTS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.run_ids += other.run_ids


_COUNTS = tuple(
    name for name, kind in TickReport.__annotations__.items() if kind == "int" and name != "now_ms"
)


# Extra passes run by each tick after the sends (e.g. the pending-event sweep);
# each takes ``now`` and the report.
sweep_hooks: list = []


def _ms(at: datetime) -> int:
    return int(round(at.timestamp() * 1000))


def _dt(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def fire_message(trigger_id: str, slot_ms: int, sched: str, *, now_ms: int) -> FireMessage:
    """The message of one scheduled slot, delayed to land at most a second early.

    ``DelaySeconds`` is whole seconds: rounded down, the message is visible up to 1 s
    before the slot and the runner waits out the fraction (rounded up, every fire would
    start 0-1 s late).
    """
    try:
        # The tenant rides in the due row's schedule (``tn``): the message's MessageGroupId.
        tenant = json.loads(sched or "{}").get("tn")
    except (ValueError, AttributeError):
        tenant = None
    return FireMessage(
        run_id=schedule_run_id(trigger_id, slot_ms),
        trigger_id=trigger_id,
        surface="schedule",
        scheduled_ms=slot_ms,
        sched=sched,
        delay_s=max(0, min(MAX_DELAY_S, (slot_ms - now_ms) // 1000)),
        tenant=tenant if isinstance(tenant, str) else None,
    )


def _overdue_again(age_ms: int, *, period_ms: int) -> bool:
    """Whether a slot ``age_ms`` past is sent again by this tick: once its age crosses
    1, 2, 4, 8... times ``OVERDUE_S`` (so a backlog is not flooded with spares)."""
    step = OVERDUE_S * 1000
    if age_ms < step:
        return False
    mark = step
    while mark * 2 <= age_ms:
        mark *= 2
    return age_ms - period_ms < mark


def _slots(row: dynamo.DueRow, *, cursor: int | None, horizon_ms: int, now_ms: int) -> list[int]:
    """The slots of ``row`` this tick sends: new ones in ``(cursor, horizon]``, or an overdue one."""
    if row.next_fire_at is None or not row.sched:
        return []
    first = int(row.next_fire_at)
    out: list[int] = []
    if cursor is not None and first <= cursor:
        # After a gap (no tick ran while the window passed: downtime, a restart) every
        # overdue slot goes out at once; in steady state only at its backoff marks.
        gap = cursor < now_ms
        age_ms = now_ms - first
        if age_ms >= OVERDUE_S * 1000 and (
            gap or _overdue_again(age_ms, period_ms=get_settings().heartbeat_s * 1000)
        ):
            out.append(first)
    if first <= horizon_ms and (cursor is None or first > cursor):
        out.append(first)
    # The slots after it, up to the horizon (a schedule faster than the lookahead). Only
    # future ones: after downtime the late first slot's claim moves past now (a trigger
    # fires once), so a missed slot's message could only be dropped.
    spec = decode_schedule(row.sched)
    following = schedule.next_fire_after(spec, _dt(max(first, now_ms)))
    while following is not None and len(out) < MAX_SLOTS_PER_ROW:
        slot = _ms(following)
        if slot > horizon_ms:
            break
        if cursor is None or slot > cursor:
            out.append(slot)
        following = schedule.next_fire_after(spec, following)
    return out


def _rows(
    shard: str, *, until_ms: int, after_ms: int | None, deadline: float
) -> Iterator[dynamo.DueRow | None]:
    """The due rows of a shard, earliest first; None once the deadline has passed."""
    for row in dynamo.iter_due(shard, until_ms=until_ms, after_ms=after_ms):
        if time.perf_counter() > deadline:
            yield None
            return
        yield row


def tick(*, now: datetime) -> TickReport:
    """One heartbeat at ``now``."""
    started = time.perf_counter()
    deadline = started + TICK_BUDGET_S
    settings = get_settings()
    report = TickReport(now_ms=_ms(now), started=started)
    now_ms = _ms(now)
    horizon_ms = now_ms + settings.lookahead_s * 1000
    # One failed AWS call costs only its own shard or row, never the whole tick.
    for shard_no in range(settings.due_shards):
        try:
            _tick_shard(
                str(shard_no), now=now, horizon_ms=horizon_ms, deadline=deadline, report=report
            )
        except Exception:
            report.errors += 1
            logger.exception("due shard failed; it is read again next tick")
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
    if report.overdue:
        record_metric("FiresResent", report.overdue)
    if report.reaped:
        record_metric("LeasesReaped", report.reaped)
    if report.errors:
        record_metric("HeartbeatErrors", report.errors)
    logger.info(
        "heartbeat",
        extra={k: v for k, v in report.__dict__.items() if k not in ("run_ids", "started")},
    )
    return report


def _tick_shard(
    shard: str, *, now: datetime, horizon_ms: int, deadline: float, report: TickReport
) -> None:
    """Enqueue one shard's window ``(cursor, horizon]``, then move its cursor (steps 1-5)."""
    now_ms = _ms(now)
    cursor = dynamo.get_cursor(shard)
    reach: int | None = horizon_ms if cursor is None else max(cursor, horizon_ms)
    computed: list[FireMessage] = []
    lease_rows: list[dynamo.DueRow] = []
    last_due: int | None = None

    def look_at(row: dynamo.DueRow) -> None:
        report.rows_read += 1
        slots = _slots(row, cursor=cursor, horizon_ms=horizon_ms, now_ms=now_ms)
        computed.extend(
            fire_message(row.trigger_id, s, row.sched or "", now_ms=now_ms) for s in slots
        )
        by_lease = row.next_fire_at is None or not row.sched or row.due_at < int(row.next_fire_at)
        if by_lease and row.due_at <= now_ms:
            lease_rows.append(row)  # due because of a lease that has run out: reap it

    # 1. The new rows, due after the cursor: what this tick is for. A row already sent
    #    and still waiting for its runner stays at the head of the index, so the new rows
    #    are read by key range, never behind a backlog of old ones.
    for row in _rows(shard, until_ms=horizon_ms, after_ms=cursor, deadline=deadline):
        if row is None:
            # Deadline: hand the rest over. A row not reached is due at or after the last
            # one reached, and its slots come at or after its due_at, so every slot up to
            # just before that instant is known: the cursor stops there.
            report.handed_over += 1
            stop = (last_due - 1) if last_due is not None else None
            reach = cursor if stop is None else stop if cursor is None else max(cursor, stop)
            break
        last_due = row.due_at
        look_at(row)
    # 2. The old rows (due at or before the cursor): overdue slots, the later slots of a
    #    schedule faster than the lookahead, expired leases. Cut by the deadline, they
    #    are read again next tick (a slot not reached goes out as overdue: late, not lost).
    if cursor is not None:
        for row in _rows(shard, until_ms=cursor, after_ms=None, deadline=deadline):
            if row is None:
                report.handed_over += 1
                break
            look_at(row)

    def is_overdue(m: FireMessage) -> bool:
        return cursor is not None and int(m.scheduled_ms or 0) <= cursor

    def is_new(m: FireMessage) -> bool:
        return not is_overdue(m) and reach is not None and int(m.scheduled_ms or 0) <= reach

    if reach != cursor and not dynamo.advance_cursor(shard, expected=cursor, cursor_ms=reach):
        # Another tick took this window first and sends it: only resend what is overdue.
        logger.info("another tick enqueued this shard's window", extra={"shard": shard})
        reach = cursor
    messages = [m for m in computed if is_overdue(m) or is_new(m)]
    report.overdue += sum(1 for m in messages if is_overdue(m))
    report.due += sum(1 for m in messages if not is_overdue(m))
    # Most urgent first: a fire due in two seconds must not wait for those due in fifty.
    messages.sort(key=lambda m: int(m.scheduled_ms or 0))
    _send(messages, shard=shard, cursor_before=cursor, cursor_after=reach, report=report)
    for row in lease_rows:
        try:
            item = dynamo.get_trigger(row.trigger_id)
            if item is not None:
                report.reaped += reap_expired(item, now=now)
                refresh_due(dynamo.get_trigger(row.trigger_id), now=now)
        except Exception:
            report.errors += 1
            logger.exception(
                "due row failed; it stays due for the next tick",
                extra={"trigger_id": row.trigger_id},
            )


def _send(
    messages: list[FireMessage],
    *,
    shard: str,
    cursor_before: int | None,
    cursor_after: int | None,
    report: TickReport,
) -> None:
    """Send ten at a time; if any new slot could not be sent, move the cursor back before it.

    ``DelaySeconds`` counts from when each batch is sent, not from the tick's ``now``: the
    reads and sends before it took time, and a fire must land on its second.
    """
    failed: list[FireMessage] = []
    sent_from = time.perf_counter()
    for start in range(0, len(messages), 10):
        sent_at_ms = report.now_ms + int((time.perf_counter() - report.started) * 1000)
        batch = [
            replace(
                m, delay_s=max(0, min(MAX_DELAY_S, (int(m.scheduled_ms or 0) - sent_at_ms) // 1000))
            )
            for m in messages[start : start + 10]
        ]
        report.sent_late += sum(
            1
            for m in batch
            if int(m.scheduled_ms or 0) < sent_at_ms
            and (cursor_before is None or int(m.scheduled_ms or 0) > cursor_before)
            and int(m.scheduled_ms or 0) >= report.now_ms
        )
        try:
            failed_now = send_fires(batch)
        except Exception:
            logger.exception("sending fires failed", extra={"shard": shard})
            failed_now = batch
        failed_ids = {m.run_id for m in failed_now}
        failed += failed_now
        for m in batch:
            if m.run_id not in failed_ids:
                report.run_ids.append(m.run_id)
    report.send_ms += (time.perf_counter() - sent_from) * 1000
    report.send_failed += len(failed)
    report.enqueued += len(messages) - len(failed)
    new_failed = [
        int(m.scheduled_ms or 0)
        for m in failed
        if cursor_before is None or int(m.scheduled_ms or 0) > cursor_before
    ]
    if not new_failed or cursor_after is None:
        return
    back = min(new_failed) - 1
    if cursor_before is not None:
        back = max(back, cursor_before)
    # Fenced on our own value: if another tick moved it meanwhile, the overdue pass
    # resends what failed here (late, never lost).
    if not dynamo.advance_cursor(shard, expected=cursor_after, cursor_ms=back):
        logger.warning("cursor moved by another tick; unsent fires go out as overdue")
    logger.warning(
        "enqueue failed; the next tick sends these fires again",
        extra={"shard": shard, "failed": len(new_failed)},
    )


def enqueue_if_sent_window(item: TriggerModel, *, now: datetime) -> bool:
    """Send the message of ``item``'s next slot if the heartbeat's cursor is already past it.

    Called by whoever sets a slot (create, edit, enable, a workflow's ``next_fire_at``):
    a slot inside a window the heartbeat has already enqueued would otherwise wait for
    the overdue pass. A slot after the cursor is the heartbeat's (a spare message sent
    by both is dropped by the claim's fence). False if nothing was sent.
    """
    if item.status != "active" or item.next_fire_at is None or not item.sched:
        return False
    settings = get_settings()
    shard = dynamo.shard_of(item.id, settings.due_shards)
    cursor = dynamo.get_cursor(shard)
    slot = int(item.next_fire_at)
    if cursor is None or slot > cursor:
        return False
    message = fire_message(item.id, slot, item.sched, now_ms=_ms(now))
    if send_fires([message]):
        logger.warning(
            "a slot inside the enqueued window could not be sent; the overdue pass will",
            extra={"trigger_id": item.id},
        )
        return False
    return True


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
        # A run that never started (a claim still waiting) is not a failure of its workflow.
        counts = not _event_will_retry(item, entry) and int(entry.get("s", 1)) == 1
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
            # Every rule, not only failures: an ``at`` trigger whose only run was lost is
            # over (it has no next slot) and must not stay active, never to fire again.
            if reason is not None:
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
