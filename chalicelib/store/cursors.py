"""The heartbeat's enqueue cursor of each due shard: every slot at or before it was sent.

It lives in the triggers table, in an item of its own (``#cursor#<shard>``: no trigger id
starts with ``#``, and it has none of the attributes the indexes are keyed on, so no
listing or index ever sees it). The functions that already read and write triggers need
no other table.
"""

from __future__ import annotations

from botocore.exceptions import ClientError

from chalicelib.store.aws import client
from chalicelib.store.base import condition_failed
from chalicelib.store.triggers import TriggerModel

__all__ = ["get_cursor", "advance_cursor"]

_CURSOR_PREFIX = "#cursor#"


def _cursor_key(shard: str) -> dict:
    return {"id": {"S": f"{_CURSOR_PREFIX}{shard}"}}


def get_cursor(shard: str) -> int | None:
    """The enqueue cursor of a due shard: every slot at or before it was sent (None: never)."""
    answer = client("dynamodb").get_item(
        TableName=TriggerModel.Meta.table_name, Key=_cursor_key(shard), ConsistentRead=True
    )
    value = (answer.get("Item") or {}).get("cursor_ms", {}).get("N")
    return int(value) if value is not None else None


def advance_cursor(shard: str, *, expected: int | None, cursor_ms: int | None) -> bool:
    """Move a shard's cursor, fenced on the value read: False if another tick moved it first.

    ``cursor_ms`` None forgets it (the local stack after a restart: its queue is gone).
    """
    arguments: dict = {
        "TableName": TriggerModel.Meta.table_name,
        "Key": _cursor_key(shard),
        "ExpressionAttributeNames": {"#c": "cursor_ms"},
    }
    values: dict = {}
    if cursor_ms is None:
        arguments["UpdateExpression"] = "REMOVE #c"
    else:
        arguments["UpdateExpression"] = "SET #c = :new"
        values[":new"] = {"N": str(cursor_ms)}
    if expected is None:
        arguments["ConditionExpression"] = "attribute_not_exists(#c)"
    else:
        arguments["ConditionExpression"] = "#c = :old"
        values[":old"] = {"N": str(expected)}
    if values:
        arguments["ExpressionAttributeValues"] = values
    try:
        client("dynamodb").update_item(**arguments)
    except ClientError as exc:
        if condition_failed(exc):
            return False
        raise
    return True
