"""A trigger's ``key`` (unique per tenant): one reservation item per (tenant, key).

The reservation lives in the triggers table, in an item of its own
(``#key#<tenant>#<key>``: no trigger id starts with ``#``, and it has none of the
attributes the indexes are keyed on, so no listing or index ever sees it), holding the
id of the trigger that owns the key. Uniqueness is a conditional put, never a read and
then a write::

    PUT by-key A                       PUT by-key A (the same key, at once)
    put #key#t#a if not exists -> ok
                                       put #key#t#a if not exists -> fails
                                       read it: owned by trg_1 (being created)
    insert trg_1 (key a)                -> 409 "being created", or (trg_1 written) update it

A reservation whose trigger is gone (a create that died between its two writes, or a
delete that could not release it) is taken over by a conditional update fenced on the
id it held, so two takers cannot both win.
"""

from __future__ import annotations

from dataclasses import dataclass

from botocore.exceptions import ClientError
from pynamodb.exceptions import UpdateError

from chalicelib.store.aws import client
from chalicelib.store.base import condition_failed
from chalicelib.store.triggers import TriggerModel

__all__ = [
    "Reservation",
    "reserve",
    "reservation",
    "take_over",
    "release",
    "set_managed",
    "set_drift",
]

_PREFIX = "#key#"


@dataclass(frozen=True)
class Reservation:
    """Who owns a key: the trigger id, and when the reservation was made (epoch ms)."""

    trigger_id: str
    reserved_ms: int


def _item_key(tenant: str, key: str) -> dict:
    return {"id": {"S": f"{_PREFIX}{tenant}#{key}"}}


def reserve(tenant: str, key: str, *, trigger_id: str, now_ms: int) -> bool:
    """Reserve ``key`` for ``trigger_id``: False when the tenant already has it."""
    try:
        client("dynamodb").put_item(
            TableName=TriggerModel.Meta.table_name,
            Item={
                **_item_key(tenant, key),
                "trigger_id": {"S": trigger_id},
                "reserved_ms": {"N": str(now_ms)},
            },
            ConditionExpression="attribute_not_exists(id)",
        )
    except ClientError as exc:
        if condition_failed(exc):
            return False
        raise
    return True


def reservation(tenant: str, key: str) -> Reservation | None:
    """The key's reservation (consistent read), None when the tenant has no such key."""
    answer = client("dynamodb").get_item(
        TableName=TriggerModel.Meta.table_name, Key=_item_key(tenant, key), ConsistentRead=True
    )
    item = answer.get("Item")
    if not item:
        return None
    return Reservation(item["trigger_id"]["S"], int(item.get("reserved_ms", {}).get("N", "0")))


def take_over(tenant: str, key: str, *, expected: str, trigger_id: str, now_ms: int) -> bool:
    """Move a stale reservation to ``trigger_id``, fenced on the id it held (``expected``)."""
    try:
        client("dynamodb").update_item(
            TableName=TriggerModel.Meta.table_name,
            Key=_item_key(tenant, key),
            UpdateExpression="SET trigger_id = :new, reserved_ms = :now",
            ConditionExpression="trigger_id = :old",
            ExpressionAttributeValues={
                ":new": {"S": trigger_id},
                ":old": {"S": expected},
                ":now": {"N": str(now_ms)},
            },
        )
    except ClientError as exc:
        if condition_failed(exc):
            return False
        raise
    return True


def release(tenant: str, key: str, *, trigger_id: str) -> None:
    """Free ``key`` if ``trigger_id`` still holds it (a no-op otherwise)."""
    try:
        client("dynamodb").delete_item(
            TableName=TriggerModel.Meta.table_name,
            Key=_item_key(tenant, key),
            ConditionExpression="trigger_id = :mine",
            ExpressionAttributeValues={":mine": {"S": trigger_id}},
        )
    except ClientError as exc:
        if not condition_failed(exc):
            raise


def set_managed(trigger_id: str, *, key: str, managed_by: str | None) -> None:
    """Label a trigger with its key and the tool managing it, and forget its drift (the
    tool just made it what its file says). Missing trigger: a no-op."""
    t = TriggerModel
    actions: list = [t.key.set(key), t.drift.remove()]
    actions.append(t.managed_by.set(managed_by) if managed_by else t.managed_by.remove())
    try:
        TriggerModel(trigger_id).update(actions=actions, condition=t.id.exists())
    except UpdateError as exc:
        if not condition_failed(exc):
            raise


def set_drift(trigger_id: str, drift_json: str) -> None:
    """Record an edit made outside the managing tool (JSON ``{at, by, fields}``)."""
    t = TriggerModel
    try:
        TriggerModel(trigger_id).update(actions=[t.drift.set(drift_json)], condition=t.id.exists())
    except UpdateError as exc:
        if not condition_failed(exc):
            raise
