"""Debounce and batch windows: one run for a window of events, every event in ``fire.events``.

``event.debounce {wait_s, max_wait_s}`` runs once ``wait_s`` passed with no new event, or
``max_wait_s`` after the window's first event; ``event.batch {max_events, max_wait_s}`` runs
once ``max_events`` wait, or ``max_wait_s`` after the first. Events are stored and deduped
as any other (the dedupe put); a window is then built on the event queue that already
exists, so it keeps the same exactly-once protocol:

1. **Accept.** Each event waits in its trigger's queue with its ready time shifted by the
   window's wait (so the sweep leaves it alone until then) and sends one message delayed
   as long (``send_delayed``); the batch event that fills a batch sends it at once.
2. **Gate** (``window_turn``, in the runner before the claim). The queue's head is the
   window's first event. Not due yet: the head's own message is sent again for when it is
   due (a chain, one hop per at most 900 s); any other message is dropped.
3. **One run id, one claim.** A due window runs as its head event's run: the same claim,
   start fence, attempts, retries and reaping as any event run, so a duplicate message is
   dropped by the fence and a runner that dies is reaped and retried under the same id.
4. **Manifest and riders, in one transaction** (``window_events``,
   ``store/windows.take_window``). The run writes which queued events it takes and takes
   them (pending, never started → ``batched`` under its run id) all at once: a window of up
   to 100 events is one transaction, so a crash leaves either nothing taken (the events
   still queued, taken by the retry) or everything taken and listed. A retry of the run
   (same id) finds the manifest and takes exactly those events. Nothing is lost and nothing
   runs twice. (A debounce window over 100 events takes them 99 at a time, each chunk with
   the manifest: a crash between chunks leaves the later ones to the next window.)
5. **Run.** ``fire.events``: the head and its riders, oldest first, at most 100;
   ``fire.events_dropped`` counts the rest (a debounce window takes every queued event, up
   to ``MAX_WINDOW_EVENTS``; a batch at most ``max_events``).
6. **End** (``end_window``). When the head's event ends, each rider takes its status, and
   its ``run_id`` names the run that took it (events list, delivery log).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from chalicelib.domain.event_rules import TERMINAL, parse_pending_key, pending_key
from chalicelib.domain.records import EventRecord, Trigger
from chalicelib.observability import logger, record_metric
from chalicelib.services.events.spec import event_spec, ms, parse_json
from chalicelib.services.pipeline import RunContext
from chalicelib.services.runs import iso_ms
from chalicelib.settings import get_settings
from chalicelib.store import event_reads, s3, windows
from chalicelib.store.sqs import MAX_DELAY_S, FireMessage, send_fires

__all__ = [
    "FIRE_EVENTS_MAX",
    "MAX_WINDOW_EVENTS",
    "window_of",
    "hold",
    "send_delayed",
    "joined_run",
    "window_turn",
    "window_events",
    "end_window",
]

FIRE_EVENTS_MAX = 100  # events a run gets in fire.events; the rest are counted
MAX_WINDOW_EVENTS = 1000  # events one debounce window takes at most (the rest: next window)
EARLY_MS = 1000  # SQS delays are whole seconds: a message may land this early
_MANIFEST_KEPT_S = 8 * 86400


def window_of(event: dict | None) -> tuple[str, dict] | None:
    """``("debounce", {...})``, ``("batch", {...})`` or None, from a stored event spec."""
    for kind in ("debounce", "batch"):
        value = (event or {}).get(kind)
        if isinstance(value, dict):
            return kind, value
    return None


def _shift_s(kind: str, params: dict) -> int:
    """How long after an event arrives its window can be due at the earliest."""
    return int(params["wait_s"] if kind == "debounce" else params["max_wait_s"])


def hold(record: EventRecord, spec: dict, *, now_ms: int) -> tuple[EventRecord, int | None]:
    """A new event of a windowed trigger: its queue ready time moved to when its window can
    be due, and the delay of its message (s); unchanged and None if it has no window."""
    window = window_of(spec.get("event"))
    if window is None:
        return record, None
    delay_s = _shift_s(*window)
    return replace(record, pending_sk=pending_key(now_ms + delay_s * 1000, record.run_id)), delay_s


def send_delayed(item: Trigger, record: EventRecord, spec: dict, *, delay_s: int) -> None:
    """The event's own message, for when its window can be due (at once if it fills a batch)."""
    kind, params = window_of(spec.get("event")) or ("", {})
    if kind == "batch":
        cap = int(params["max_events"])
        if event_reads.waiting_count(item.id, cap=cap) >= cap:
            delay_s = 0
    message = FireMessage(
        run_id=record.run_id,
        trigger_id=item.id,
        surface="event",
        event_id=record.id,
        tenant=item.tenant,
        delay_s=min(MAX_DELAY_S, delay_s),
    )
    if send_fires([message]):
        record_metric("EventDispatchFailed")
        logger.warning(
            "window event stored but its message not sent; the sweep will send it",
            extra={"trigger_id": item.id, "event_id": record.id},
        )


def joined_run(item: Trigger, record: EventRecord, spec: dict) -> str:
    """The run id a just-stored event of a windowed trigger will run under: its window's.

    Windows are taken from the queue's front, one after another: a window is its head
    and the next ``max_events - 1`` waiting events (a debounce window: every waiting
    event, up to ``MAX_WINDOW_EVENTS``). So an event's window starts at the queue row
    whose position is its own position rounded down to a whole window, and it runs as
    that row's run (its own, when it opens a window). One KEYS_ONLY read of the queue,
    for windowed triggers only. The queue index is eventually consistent and a window
    may be taking its riders at this very moment, so this is the run as the queue stood
    when read; the event's record names the run that took it once it ran (events list,
    delivery log).
    """
    kind, params = window_of(spec.get("event")) or ("", {})
    if not kind:
        return record.run_id
    chunk = int(params["max_events"]) if kind == "batch" else MAX_WINDOW_EVENTS
    rows = event_reads.queue_of(item.id, limit=get_settings().max_waiting_events + 1)
    position = next((i for i, row in enumerate(rows) if row.id == record.id), len(rows))
    head = (position // chunk) * chunk
    if head >= len(rows) or rows[head].id == record.id:
        return record.run_id
    return parse_pending_key(rows[head].pending_sk)[1] or record.run_id


def window_turn(
    item: Trigger, message: FireMessage, turn: FireMessage, *, now_ms: int
) -> FireMessage | None:
    """The message to run now: ``turn`` (the queue's head) if its window is due, the
    message's own event if it retries an earlier window, or None (not yet).

    1. A trigger with no window: ``turn``.
    2. A retry of a window's run (the message's event was started before): it runs first,
       whatever the queue says: its window was due already, and windows run in order.
    3. A window already formed (its manifest exists): due.
    4. Otherwise a batch is due when ``max_events`` wait or its first event is
       ``max_wait_s`` old; a debounce ``wait_s`` after its newest event or ``max_wait_s``
       after its first; and only once no earlier window's run is still unfinished. Not
       due: the head's own message is sent again, for then; any other is dropped.
    """
    window = window_of(event_spec(item)[1])
    if window is None or turn.event_id is None:
        return turn
    if message.event_id != turn.event_id and message.scheduled_ms is not None:
        own = event_reads.get_event(str(message.event_id))
        if own is not None and own.status == "pending" and int(own.attempt or 0) > 0:
            return message
    kind, params = window
    queue = event_reads.queue_of(item.id, limit=1)
    if not queue or queue[0].id != turn.event_id:
        return None  # the queue moved on: this event was taken or started elsewhere
    if windows.formed(turn.run_id):
        return turn
    head_ready_ms, _ = parse_pending_key(queue[0].pending_sk)
    due_ms = _due_ms(item, kind, params, head_ready_ms=int(head_ready_ms or now_ms))
    if now_ms + EARLY_MS >= due_ms:
        if windows.earlier_unfinished(item.id, event_id=str(turn.event_id)):
            return None  # that run's retry comes first (and may take these events)
        return turn
    if message.event_id == turn.event_id:  # the head's own chain: come back when due
        wait_s = min(MAX_DELAY_S, max(1, (due_ms - now_ms + 999) // 1000))
        again = FireMessage(
            run_id=turn.run_id,
            trigger_id=item.id,
            surface="event",
            event_id=turn.event_id,
            tenant=item.tenant,
            delay_s=wait_s,
        )
        if send_fires([again]):
            logger.warning("window message not sent again", extra={"trigger_id": item.id})
    return None


def _due_ms(item: Trigger, kind: str, params: dict, *, head_ready_ms: int) -> int:
    opened_ms = head_ready_ms - _shift_s(kind, params) * 1000  # when the first event came
    latest_ms = opened_ms + int(params["max_wait_s"]) * 1000
    if kind == "batch":
        cap = int(params["max_events"])
        full = event_reads.waiting_count(item.id, cap=cap) >= cap
        return opened_ms if full else latest_ms
    newest_ready_ms = windows.newest_pending_ready_ms(item.id) or head_ready_ms
    return min(latest_ms, newest_ready_ms)  # the newest event's ready time: it + wait_s


def window_events(ctx: RunContext, head: EventRecord, head_payload: Any) -> dict:
    """``fire.events`` and ``fire.events_dropped`` of a window's run ({} for other runs)."""
    window = window_of(ctx.spec.get("event"))
    if window is None:
        return {}
    kind, params = window
    run_id = ctx.message.run_id
    limit = int(params["max_events"]) - 1 if kind == "batch" else MAX_WINDOW_EVENTS - 1
    candidates = (
        [row.id for row in event_reads.queue_of(ctx.item.id, limit=limit)] if limit > 0 else []
    )
    taken_ids = windows.take_window(
        run_id,
        trigger_id=ctx.item.id,
        tenant=ctx.item.tenant,
        candidates=candidates,
        now_ms=ms(ctx.now),
        keep_s=_MANIFEST_KEPT_S,
    )
    riders = windows.riders_of(taken_ids, run_id=run_id)
    every = sorted([head, *riders], key=lambda e: (int(e.received_ms or 0), e.id))
    shown = every[:FIRE_EVENTS_MAX]
    record_metric("WindowRuns", kind=kind)
    return {
        "events": [_as_fire_event(e, head_payload if e.id == head.id else None) for e in shown],
        "events_dropped": len(every) - len(shown),
    }


def _as_fire_event(event: EventRecord, payload: Any) -> dict:
    if payload is None:
        raw = b""
        if event.body is not None:
            raw = event.body.encode("utf-8")
        elif event.body_s3_key:
            raw = s3.get_body(event.body_s3_key)
        parsed = parse_json(raw)  # as a single event's run gets it: JSON parsed, else text
        payload = parsed if parsed is not None else raw.decode("utf-8", "replace")
    return {
        "event_id": event.id,
        "received_at": iso_ms(event.received_ms),
        "payload": payload,
        "headers": json.loads(event.headers or "{}"),
    }


def end_window(item: Trigger, *, head_id: str, run_id: str, now_ms: int) -> int:
    """Once the head's event has ended, give each rider its status; how many were ended."""
    if window_of(event_spec(item)[1]) is None:
        return 0
    head = event_reads.get_event(head_id)
    if head is None or head.run_id != run_id or head.status not in TERMINAL:
        return 0  # still running, or will be retried: the riders wait with it
    ended = 0
    for rider_id in windows.manifest_ids(run_id):
        if windows.end_rider(rider_id, run_id=run_id, status=str(head.status), now_ms=now_ms):
            ended += 1
    return ended
