"""Deletes that say whether they removed something: the one answer a release may follow.

Two callers that read an item and then delete it both "succeed" with a plain DeleteItem
(deleting nothing is not an error in DynamoDB), and both would then give back the quota
it held, write its audit entry and so on:

    caller A: read key_1    caller B: read key_1
    caller A: delete key_1  (removed)
                            caller B: delete key_1  (nothing left: still 200 OK)
    caller A: release 1     caller B: release 1      <- the counter drops by 2

So the delete is conditional on the item being there and returns the item it removed
(``ReturnValues=ALL_OLD``: what is given back is what the removed item held, even if an
edit changed it after the caller's read); the caller whose condition failed removed
nothing and releases nothing.
"""

from __future__ import annotations

from typing import Any, TypeVar

from botocore.exceptions import ClientError

from chalicelib.store.aws import client
from chalicelib.store.conditions import condition_failed

__all__ = ["delete_if_present"]

_M = TypeVar("_M")


def delete_if_present(item: _M) -> _M | None:
    """Delete ``item`` (by its id); the item as it was when removed, or None if there was
    none (another caller removed it first)."""
    stored: Any = item
    table = stored.Meta.table_name
    try:
        answer = client("dynamodb").delete_item(
            TableName=table,
            Key={"id": {"S": stored.id}},
            ConditionExpression="attribute_exists(#id)",
            ExpressionAttributeNames={"#id": "id"},
            ReturnValues="ALL_OLD",
        )
    except ClientError as exc:
        if condition_failed(exc):
            return None
        raise
    old = answer.get("Attributes")
    return type(stored).from_raw_data(old) if old else None
