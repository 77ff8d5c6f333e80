"""The start of an event run: the runner's first step for a message of an event.

An event run is claimed and started in one write (``claim_and_start``, capacity = the
trigger's ``concurrency``), then the event flips pending → running with a conditional
update that is the start fence of this event. A full trigger leaves the event pending:
every settled event run pulls the oldest ready pending event of its trigger (``pull``),
so a burst drains run after run without waiting for heartbeat ticks.
"""

from __future__ import annotations

from datetime import datetime

from chalicelib.domain.records import EventRecord, Trigger
from chalicelib.domain.trigger_spec import TriggerSpec
from chalicelib.observability import record_metric
from chalicelib.services.events.pull import dispatch_pending, message_for
from chalicelib.services.events.recovery import finish_if_run_over
from chalicelib.services.events.spec import ms
from chalicelib.services.events.window import window_turn
from chalicelib.settings import get_settings
from chalicelib.store import claims, event_reads, event_writes, triggers
from chalicelib.store.sqs import FireMessage

__all__ = ["EARLY_MS", "start_event_run", "started_message"]

# SQS DelaySeconds are whole seconds, rounded up: a retry message may land this early.
EARLY_MS = 1000


def start_event_run(
    message: FireMessage, *, lease_ms: int, now: datetime
) -> tuple[Trigger, EventRecord] | None:
    """Claim and start an event run; None if it must not run now (full, duplicate, gone).

    1. Read the trigger: a disabled or deleted one ends the event ``skipped``; a full one
       leaves it pending (every run in flight pulls the next event when it settles).
    2. Arrival order: if an older event of this trigger waits, run that one in this
       message's place; this one is pulled in its turn.
    3. Claim a slot and start in one write (capacity = the trigger's ``concurrency``).
    4. Flip the event pending → running for this run id. A duplicate delivery fails
       here: the slot is given back (fenced on our lease) and the next event pulled.
    """
    now_ms = ms(now)
    if not message.event_id:
        return None
    item = triggers.get_trigger(message.trigger_id)
    if item is None or item.status != "active":
        _skip(item, message, now_ms=now_ms)
        return None
    if message.scheduled_ms is not None:
        # A retry or deferral whose wait is over (or the sweep's resend): back in the queue,
        # so that if it cannot start now, a run in flight pulls it in its turn.
        event_writes.requeue(
            message.event_id,
            run_id=message.run_id,
            trigger_id=item.id,
            ready_by_ms=now_ms + EARLY_MS,
        )
    capacity = TriggerSpec.from_json(item.spec).concurrency
    in_flight = triggers.in_flight_of(item)
    if len(in_flight) >= capacity and message.run_id not in in_flight:
        # A slot freed since our read was freed by a run that pulls the next event.
        return None
    turn = _in_turn(item, message, in_flight=in_flight, now=now)
    if turn is not None:  # a debounced or batched trigger: only once its window is due
        turn = window_turn(item, message, turn, now_ms=now_ms)
    if turn is None:
        return None
    return _claim_and_flip(
        item, turn, capacity=capacity, room=len(in_flight) < capacity, lease_ms=lease_ms, now=now
    )


def _skip(item: Trigger | None, message: FireMessage, *, now_ms: int) -> None:
    """The trigger is disabled or gone: the event will never run."""
    if event_writes.end_pending(
        str(message.event_id), run_id=message.run_id, status="skipped", now_ms=now_ms
    ):
        record_metric("EventsSkipped")
    if item is not None:
        dispatch_pending(item.id)  # skip the rest of the queue in turn


def _in_turn(
    item: Trigger, message: FireMessage, *, in_flight: dict, now: datetime
) -> FireMessage | None:
    """The message to run: this one, or the queue's head if an older event waits."""
    queue = event_reads.queue_of(item.id, limit=1)
    if queue and queue[0].id != message.event_id:
        # Not our turn, but the trigger has room: run the queue's head in this message's
        # place (this event waits its turn and is pulled by a run before it). Dropping the
        # message would leave the room empty until the head's own message came round.
        # This message's own event is not waiting: if it is a redelivery whose run ended
        # without its bookkeeping (a finish hook failed), finish that first.
        if message.run_id not in in_flight:
            finish_if_run_over(str(message.event_id), run_id=message.run_id, now=now)
        head = message_for(queue[0])
        if head is None:
            return None
        message = head
    return message


def _claim_and_flip(
    item: Trigger,
    message: FireMessage,
    *,
    capacity: int,
    room: bool,
    lease_ms: int,
    now: datetime,
) -> tuple[Trigger, EventRecord] | None:
    """Steps 3 and 4: claim a slot and start, then the event's own start fence."""
    event_id, now_ms = str(message.event_id), ms(now)
    outcome, claimed = claims.claim_and_start(
        item.id,
        run_id=message.run_id,
        surface="event",
        lease_ms=lease_ms,
        capacity=capacity,
        shard=triggers.shard_of(item.id, get_settings().due_shards),
        event_id=event_id,
        started_ms=now_ms,
    )
    if outcome != claims.ClaimResult.CLAIMED or claimed is None:
        if room:
            # There was room when we read the trigger, so the claim lost a race: maybe to
            # a second message of the same event. Nobody may be left to pull the next
            # event into that room, so pull it (at worst an extra, harmless message).
            dispatch_pending(item.id)
        return None
    event = event_writes.start_attempt(
        event_id,
        run_id=message.run_id,
        now_ms=now_ms,
        lease_ms=lease_ms,
        ready_by_ms=now_ms + EARLY_MS,
    )
    if event is None:
        claims.drop_claim(item.id, run_id=message.run_id, lease_ms=lease_ms)
        finish_if_run_over(event_id, run_id=message.run_id, now=now)
        dispatch_pending(item.id)
        return None
    if len(triggers.in_flight_of(claimed)) < capacity:
        # Room for more (concurrency > 1): start the next event too, so that a queue
        # runs as many events at once as the trigger allows, each pulling its successor.
        dispatch_pending(item.id)
    return claimed, event


def started_message(message: FireMessage, event: EventRecord) -> FireMessage:
    """The message of the event that was started (the queue's head may have replaced it)."""
    if event.id == message.event_id:
        return message
    return FireMessage(
        run_id=event.run_id, trigger_id=event.trigger_id, surface="event", event_id=event.id
    )
