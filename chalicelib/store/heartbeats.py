"""The heartbeat's liveness item: when the last finished tick started."""

from __future__ import annotations

from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from chalicelib.store.base import TableBase

__all__ = ["HeartbeatModel", "HEARTBEAT_ITEM", "record_tick", "last_tick_ms"]

HEARTBEAT_ITEM = "heartbeat"


class HeartbeatModel(TableBase):
    """When the last finished heartbeat tick started (one item, rewritten each tick)."""

    class Meta(TableBase.Meta):
        table_name = "heartbeats"

    name = UnicodeAttribute(hash_key=True)
    at_ms = NumberAttribute()


def record_tick(at_ms: int) -> None:
    """Note that the tick that started at ``at_ms`` ended (one PutItem a tick)."""
    HeartbeatModel(HEARTBEAT_ITEM, at_ms=at_ms).save()


def last_tick_ms() -> int | None:
    """When the last finished tick started (strongly consistent), or None if none has."""
    try:
        return int(HeartbeatModel.get(HEARTBEAT_ITEM, consistent_read=True).at_ms)
    except HeartbeatModel.DoesNotExist:
        return None
