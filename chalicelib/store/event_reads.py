"""The reads of the events table: one event, a trigger's queue, the sweep's rows, a page.

The two pending indexes are KEYS_ONLY and sparse (``store/events.EventModel``): a row carries
the event id and its ``pending_sk`` (ready time and run id), which is all a fire message
needs; anything else is read from the item.
"""

from __future__ import annotations

from collections.abc import Iterator

from pynamodb.exceptions import DoesNotExist

from chalicelib.domain.records import EventRecord, Page, PendingRow
from chalicelib.store.events import EventModel, event_record, pending_row

__all__ = [
    "get_event",
    "queue_of",
    "waiting_count",
    "overdue",
    "events_page",
    "events_before",
]


def get_event(event_id: str) -> EventRecord | None:
    """One event (strongly consistent), or None."""
    try:
        return event_record(EventModel.get(event_id, consistent_read=True))
    except DoesNotExist:
        return None


def queue_of(trigger_id: str, *, limit: int, until_sk: str | None = None) -> list[PendingRow]:
    """The first ``limit`` rows of a trigger's queue, the longest waiting first.

    ``until_sk`` stops at that pending sort key (included).
    """
    if until_sk is None:
        rows = EventModel.pending_by_trigger.query(trigger_id, limit=limit, page_size=limit)
    else:
        rows = EventModel.pending_by_trigger.query(
            trigger_id,
            EventModel.pending_sk <= until_sk,
            limit=limit,
            page_size=min(500, limit),
        )
    return [pending_row(row) for row in rows]


def waiting_count(trigger_id: str, *, cap: int) -> int:
    """How many events wait in a trigger's queue, counted up to ``cap`` (KEYS_ONLY).

    The reading stops at ``cap`` rows. (pynamodb's ``count`` does not: with
    ``Select=COUNT`` its iterator reads every page, so a full queue cost every accepted
    webhook a read of the whole queue.)
    """
    rows = EventModel.pending_by_trigger.query(trigger_id, limit=cap, page_size=min(cap, 1000))
    return sum(1 for _ in rows)


def overdue(shard: str, *, until_sk: str, limit: int) -> Iterator[PendingRow]:
    """The sweep's rows of one shard whose ready time is at or before ``until_sk``."""
    rows = EventModel.pending_all.query(
        shard, EventModel.pending_sk <= until_sk, limit=limit, page_size=500
    )
    return (pending_row(row) for row in rows)


def events_page(trigger_id: str, *, limit: int, cursor: dict | None) -> Page[EventRecord]:
    """One page of a trigger's events, newest first, and the key to continue from."""
    page = EventModel.by_trigger.query(
        trigger_id, scan_index_forward=False, limit=limit, last_evaluated_key=cursor
    )
    ids_in_order = [row.id for row in page]
    found = {e.id: e for e in EventModel.batch_get(ids_in_order)} if ids_in_order else {}
    events = tuple(event_record(found[i]) for i in ids_in_order if i in found)
    return Page(events, page.last_evaluated_key)


def events_before(trigger_id: str, *, before: str | None, limit: int) -> list[EventRecord]:
    """Up to ``limit`` events of a trigger, newest first, whose ``received_sk`` sorts before
    ``before`` (``None``: the newest)."""
    condition = None if before is None else EventModel.received_sk < before
    page = EventModel.by_trigger.query(
        trigger_id, condition, scan_index_forward=False, limit=limit, page_size=limit
    )
    ids_in_order = [row.id for row in page]
    found = {e.id: e for e in EventModel.batch_get(ids_in_order)} if ids_in_order else {}
    return [event_record(found[i]) for i in ids_in_order if i in found]
