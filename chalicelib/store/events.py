"""Received events: the event table, its three indexes, and the record an item holds
(the writes are in ``store/event_writes.py``, the reads in ``store/event_reads.py``)."""

from __future__ import annotations

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.indexes import GlobalSecondaryIndex, KeysOnlyProjection

from chalicelib.domain.records import EventRecord, PendingRow
from chalicelib.store.base import TableBase, opt_int

__all__ = [
    "EventModel",
    "EventsByTrigger",
    "PendingByTrigger",
    "PendingAll",
    "event_record",
    "event_item",
    "pending_row",
    "item_bytes",
]


class EventsByTrigger(GlobalSecondaryIndex):
    class Meta:
        index_name = "by_trigger"
        projection = KeysOnlyProjection()

    trigger_id = UnicodeAttribute(hash_key=True)
    received_sk = UnicodeAttribute(range_key=True)


class PendingByTrigger(GlobalSecondaryIndex):
    """Sparse: events of one trigger still waiting for a run slot, the longest-ready first."""

    class Meta:
        index_name = "pending_by_trigger"
        projection = KeysOnlyProjection()

    pending_trigger = UnicodeAttribute(hash_key=True)
    pending_sk = UnicodeAttribute(range_key=True)


class PendingAll(GlobalSecondaryIndex):
    """Sparse, sharded: every event whose bookkeeping is not over, for the heartbeat's sweep.

    An event enters it on arrival and leaves it only when it ends (terminal): it stays
    in while it runs, so that the sweep also finds a running event whose run ended but
    whose own bookkeeping did not (see ``events.sweep``). Keeping the entry through the
    start costs nothing: the start no longer deletes it, the end does instead.
    """

    class Meta:
        index_name = "pending_all"
        projection = KeysOnlyProjection()

    pending_shard = UnicodeAttribute(hash_key=True)
    pending_sk = UnicodeAttribute(range_key=True)


class EventModel(TableBase):
    """A received webhook; its id is derived from the dedupe key, so the put is the dedupe."""

    class Meta(TableBase.Meta):
        table_name = "events"

    id = UnicodeAttribute(hash_key=True)
    trigger_id = UnicodeAttribute()
    tenant = UnicodeAttribute()
    received_ms = NumberAttribute()
    received_sk = UnicodeAttribute()
    status = UnicodeAttribute(default="pending")
    run_id = UnicodeAttribute()
    attempt = NumberAttribute(default=0)
    source = UnicodeAttribute()
    event_type = UnicodeAttribute(null=True)
    dedupe_key = UnicodeAttribute(null=True)
    body = UnicodeAttribute(null=True)
    body_s3_key = UnicodeAttribute(null=True)
    body_size = NumberAttribute(default=0)
    headers = UnicodeAttribute(default="{}")
    pending_trigger = UnicodeAttribute(null=True)
    pending_shard = UnicodeAttribute(null=True)
    # "<ready ms:013d>#<run id>" while pending or running (ready = received, or retry_at
    # for a retry; a start keeps it as it was); the run id inside lets the KEYS_ONLY
    # pending indexes build a fire message alone. Removed when the event ends.
    pending_sk = UnicodeAttribute(null=True)
    retry_at = NumberAttribute(null=True)
    dedupe_until = NumberAttribute(null=True)  # epoch ms; the same key is a duplicate until then
    finished_ms = NumberAttribute(null=True)
    # Set by the start of each attempt (in the same write): when it started and the lease
    # of its run. The sweep uses them to tell a run that ended without its bookkeeping
    # from one still going, and which run record belongs to this attempt.
    started_ms = NumberAttribute(null=True)
    lease_ms = NumberAttribute(null=True)
    expires = NumberAttribute(null=True)
    surface = UnicodeAttribute(default="event")
    alias_of = UnicodeAttribute(null=True)  # an Idempotency-Key's mark: the event it names

    by_trigger = EventsByTrigger()
    pending_by_trigger = PendingByTrigger()
    pending_all = PendingAll()


def event_record(stored: EventModel) -> EventRecord:
    """The record a stored event item holds."""
    return EventRecord(
        id=stored.id,
        trigger_id=stored.trigger_id,
        tenant=stored.tenant,
        received_ms=int(stored.received_ms),
        source=stored.source,
        run_id=stored.run_id or "",
        received_sk=stored.received_sk or "",
        status=stored.status,
        attempt=int(stored.attempt or 0),
        event_type=stored.event_type,
        dedupe_key=stored.dedupe_key,
        body=stored.body,
        body_s3_key=stored.body_s3_key,
        body_size=int(stored.body_size or 0),
        headers=stored.headers or "{}",
        pending_trigger=stored.pending_trigger,
        pending_shard=stored.pending_shard,
        pending_sk=stored.pending_sk,
        retry_at=opt_int(stored.retry_at),
        dedupe_until=opt_int(stored.dedupe_until),
        finished_ms=opt_int(stored.finished_ms),
        started_ms=opt_int(stored.started_ms),
        lease_ms=opt_int(stored.lease_ms),
        expires=opt_int(stored.expires),
        surface=stored.surface or "event",
        alias_of=stored.alias_of,
    )


def event_item(record: EventRecord) -> EventModel:
    """The item that stores ``record`` (not saved)."""
    return EventModel(
        record.id,
        trigger_id=record.trigger_id,
        tenant=record.tenant,
        received_ms=record.received_ms,
        source=record.source,
        run_id=record.run_id or None,  # a mark's: not stored
        received_sk=record.received_sk or None,
        status=record.status,
        attempt=record.attempt,
        event_type=record.event_type,
        dedupe_key=record.dedupe_key,
        body=record.body,
        body_s3_key=record.body_s3_key,
        body_size=record.body_size,
        headers=record.headers,
        pending_trigger=record.pending_trigger,
        pending_shard=record.pending_shard,
        pending_sk=record.pending_sk,
        retry_at=record.retry_at,
        dedupe_until=record.dedupe_until,
        finished_ms=record.finished_ms,
        started_ms=record.started_ms,
        lease_ms=record.lease_ms,
        expires=record.expires,
        surface=record.surface,
        alias_of=record.alias_of,
    )


def pending_row(row: EventModel) -> PendingRow:
    """A pending index's row (KEYS_ONLY: the id and the pending key are all it holds)."""
    return PendingRow(id=row.id, pending_sk=row.pending_sk)


def item_bytes(record: EventRecord) -> int:
    """The item's size as DynamoDB bills it: names and values (a number at most 21 bytes)."""
    size = 0
    for name, value in event_item(record).serialize(null_check=False).items():
        kind, raw = next(iter(value.items()))
        size += len(name.encode())
        size += min(21, len(raw)) if kind == "N" else len(str(raw).encode())
    return size
