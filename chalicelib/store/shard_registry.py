"""The shard counts in use: one small item, so a changed shard count orphans nothing.

A trigger's due row sits on ``shard_of(id, count)`` for the count in force when it was
last keyed (a create, an edit, a claim, a settle); a pending event's ``pending_shard``
likewise. Lower ``CRONHOOK_DUE_SHARDS`` and the rows keyed under the old count still sit
on shards the new count never names. The registry remembers the highest count that may
still hold rows (``in_use``), and the heartbeat reads ``range(max(current, in_use))``: a
row found on an old shard fires as usual, and its claim re-keys it under the current
count.

A shard at or above the current count is *retired* (``in_use`` lowered) only after
ticks found it holding no due row and no pending event, twice, ``RETIRE_GRACE_S`` apart
(a Lambda still running under the old count may key one more row meanwhile; an
invocation lives 15 minutes at most). Every write is fenced on the item's ``version``,
so two heartbeats, or two configurations during a deploy, never lower it over a row.

The item lives in the triggers table beside the per-shard cursors (``#shards``: no
trigger id starts with ``#``, and it has none of the indexed attributes).
"""

from __future__ import annotations

from dataclasses import dataclass

from botocore.exceptions import ClientError

from chalicelib.store.aws import client
from chalicelib.store.conditions import condition_failed
from chalicelib.store.events import EventModel
from chalicelib.store.triggers import TriggerModel

__all__ = [
    "RETIRE_GRACE_S",
    "PROBE_SHARDS",
    "LEGACY_SHARDS",
    "Registry",
    "read",
    "shards_to_read",
    "begin_tick",
    "is_empty",
    "retire",
]

# How long the shards to retire must stay empty before the registry forgets them.
RETIRE_GRACE_S = 900

# The first tick that finds no registry (a stack that ran before it) takes as in use the
# count every stack had before ``DueShards`` (4), every shard that has a cursor item (a
# shard once ticked), and every shard holding a due row, among the first ``PROBE_SHARDS``
# (one key-only query each, once per stack).
LEGACY_SHARDS = 4
PROBE_SHARDS = 32

_KEY = {"id": {"S": "#shards"}}


@dataclass(frozen=True)
class Registry:
    """``in_use``: the highest count whose shards may hold rows (None: never recorded).

    ``retire_to``/``empty_since``: the count the registry may be lowered to, and since
    when (epoch ms) the shards from it up were found empty.
    """

    in_use: int | None = None
    retire_to: int | None = None
    empty_since: int | None = None
    version: int = 0


def _number(item: dict, name: str) -> int | None:
    value = item.get(name, {}).get("N")
    return int(value) if value is not None else None


def read() -> Registry:
    """The registry (consistent read)."""
    answer = client("dynamodb").get_item(
        TableName=TriggerModel.Meta.table_name, Key=_KEY, ConsistentRead=True
    )
    item = answer.get("Item") or {}
    return Registry(
        in_use=_number(item, "in_use"),
        retire_to=_number(item, "retire_to"),
        empty_since=_number(item, "empty_since"),
        version=_number(item, "version") or 0,
    )


def shards_to_read(current: int) -> range:
    """The shards a sweep reads: those of the current count and of any still in use."""
    return range(max(current, read().in_use or 0))


def _write(expected: Registry, new: Registry) -> bool:
    """Replace the registry, fenced on the version read: False if another tick wrote first."""
    values: dict = {":v": {"N": str(expected.version)}, ":n": {"N": str(expected.version + 1)}}
    sets, removes = ["#v = :n"], []
    for name in ("in_use", "retire_to", "empty_since"):
        value = getattr(new, name)
        if value is None:
            removes.append(name)
        else:
            sets.append(f"{name} = :{name}")
            values[f":{name}"] = {"N": str(value)}
    expression = "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else "")
    try:
        client("dynamodb").update_item(
            TableName=TriggerModel.Meta.table_name,
            Key=_KEY,
            UpdateExpression=expression,
            ConditionExpression="attribute_not_exists(#v) OR #v = :v",
            ExpressionAttributeNames={"#v": "version"},
            ExpressionAttributeValues=values,
        )
    except ClientError as exc:
        if condition_failed(exc):
            return False
        raise
    return True


def record_fresh(current: int) -> bool:
    """On a stack whose tables were just made: what the first tick would record (no probe)."""
    return _write(Registry(), Registry(in_use=max(current, LEGACY_SHARDS)))


def begin_tick(current: int) -> int:
    """Record ``current`` as in use; how many shards this tick reads.

    A raised count is recorded before any row can be read under it by a later, lowered
    configuration: the shards it names stay read until found empty.
    """
    for _attempt in range(5):
        found = read()
        if found.in_use is not None and found.in_use >= current:
            return found.in_use
        count = current if found.in_use is not None else _first_count(current)
        if _write(found, Registry(in_use=count, version=found.version)):
            return count
    return max(current, read().in_use or 0)


def _first_count(current: int) -> int:
    """The count in use when no registry was ever written: every shard that holds a due row."""
    held = [n for n in range(max(current, LEGACY_SHARDS), PROBE_SHARDS) if _holds_due_rows(n)]
    return max([current, LEGACY_SHARDS, _ticked()] + [n + 1 for n in held])


def _holds_due_rows(shard: int) -> bool:
    return any(True for _row in TriggerModel.due.query(str(shard), limit=1, page_size=1))


def _ticked() -> int:
    """1 + the highest shard with a cursor item (0: none)."""
    table = TriggerModel.Meta.table_name
    keys = [{"id": {"S": f"#cursor#{n}"}} for n in range(PROBE_SHARDS)]
    request: dict = {table: {"Keys": keys, "ProjectionExpression": "id", "ConsistentRead": True}}
    highest = 0
    for _attempt in range(10):
        answer = client("dynamodb").batch_get_item(RequestItems=request)
        for item in answer.get("Responses", {}).get(table, []):
            highest = max(highest, int(item["id"]["S"].rsplit("#", 1)[1]) + 1)
        request = answer.get("UnprocessedKeys") or {}
        if not request:
            break
    return highest


def is_empty(shard: int) -> bool:
    """No due row and no pending (or running) event on ``shard``: one key-only read each."""
    name = str(shard)
    for _row in TriggerModel.due.query(name, limit=1, page_size=1):
        return False
    for _event in EventModel.pending_all.query(name, limit=1, page_size=1):
        return False
    return True


def retire(*, current: int, read_count: int, empty: set[int], now_ms: int) -> int | None:
    """After a tick read ``read_count`` shards: lower the registry over the top ones found empty.

    ``empty`` holds the shards at or above ``current`` this tick found empty. The count
    the registry may drop to is the lowest ``n >= current`` with every shard in
    ``[n, read_count)`` empty; it drops once the same ``n`` was seen ``RETIRE_GRACE_S``
    ago. Returns the new ``in_use`` if this call lowered it.
    """
    target = read_count
    while target > current and (target - 1) in empty:
        target -= 1
    found = read()
    if found.in_use is None or found.in_use != read_count:
        return None  # another tick changed it since this one began: the next tick decides
    if target >= found.in_use:
        if found.retire_to is not None:
            _write(found, Registry(in_use=found.in_use, version=found.version))
        return None
    if found.retire_to != target or found.empty_since is None:
        _write(found, Registry(found.in_use, target, now_ms, found.version))
        return None
    if now_ms - found.empty_since < RETIRE_GRACE_S * 1000:
        return None
    if _write(found, Registry(in_use=target, version=found.version)):
        return target
    return None
