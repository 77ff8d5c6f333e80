"""A tenant's quota usage: one item in the ledger table (``tenant#<tenant>`` / ``usage``).

Three counters (``triggers``, ``keys``, ``runs``) changed with one conditional ``ADD``.
The policy (the limits, the 429) is ``services/quotas.py``; this module only reads and
writes the item, strongly consistent, and counts what a tenant holds for the first seed.
"""

from __future__ import annotations

from botocore.exceptions import ClientError

from chalicelib.domain.trigger_spec import TriggerSpec
from chalicelib.store.aws import client
from chalicelib.store.conditions import condition_failed
from chalicelib.store.keys import KeyModel
from chalicelib.store.ledger import LedgerModel
from chalicelib.store.triggers import TriggerModel

__all__ = ["COUNTERS", "read_usage", "seed_usage", "count_usage", "add_usage", "give_back"]

COUNTERS = ("triggers", "keys", "runs")


def _key(tenant: str) -> dict:
    return {"trigger_id": {"S": f"tenant#{tenant}"}, "period": {"S": "usage"}}


def read_usage(tenant: str) -> dict[str, int] | None:
    """The tenant's counters as stored (strongly consistent), or None if there is no item."""
    item = (
        client("dynamodb")
        .get_item(TableName=LedgerModel.Meta.table_name, Key=_key(tenant), ConsistentRead=True)
        .get("Item")
    )
    if item is None:
        return None
    return {name: int(item.get(name, {}).get("N", 0)) for name in COUNTERS}


def count_usage(tenant: str) -> dict[str, int]:
    """The tenant's usage counted from its triggers and (unrevoked) keys."""
    ids = [row.id for row in TriggerModel.by_tenant.query(tenant, page_size=500)]
    runs = 0
    for item in TriggerModel.batch_get(ids) if ids else []:
        runs += TriggerSpec.from_json(item.spec).concurrency
    keys = sum(1 for k in KeyModel.by_tenant.query(tenant) if not k.revoked)
    return {"triggers": len(ids), "keys": keys, "runs": runs}


def seed_usage(tenant: str, counts: dict[str, int]) -> bool:
    """Make the usage item from ``counts`` unless it exists; False if it already did."""
    try:
        client("dynamodb").put_item(
            TableName=LedgerModel.Meta.table_name,
            Item={**_key(tenant), **{n: {"N": str(int(counts.get(n, 0)))} for n in COUNTERS}},
            ConditionExpression="attribute_not_exists(trigger_id)",
        )
    except ClientError as exc:
        if not condition_failed(exc):
            raise
        return False
    return True


def add_usage(tenant: str, deltas: dict[str, int], *, limits: dict[str, int]) -> bool:
    """``ADD`` ``deltas`` in one conditional write; False (nothing changed) if a quota refuses.

    Every counter that grows must stay within ``limits[name]`` after the add; a counter
    that shrinks is never refused.
    """
    names = {f"#{k}": k for k in deltas}
    values = {f":{k}": {"N": str(v)} for k, v in deltas.items()}
    conditions = []
    for name, delta in deltas.items():
        if delta > 0:
            values[f":{name}_room"] = {"N": str(limits[name] - delta)}
            conditions.append(f"(attribute_not_exists(#{name}) OR #{name} <= :{name}_room)")
    kwargs: dict = {
        "TableName": LedgerModel.Meta.table_name,
        "Key": _key(tenant),
        "UpdateExpression": "ADD " + ", ".join(f"#{k} :{k}" for k in deltas),
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
    }
    if conditions:
        kwargs["ConditionExpression"] = " AND ".join(conditions)
    try:
        client("dynamodb").update_item(**kwargs)
    except ClientError as exc:
        if not condition_failed(exc):
            raise
        return False
    return True


def give_back(tenant: str, negative: dict[str, int]) -> bool:
    """``ADD`` the (negative) ``negative`` to the item; False if there is no item.

    Only an item that exists: a release never creates a usage item from nothing (the
    next take counts the tenant afresh instead).
    """
    try:
        client("dynamodb").update_item(
            TableName=LedgerModel.Meta.table_name,
            Key=_key(tenant),
            UpdateExpression="ADD " + ", ".join(f"#{k} :{k}" for k in negative),
            ExpressionAttributeNames={f"#{k}": k for k in negative},
            ExpressionAttributeValues={f":{k}": {"N": str(v)} for k, v in negative.items()},
            ConditionExpression="attribute_exists(trigger_id)",
        )
    except ClientError as exc:
        if not condition_failed(exc):
            raise
        return False
    return True
