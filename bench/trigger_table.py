"""The trigger table written straight, for the heartbeat's measures (``bench.heartbeat``).

A real trigger item (as the API writes it) copied once per trigger with its own id and
next slot, written in batches of 25 (the API would take minutes for 100,000); the clients
built before measuring; and the due shards' cursors set or forgotten between repeats.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

__all__ = [
    "NOW",
    "DAY_S",
    "item_template",
    "slot_item",
    "write_items",
    "warm_clients",
    "set_cursors",
    "forget_cursors",
]

NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
DAY_S = 86_400


def item_template() -> dict:
    """One real trigger item (as the API writes it), in DynamoDB's attribute-value format."""
    from chalicelib.services import triggers
    from chalicelib.services.auth import Principal
    from chalicelib.store import trigger_writes
    from chalicelib.store import triggers as triggers_store

    root = Principal("root", "local", "admin")
    created = triggers.create_trigger(
        root, {"workflow": "echo", "schedule": {"interval_s": DAY_S}}, now=NOW
    )
    item = triggers_store.get_trigger(created["id"])
    assert item is not None
    data = triggers_store.trigger_item(item).serialize()
    trigger_writes.delete_trigger(item.id)
    return data


def slot_item(template: dict, n: int, slot_ms: int, shards: int) -> dict:
    from chalicelib.store.triggers import shard_of

    trigger_id = f"trg_bench{n:011d}"
    item = dict(template)
    item["id"] = {"S": trigger_id}
    item["next_fire_at"] = {"N": str(slot_ms)}
    item["due_at"] = {"N": str(slot_ms)}
    item["due_shard"] = {"S": shard_of(trigger_id, shards)}
    item["sched"] = {"S": json.dumps({"i": DAY_S, "an": slot_ms}, separators=(",", ":"))}
    return item


def write_items(items: list[dict], *, table: str | None = None) -> None:
    """Put raw items (DynamoDB's attribute-value form) into ``table`` (the triggers')."""
    from chalicelib.store.aws import client
    from chalicelib.store.tables import table_name

    ddb = client("dynamodb")
    table = table or table_name("triggers")
    for start in range(0, len(items), 25):
        pending = [{"PutRequest": {"Item": it}} for it in items[start : start + 25]]
        while pending:
            answer = ddb.batch_write_item(RequestItems={table: pending})
            pending = answer.get("UnprocessedItems", {}).get(table, [])


def warm_clients() -> None:
    """Build the clients before measuring: a warm Lambda has them already."""
    from chalicelib.settings import get_settings
    from chalicelib.store import triggers as triggers_store
    from chalicelib.store.aws import client
    from chalicelib.store.tables import ALL_MODELS

    triggers_store.get_trigger("trg_warmup")
    for model in ALL_MODELS:
        model._get_connection().connection.client  # noqa: B018 (builds the client)
    client("sqs").get_queue_attributes(QueueUrl=get_settings().queue_url)


def set_cursors(cursor_ms: int | None) -> None:
    """Every shard's cursor at ``cursor_ms`` (None: none, as a new stack's)."""
    from chalicelib.settings import get_settings
    from chalicelib.store import cursors as cursors_store

    for shard in range(get_settings().due_shards):
        cursor = cursors_store.get_cursor(str(shard))
        if cursor != cursor_ms:
            assert cursors_store.advance_cursor(str(shard), expected=cursor, cursor_ms=cursor_ms)


def forget_cursors() -> None:
    from chalicelib.settings import get_settings
    from chalicelib.store import cursors as cursors_store

    for shard in range(get_settings().due_shards):
        cursor = cursors_store.get_cursor(str(shard))
        if cursor is not None:
            cursors_store.advance_cursor(str(shard), expected=cursor, cursor_ms=None)
