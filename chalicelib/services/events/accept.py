"""Accepting a verified delivery: the dedupe put, the waiting cap, and the first message.

One conditional PutItem is both the event and its dedupe record: the event id is
derived from the dedupe key, so a second delivery fails the condition and is answered
200 with the original ids. A delivery with an ``Idempotency-Key`` header also puts that
key's alias (``signatures.idempotency_key``), in one transaction with the event: a later
delivery with the same key is a duplicate of that event, whatever its body. A full
trigger with ``max_waiting_events`` waiting answers 429 ``quota`` and stores nothing. Only then is the event dispatched (202): its message
is sent at once, unless the trigger is full, in which case a run pulls it in its turn
(``pull``). If the send fails the event stays pending and the heartbeat's sweep
dispatches it.

The accepted path of a trigger with room is three AWS calls: the token's GetItem, the
PutItem, the SendMessageBatch. It does not read the trigger's queue: if an older event
waits, the runner that takes this message runs the queue's head in its place
(``run_start``), so the order is kept where the claim is decided.

The event item is rewritten by its start and its end, and DynamoDB bills a write unit per
KB of the item: a body that would take the item past ``HOT_ITEM_BYTES`` goes to S3
(first, so a stored event always has its body), and the item stays one write unit.
"""

from __future__ import annotations

import json
import secrets as _random
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from chalicelib.domain import filters, ids, signatures
from chalicelib.domain.errors import CronhookError, QuotaExceeded
from chalicelib.domain.event_rules import pending_key
from chalicelib.domain.records import EventRecord, Trigger
from chalicelib.domain.trigger_spec import TriggerSpec
from chalicelib.observability import logger, record_metric
from chalicelib.services.events import rate, window
from chalicelib.services.events.spec import ms, parse_json, pending_shard
from chalicelib.settings import get_settings
from chalicelib.store import event_reads, event_writes, s3, triggers
from chalicelib.store.events import item_bytes
from chalicelib.store.sqs import FireMessage, send_fires

__all__ = [
    "QUOTA_RETRY_AFTER_S",
    "HOT_ITEM_BYTES",
    "accept",
    "put_mark",
    "duplicate",
    "refused",
    "item_bytes",
]

# A trigger at its cap of waiting events drains about one event per run: a sender told
# 429 retries after this long (Retry-After).
QUOTA_RETRY_AFTER_S = 30
# The event item's size (as DynamoDB bills it) past which its body goes to S3: under 1 KB,
# each of its three writes (the put, the start, the end) costs one write unit.
HOT_ITEM_BYTES = 1000


def refused(exc: CronhookError, outcome: str, trigger_id: str | None) -> CronhookError:
    """``exc``, labelled with the delivery's outcome and trigger for the delivery record."""
    exc.outcome = outcome  # type: ignore[attr-defined]
    exc.trigger_id = trigger_id  # type: ignore[attr-defined]
    return exc


def _window_s(spec: dict) -> int:
    return TriggerSpec.from_dict(spec).dedupe_window_s


def duplicate(original: EventRecord) -> dict:
    """The answer to a delivery seen before: the original ids (none for a mark)."""
    if original.status == "ignored":
        return {"event_id": None, "run_id": None, "duplicate": True}
    if original.status == rate.THROTTLED:
        return {"event_id": original.id, "run_id": None, "duplicate": True, "throttled": True}
    return {"event_id": original.id, "run_id": original.run_id, "duplicate": True}


def put_mark(
    item: Trigger,
    spec: dict,
    source: str,
    key: str,
    *,
    body: bytes,
    headers: Mapping[str, str],
    now: datetime,
) -> EventRecord | None:
    """Remember a delivery that stores no event (a goodbye, or one that could be one).

    The mark is an events item under the delivery's event id, with no body, no run and
    none of the index keys (no listing, no queue, no sweep shows it): only a later
    delivery with the same key finds it, and is a duplicate. Returns the item that was
    there already (a replay), else None.
    """
    now_ms = ms(now)
    window_s = _window_s(spec)
    kind = filters.event_type(source, headers=headers, body_json=parse_json(body))
    mark = EventRecord(
        id=ids.event_id_for(item.id, key),
        trigger_id=item.id,
        tenant=item.tenant,
        received_ms=now_ms,
        status="ignored",
        source=source,
        event_type=kind[:256] if kind else None,
        dedupe_key=signatures.shown_key(key),
        body_size=len(body),
        dedupe_until=now_ms + window_s * 1000,
        expires=now_ms // 1000 + window_s,
    )
    return event_writes.put_event(mark, now_ms=now_ms, mark=True)


def _new_event(
    item: Trigger,
    spec: dict,
    source: str,
    *,
    key: str,
    body: bytes,
    body_json: Any,
    headers: Mapping[str, str],
    now_ms: int,
) -> EventRecord:
    """The event item of an accepted delivery, its body inline or in S3 (not yet stored)."""
    settings = get_settings()
    event_id = ids.event_id_for(item.id, key)
    run_id = ids.event_run_id(item.id, now_ms, event_id)
    window_s = _window_s(spec)
    keep_s = max(window_s, settings.event_retention_days * 86400)
    kind = filters.event_type(source, headers=headers, body_json=body_json)
    record = EventRecord(
        id=event_id,
        trigger_id=item.id,
        tenant=item.tenant,
        received_ms=now_ms,
        received_sk=f"{now_ms:013d}#{event_id}",
        status="pending",
        run_id=run_id,
        attempt=0,
        source=source,
        event_type=kind[:256] if kind else None,
        dedupe_key=signatures.shown_key(key),
        body_size=len(body),
        headers=json.dumps(signatures.clip_headers(headers), separators=(",", ":")),
        pending_trigger=item.id,
        pending_shard=pending_shard(event_id),
        pending_sk=pending_key(now_ms, run_id),
        dedupe_until=now_ms + window_s * 1000,
        expires=now_ms // 1000 + keep_s,
    )
    text = _utf8_or_none(body)
    if text is not None and len(body) <= settings.inline_body_limit:
        record = replace(record, body=text)
    if record.body is None or item_bytes(record) > HOT_ITEM_BYTES:
        # Too big for a hot item (or not text): the body goes to S3 first, then the item
        # that points at it, so a stored event always has its body.
        s3_key = f"events/{item.id}/{event_id}/{now_ms}-{_random.token_hex(4)}"
        record = replace(record, body=None, body_s3_key=s3_key)
        s3.put_body(s3_key, body)
    return record


def accept(
    item: Trigger,
    spec: dict,
    source: str,
    *,
    key: str,
    body: bytes,
    body_json: Any,
    headers: Mapping[str, str],
    now: datetime,
) -> tuple[int, dict]:
    """Store a delivery as a new event and dispatch it: 202, or 200 for a duplicate."""
    now_ms = ms(now)
    event_id = ids.event_id_for(item.id, key)
    idempotency = signatures.idempotency_key(headers)
    alias_id = ids.event_id_for(item.id, idempotency) if idempotency else None
    original = _check_waiting_quota(item, spec, event_id=event_id, alias_id=alias_id, now_ms=now_ms)
    if original is not None:
        record_metric("WebhooksDuplicate", source=source)
        return 200, duplicate(original)
    record = _new_event(
        item, spec, source, key=key, body=body, body_json=body_json, headers=headers, now_ms=now_ms
    )
    throttled = rate.over_rate(item.id, spec, now_ms=now_ms)
    window_delay_s = None
    if throttled:
        record = rate.throttle(record)  # stored, never run: beyond the trigger's rate limit
    else:
        # A debounced or batched trigger's event waits for its window (services/events/window).
        record, window_delay_s = window.hold(record, spec, now_ms=now_ms)
    run_id = record.run_id
    alias = _alias(record, idempotency, window_s=_window_s(spec)) if idempotency else None
    original = event_writes.put_event(record, now_ms=now_ms, alias=alias)
    if original is not None:
        if record.body_s3_key:
            s3.delete_body(record.body_s3_key)
        record_metric("WebhooksDuplicate", source=source)
        return 200, duplicate(original)
    if throttled:
        return 202, rate.throttled_answer(record)
    if window_delay_s is not None:
        window.send_delayed(item, record, spec, delay_s=window_delay_s)
        run_id = window.joined_run(item, record, spec)  # the first event's, in its window
    elif _full_after_store(item, capacity=TriggerSpec.from_dict(spec).concurrency):
        record_metric("EventsQueued")
    else:
        _dispatch_new(item.id, run_id=run_id, event_id=event_id, tenant=item.tenant)
    record_metric("WebhooksAccepted", source=source)
    logger.info(
        "webhook accepted",
        extra={"trigger_id": item.id, "event_id": event_id, "run_id": run_id, "bytes": len(body)},
    )
    return 202, {"event_id": event_id, "run_id": run_id}


def _alias(record: EventRecord, key: str, *, window_s: int) -> EventRecord:
    """The mark of a delivery's ``Idempotency-Key``: it names the event and nothing else
    (no run, no index key) and lives as long as the event's dedupe window."""
    return EventRecord(
        id=ids.event_id_for(record.trigger_id, key),
        trigger_id=record.trigger_id,
        tenant=record.tenant,
        received_ms=record.received_ms,
        status="alias",
        source=record.source,
        dedupe_key=signatures.shown_key(key),
        dedupe_until=record.received_ms + window_s * 1000,
        expires=record.received_ms // 1000 + window_s,
        alias_of=record.id,
    )


def _check_waiting_quota(
    item: Trigger, spec: dict, *, event_id: str, alias_id: str | None, now_ms: int
) -> EventRecord | None:
    """429 ``quota`` (nothing stored) if the trigger already has its cap of waiting events.

    Only a full trigger has a queue, so only then (the GetItem read its runs in flight)
    is the queue counted: one KEYS_ONLY count of at most ``max_waiting_events`` keys; the
    accepted path of a trigger with room costs nothing more. A delivery stored before is
    a duplicate, not refused (a GetItem of its id, and of its ``Idempotency-Key``'s
    alias if it sent one, on this path only): a provider retrying it learns that it
    arrived. Deliveries counted at the same instant each see the queue before the
    others' puts, so the cap can be passed by that many, never more.
    """
    cap = get_settings().max_waiting_events
    if len(triggers.in_flight_of(item)) < TriggerSpec.from_dict(spec).concurrency:
        return None
    if event_reads.waiting_count(item.id, cap=cap) < cap:
        return None
    for seen_id in (event_id, alias_id):
        stored = event_reads.get_event(seen_id) if seen_id else None
        if stored is not None and int(stored.dedupe_until or 0) >= now_ms:
            named = event_reads.get_event(stored.alias_of) if stored.alias_of else stored
            return named if named is not None else replace(stored, status="ignored")
    record_metric("WebhooksRefused", reason="quota")
    raise refused(
        QuotaExceeded(
            f"the trigger already has {cap} events waiting to run; nothing was stored, "
            f"retry after {QUOTA_RETRY_AFTER_S} s",
            retry_after_s=QUOTA_RETRY_AFTER_S,
        ),
        "throttled",
        item.id,
    )


def _full_after_store(item: Trigger, *, capacity: int) -> bool:
    """True if the trigger is full now that the event is stored: then it needs no message.

    Race, drawn (concurrency 1, run R in flight):

        ingress:  GetItem (R in flight) ── PutItem(event) ── GetItem again: R still in flight?
        runner:                                   R settles ── pulls the oldest ready event

    If the second read still sees R, R settles after the event was stored, so R's pull
    finds it (or an older one, whose run pulls in turn): the event is reached without a
    message of its own, and a burst does not flood the queue with messages that could
    only find the trigger full. If R settled in between, the event is sent as usual.
    """
    if len(triggers.in_flight_of(item)) < capacity:
        return False  # room when we looked: send (the common case costs no extra read)
    fresh = triggers.get_trigger(item.id)
    return fresh is not None and len(triggers.in_flight_of(fresh)) >= capacity


def _dispatch_new(
    trigger_id: str, *, run_id: str, event_id: str, tenant: str | None = None
) -> None:
    """Send a stored event's message; if that fails it stays pending for the sweep."""
    message = FireMessage(
        run_id=run_id, trigger_id=trigger_id, surface="event", event_id=event_id, tenant=tenant
    )
    try:
        failed = send_fires([message])
    except Exception:  # the event is stored: a failed send must not turn into an error answer
        logger.exception("event dispatch raised", extra={"trigger_id": trigger_id})
        failed = [message]
    if failed:
        record_metric("EventDispatchFailed")
        logger.warning(
            "event stored but not dispatched; the heartbeat will dispatch it",
            extra={"trigger_id": trigger_id, "event_id": event_id},
        )


def _utf8_or_none(body: bytes) -> str | None:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return None
