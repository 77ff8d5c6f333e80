"""Received webhooks: the event table and its three indexes (the writes are in services/events.py)."""

from __future__ import annotations

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.indexes import GlobalSecondaryIndex, KeysOnlyProjection

from chalicelib.store.base import TableBase

__all__ = ["EventModel", "EventsByTrigger", "PendingByTrigger", "PendingAll"]


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

    by_trigger = EventsByTrigger()
    pending_by_trigger = PendingByTrigger()
    pending_all = PendingAll()
