"""The heartbeat's liveness item: when the last finished tick started."""

from __future__ import annotations

from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from chalicelib.store.base import TableBase

__all__ = ["HeartbeatModel"]


class HeartbeatModel(TableBase):
    """When the last finished heartbeat tick started (one item, rewritten each tick)."""

    class Meta(TableBase.Meta):
        table_name = "heartbeats"

    name = UnicodeAttribute(hash_key=True)
    at_ms = NumberAttribute()
