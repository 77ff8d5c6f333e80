"""Which slots a tick sends, and the message of one slot."""

from __future__ import annotations

import json
from datetime import datetime

from chalicelib.domain import schedule
from chalicelib.domain.codec import decode_schedule
from chalicelib.domain.epoch_ms import dt, ms
from chalicelib.domain.ids import schedule_run_id
from chalicelib.domain.records import Trigger
from chalicelib.domain.rules import LEASE_LEFT_TO_NEXT_CLAIM_MS
from chalicelib.observability import logger
from chalicelib.settings import get_settings
from chalicelib.store import cursors, triggers
from chalicelib.store.sqs import MAX_DELAY_S, FireMessage, send_fires

__all__ = [
    "OVERDUE_S",
    "MAX_SLOTS_PER_ROW",
    "fire_message",
    "fire_at",
    "overdue_again",
    "slots_of",
    "standing_slots",
    "MAX_STANDING_SLOTS",
    "enqueue_if_sent_window",
]

# A slot this long past, still the trigger's next one, lost its message: send it again.
OVERDUE_S = 120
# At most this many slots of one trigger are sent by one tick (a schedule faster than
# the lookahead): the rest are sent by the next tick.
MAX_SLOTS_PER_ROW = 60
# The same for a standing row, whose slots are known only from its window: a tick that
# reaches it ends its window at the last slot it sent (``shards._Window``).
MAX_STANDING_SLOTS = 600


def fire_message(
    trigger_id: str, slot_ms: int, sched: str, *, now_ms: int, standing_shard: str | None = None
) -> FireMessage:
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
    # A jittered slot's message lands at its fire_at (a delay over 900 s lands early and
    # the runner sends it on again, ``Runner._postpone``).
    fire_ms = fire_at(trigger_id, slot_ms, sched)
    return FireMessage(
        run_id=schedule_run_id(trigger_id, slot_ms),
        trigger_id=trigger_id,
        surface="schedule",
        scheduled_ms=slot_ms,
        sched=sched,
        delay_s=max(0, min(MAX_DELAY_S, (fire_ms - now_ms) // 1000)),
        tenant=tenant if isinstance(tenant, str) else None,
        standing_shard=standing_shard,
    )


def fire_at(trigger_id: str, slot_ms: int, sched: str | None) -> int:
    """When the slot's fire is due: the slot, plus its jitter if the schedule has one."""
    if not sched or '"j":' not in sched:
        return slot_ms
    return schedule.fire_at_ms(trigger_id, slot_ms, decode_schedule(sched))


def overdue_again(age_ms: int, *, period_ms: int) -> bool:
    """Whether a slot ``age_ms`` past is sent again by this tick: once its age crosses
    1, 2, 4, 8... times ``OVERDUE_S`` (so a backlog is not flooded with spares)."""
    step = OVERDUE_S * 1000
    if age_ms < step:
        return False
    mark = step
    while mark * 2 <= age_ms:
        mark *= 2
    return age_ms - period_ms < mark


def slots_of(
    row: triggers.DueRow, *, cursor: int | None, horizon_ms: int, now_ms: int
) -> list[int]:
    """The slots of ``row`` this tick sends: new ones in ``(cursor, horizon]``, or an overdue one."""
    if row.next_fire_at is None or not row.sched:
        return []
    first = int(row.next_fire_at)
    out: list[int] = []
    if cursor is not None and first <= cursor:
        # After a gap (no tick ran while the window passed: downtime, a restart) every
        # overdue slot goes out at once; in steady state only at its backoff marks.
        gap = cursor < now_ms
        age_ms = now_ms - fire_at(row.trigger_id, first, row.sched)
        if age_ms >= OVERDUE_S * 1000 and (
            gap or overdue_again(age_ms, period_ms=get_settings().heartbeat_s * 1000)
        ):
            out.append(first)
    if first <= horizon_ms and (cursor is None or first > cursor):
        out.append(first)
    # The slots after it, up to the horizon (a schedule faster than the lookahead). Only
    # future ones: after downtime the late first slot's claim moves past now (a trigger
    # fires once), so a missed slot's message could only be dropped.
    spec = decode_schedule(row.sched)
    following = schedule.next_fire_after(spec, dt(max(first, now_ms)))
    while following is not None and len(out) < MAX_SLOTS_PER_ROW:
        slot = ms(following)
        if slot > horizon_ms:
            break
        if cursor is None or slot > cursor:
            out.append(slot)
        following = schedule.next_fire_after(spec, following)
    return out


def standing_slots(
    row: triggers.DueRow, *, cursor: int | None, horizon_ms: int, now_ms: int
) -> list[int]:
    """The slots of a standing row this tick sends, computed from its schedule.

    Normally those in ``(cursor, horizon]``. After a gap (``cursor < now``: no tick ran
    while the window passed), the first missed slot goes too, and runs once, late, with
    its lateness recorded (its claim moves the row past now: after downtime a trigger
    fires once), as a keyed row's does. Without a cursor (a new shard's first tick), the
    latest slot at or before now: the claim's fence drops it if it ran.
    """
    if not row.sched:
        return []
    spec = decode_schedule(row.sched)
    out: list[int] = []
    if cursor is not None and cursor < now_ms:
        first = schedule.next_fire_after(spec, dt(cursor))
        if first is not None and ms(first) <= now_ms:
            out.append(ms(first))
    elif cursor is None:
        # A standing schedule has a slot at least every LEASE_LEFT_TO_NEXT_CLAIM_MS (an
        # interval's every interval_s): the latest one is found in a few steps.
        period_ms = int(spec.interval_s) * 1000 if spec.interval_s else LEASE_LEFT_TO_NEXT_CLAIM_MS
        found = schedule.next_fire_after(spec, dt(now_ms - period_ms))
        latest = None
        while found is not None and ms(found) <= now_ms:
            latest = ms(found)
            found = schedule.next_fire_after(spec, found)
        if latest is not None:
            out.append(latest)
    start = now_ms if cursor is None or cursor < now_ms else cursor
    following = schedule.next_fire_after(spec, dt(start))
    while following is not None and len(out) < MAX_STANDING_SLOTS:
        slot = ms(following)
        if slot > horizon_ms:
            break
        out.append(slot)
        following = schedule.next_fire_after(spec, following)
    return out


def enqueue_if_sent_window(item: Trigger, *, now: datetime, next_sent: bool = False) -> bool:
    """Send the messages of ``item``'s slots inside the window the heartbeat already took.

    Called by whoever sets a slot (create, edit, enable, a workflow's ``next_fire_at``):
    a slot inside a window the heartbeat has already enqueued would otherwise wait for
    the overdue pass. That is the next slot and, as a tick would have sent them, the
    schedule's slots after it up to the cursor (a schedule edited to a faster one, or one
    faster than the lookahead: no tick sends a slot at or before its cursor). A slot
    after the cursor is the heartbeat's (a spare message sent by both is dropped by the
    claim's fence). ``next_sent``: the next slot's message is out already (an edit that
    kept the next slot and changed the schedule after it): only the slots after it.
    False if nothing was sent.
    """
    if item.status != "active" or item.next_fire_at is None or not item.sched:
        return False
    settings = get_settings()
    shard = triggers.shard_of(item.id, settings.due_shards)
    cursor = cursors.get_cursor(shard)
    slot = int(item.next_fire_at)
    if cursor is None or slot > cursor:
        return False
    now_ms = ms(now)
    slots = [slot]
    spec = decode_schedule(item.sched)
    following = schedule.next_fire_after(spec, dt(max(slot, now_ms)))
    while following is not None and ms(following) <= cursor and len(slots) < MAX_SLOTS_PER_ROW:
        slots.append(ms(following))
        following = schedule.next_fire_after(spec, following)
    # A standing item's claim is fenced on its pointer: its messages say so.
    standing_shard = (item.due_shard or None) if triggers.is_standing(item) else None
    messages = [
        fire_message(item.id, s, item.sched, now_ms=now_ms, standing_shard=standing_shard)
        for s in (slots[1:] if next_sent else slots)
    ]
    if not messages:
        return False
    failed = send_fires(messages)
    if failed:
        logger.warning(
            "slots inside the enqueued window could not be sent; the overdue pass will",
            extra={"trigger_id": item.id, "failed": len(failed)},
        )
    return len(failed) < len(messages)
