"""moto's DynamoDB Query, costing the partition it reads (the embedded AWS's).

moto 5.2's ``Table.query`` builds and sorts a list of *every* item of the table for each
page (``all_items``), tests each against the key condition, sorts the matches again
with ``DynamoType`` comparisons, then deep-copies the page before projecting it. One
page of a trigger's queue on the events table cost O(table): measured with cProfile on
5,000 events (2,000 of one trigger), sizes, deep copies and projections of the page
first, then the whole-table sort and scan (issue 12, the webhook burst and the 10,000
fires heartbeat).

The patch answers the queries it can prove it answers as moto does, and hands every
other one to moto unchanged:

1. **The partition.** On the table: the items under the hash key (moto's dict of
   them). On a global index: one pass over the table's items, keeping those whose index
   hash key equals the query's and that carry the index range key (moto's own test:
   the index is sparse, read fresh from the items, nothing cached to go stale).
2. **Its order.** moto sorts by (index hash, index range, table hash, table range)
   compared as ``DynamoType`` does, i.e. by ``cast_value`` within one type; the patch
   sorts by the same tuple of cast values, when each key attribute has one type (S or
   N) in the partition (otherwise moto's ``<`` between types is moto's business).
3. **Where the page starts.** moto skips items while they come before or at the
   ``ExclusiveStartKey`` (``_item_comes_before_dct``): in that order a prefix, found by
   bisection on the same tuples.
4. **The range condition** (=, <, <=, >, >=, BETWEEN, begins_with on a string) holds on
   one stretch of that order, found by bisection on the range key.
5. **The page**: moto's loop over the items from the start, unchanged, so the Limit, the
   1 MB cut (sizing every item it passes, matching or not) and ``LastEvaluatedKey``
   come out the same; each item is sized once instead of twice.
6. **The copy**: a KEYS_ONLY or INCLUDE index's projection builds new items (the
   projected attributes are converted anew), so moto's deep copy of the whole items
   before projecting them is skipped there; the table and ALL indexes copy as before.
   The ``FilterExpression`` and ``ProjectionExpression`` then apply as in moto.

Measured (``BENCH_ONLY=moto``, 2,000 events of one trigger, 1,000 triggers; moto's
backend called directly): a page of 50 of the queue 31 -> 8 ms, from its middle 54 -> 7
ms, an empty queue 7.7 -> 1.4 ms, ``iter_due``'s page of one shard 61 -> 10 ms.

Legacy ``QueryFilter``/non-key ``KeyConditions`` (moto's ``filter_kwargs``), multi-
attribute keys, local indexes, other key types, an ``ExclusiveStartKey`` that lacks a
key attribute or has another type, a Limit under 1, ``ConsistentRead`` on a global
index and unknown indexes all go to moto's own code.
"""

from __future__ import annotations

import copy
import inspect
from bisect import bisect_left, bisect_right
from decimal import Decimal
from typing import Any, NamedTuple

from devstack.moto_version import require_pinned_moto

__all__ = ["make_query_fast", "patched_query_names"]

_KEY_TYPES = ("S", "N")
_OPERATORS = {"=": 1, "<": 1, "<=": 1, ">": 1, ">=": 1, "BETWEEN": 2, "BEGINS_WITH": 1}


class _Plan(NamedTuple):
    """What a query reads: its index (None: the table), key attributes and sort order."""

    index: Any
    hash_attr: str
    range_attr: str | None  # the attribute the range condition tests, if any
    sort_attrs: list[str]
    has_index_range: bool


def _cast(value: Any) -> Any:
    """``DynamoType.cast_value`` of an S or N value (the caller checked the type)."""
    return value.value if value.type == "S" else Decimal(value.value)


def _index_plan(table: Any, index_name: str, consistent_read: bool) -> _Plan | None:
    from moto.dynamodb.models.table import GlobalSecondaryIndex

    index = {i.name: i for i in table.all_indexes()}.get(index_name)
    if not isinstance(index, GlobalSecondaryIndex) or consistent_read:
        return None  # unknown index, local index, consistent read: moto (and its errors)
    hashes = [k["AttributeName"] for k in index.schema if k["KeyType"] == "HASH"]
    ranges = [k["AttributeName"] for k in index.schema if k["KeyType"] == "RANGE"]
    if len(hashes) != 1 or len(ranges) > 1:
        return None
    # moto's own attribute lists (Table.query), so the sort order is its order.
    if ranges:
        range_attrs: list[str | None] = [ranges[0], table.range_key_attr]
    else:
        range_attrs = [table.range_key_attr or table.hash_key_attr, table.range_key_attr]
    sort_attrs = table._generate_attr_to_sort_by([hashes[0], table.hash_key_attr], range_attrs)
    return _Plan(index, hashes[0], ranges[0] if ranges else None, sort_attrs, bool(ranges))


def _plan(table: Any, index_name: str | None, consistent_read: bool, keys: dict) -> _Plan | None:
    """The query's plan, or None when moto's own code must answer it."""
    if keys["filter_kwargs"]:
        return None
    if index_name:
        plan = _index_plan(table, index_name, consistent_read)
    else:
        sort_attrs = table._generate_attr_to_sort_by([table.hash_key_attr], [table.range_key_attr])
        plan = _Plan(None, table.hash_key_attr, table.range_key_attr, sort_attrs, False)
    if plan is None:
        return None
    hash_conditions, range_conditions = keys["hash_key_conditions"], keys["range_key_conditions"]
    if len(hash_conditions) != 1 or hash_conditions[0][0] != plan.hash_attr:
        return None
    if keys["hash_key"] is None or keys["hash_key"].type not in _KEY_TYPES:
        return None
    if hash_conditions[0][1].type not in _KEY_TYPES:
        return None
    comparison = keys["range_comparison"]
    if not comparison:
        return plan if not range_conditions else None
    if len(range_conditions) != 1 or plan.range_attr is None:
        return None
    name, operator, _values = range_conditions[0]
    objs = keys["range_objs"]
    if name != plan.range_attr or operator != comparison or _OPERATORS.get(comparison) != len(objs):
        return None
    return plan


def _partition(table: Any, plan: _Plan, hash_key: Any) -> list[Any] | None:
    """The items the query reads, unordered; None if the table holds what moto would not
    sort (then moto answers, or fails, as it does)."""
    from moto.dynamodb.models.dynamo_type import Item

    if plan.index is None:
        found = table.items.get(hash_key)
        if found is None:
            return []
        if table.range_key_attr:
            return list(found.values())
        return [found] if type(found) is Item else None
    if table.range_key_attr:
        items = [item for bucket in list(table.items.values()) for item in list(bucket.values())]
    else:
        items = list(table.items.values())
        if any(type(item) is not Item for item in items):
            return None  # moto's all_items cannot sort these
    kind, raw, wanted = hash_key.type, hash_key.value, _cast(hash_key)
    attr = plan.hash_attr
    # DynamoType equality: the same type and cast value (a number may be spelt two ways).
    chosen = [
        item
        for item in items
        if (value := item.attrs.get(attr)) is not None
        and value.type == kind
        and (value.value == raw or (kind == "N" and Decimal(value.value) == wanted))
    ]
    if not plan.has_index_range:
        return chosen
    return [item for item in chosen if plan.range_attr in item.attrs]


def _ordered(
    items: list[Any], attrs: list[str], hash_type: str
) -> tuple[list[tuple], list[Any], dict] | None:
    """The items in moto's order, their sort keys (without the first, the partition's
    hash key, equal in all) and each key attribute's type; None if an attribute is missing
    or has more than one type (or one not S/N)."""
    types = {attrs[0]: hash_type}
    columns = []
    for attr in attrs[1:]:
        column = [item.attrs.get(attr) for item in items]
        try:
            kinds = {value.type for value in column}
        except AttributeError:
            return None  # an item without it
        if len(kinds) != 1 or not kinds <= set(_KEY_TYPES):
            return None
        types[attr] = kind = kinds.pop()
        columns.append(
            [value.value for value in column]
            if kind == "S"
            else [Decimal(value.value) for value in column]
        )
    keys = list(zip(*columns, strict=True)) if columns else [()] * len(items)
    order = sorted(range(len(items)), key=keys.__getitem__)  # unique: the table key is in
    return [keys[i] for i in order], [items[i] for i in order], types


def _start_key(start: dict, attrs: list[str], types: dict) -> tuple | None:
    """The ExclusiveStartKey as a sort key (all of it); None if moto would read it
    otherwise."""
    from moto.dynamodb.models.dynamo_type import DynamoType

    key = []
    for attr in attrs:
        raw = start.get(attr)
        if not isinstance(raw, dict) or len(raw) != 1:
            return None
        value = DynamoType(raw)
        if value.type != types[attr] or not isinstance(value.value, str):
            return None
        key.append(_cast(value))
    return tuple(key)


def _first(sort_keys: list[tuple], hash_value: Any, start: tuple, forward: bool) -> int:
    """Where moto's page starts: after the items that come before or at the start key in
    the query's direction (a prefix of them: moto skips while they do)."""
    n = len(sort_keys)
    if start[0] != hash_value:  # a key of another partition: all before it, or all after
        partition_after = hash_value > start[0]
        return (0 if partition_after else n) if forward else (n if partition_after else 0)
    rest = start[1:]
    return bisect_right(sort_keys, rest) if forward else n - bisect_left(sort_keys, rest)


def _span(ranges: list[Any], comparison: str | None, objs: list[Any]) -> tuple[int, int]:
    """The stretch [lo, hi) of the ascending range keys the condition keeps."""
    n = len(ranges)
    if not comparison:
        return 0, n
    bound = [_cast(obj) for obj in objs]
    first = bound[0]
    if comparison == "=":
        return bisect_left(ranges, first), bisect_right(ranges, first)
    if comparison == "<":
        return 0, bisect_left(ranges, first)
    if comparison == "<=":
        return 0, bisect_right(ranges, first)
    if comparison == ">":
        return bisect_right(ranges, first), n
    if comparison == ">=":
        return bisect_left(ranges, first), n
    lo = bisect_left(ranges, first)
    if comparison == "BETWEEN":
        return lo, max(lo, bisect_right(ranges, bound[1]))
    # BEGINS_WITH: the strings with a prefix follow one another from the prefix on.
    return lo, bisect_left(ranges, True, lo=lo, key=lambda text: not text.startswith(first))


def _page(
    table: Any,
    items: list[Any],
    span: tuple[int, int],
    first: int,
    limit: Any,
    index_name: str | None,
) -> tuple[list[Any], dict | None]:
    """moto's loop from the page's first item: stop at the Limit or at 1 MB, sizing each
    item it passes (the condition's or not) as moto does; the last kept item's key."""
    from moto.dynamodb.models.table import RESULT_SIZE_LIMIT

    lo, hi = span
    results: list[Any] = []
    result_size = 0
    for position in range(first, len(items)):
        item = items[position]
        item_size = item.size()
        if len(results) == limit or result_size + item_size > RESULT_SIZE_LIMIT:
            return results, table._get_last_evaluated_key(results[-1], index_name)
        if lo <= position < hi:
            results.append(item)
            result_size += item_size
    return results, None


def _finish(
    plan: _Plan, results: list[Any], filter_expression: Any, projection_expressions: Any
) -> list[Any]:
    """Copy and project the page, then filter and project it, as moto does."""
    from moto.dynamodb.models.dynamo_type import DynamoType

    projection = (plan.index.projection or {}).get("ProjectionType") if plan.index else None
    if projection in ("KEYS_ONLY", "INCLUDE"):
        # The projection builds new items: moto's deep copy of the whole items is not needed.
        results = [plan.index.project(item) for item in results]
        for item in results:  # its own key objects, as after moto's copy (a key is S, N or B)
            item.hash_key = DynamoType(item.hash_key)
            if item.range_key is not None:
                item.range_key = DynamoType(item.range_key)
    else:
        results = copy.deepcopy(results)
        if plan.index is not None:
            results = [plan.index.project(item) for item in results]
    if filter_expression is not None:
        results = [item for item in results if filter_expression.expr(item)]
    if projection_expressions:
        results = [item.project(projection_expressions) for item in results]
    return results


def _fast_query(table: Any, keys: dict, options: dict) -> tuple[list[Any], int, dict | None] | None:
    """The query's answer, or None when moto's own code must give it."""
    plan = _plan(table, options["index_name"], options["consistent_read"], keys)
    if plan is None:
        return None
    hash_key = keys["hash_key"] if plan.index is None else keys["hash_key_conditions"][0][1]
    partition = _partition(table, plan, hash_key)
    if partition is None:
        return None
    if not partition:
        return [], 0, None  # moto's loop runs over nothing
    if plan.sort_attrs[0] != plan.hash_attr:
        return None
    ordered = _ordered(partition, plan.sort_attrs, hash_key.type)
    if ordered is None:
        return None
    sort_keys, items, types = ordered
    comparison, objs = keys["range_comparison"], keys["range_objs"]
    if comparison:
        if plan.sort_attrs[:2] != [plan.hash_attr, plan.range_attr]:
            return None
        kind = types[plan.range_attr]
        if any(obj.type != kind for obj in objs) or (comparison == "BEGINS_WITH" and kind != "S"):
            return None
    lo, hi = _span([key[0] for key in sort_keys] if comparison else sort_keys, comparison, objs)
    start, forward = options["exclusive_start_key"], options["scan_index_forward"] is not False
    first = 0
    if start is not None:
        start_key = _start_key(start, plan.sort_attrs, types)
        if start_key is None:
            return None
        first = _first(sort_keys, _cast(hash_key), start_key, forward)
    if not forward:
        items, (lo, hi) = items[::-1], (len(items) - hi, len(items) - lo)
    results, last = _page(table, items, (lo, hi), first, options["limit"], options["index_name"])
    scanned = len(results)
    results = _finish(
        plan, results, options["filter_expression"], options["projection_expressions"]
    )
    return results, scanned, last


def _query(self: Any, original: Any, signature: Any, *args: Any, **kwargs: Any) -> Any:
    """``Table.query``: the patch's answer where it has one, moto's otherwise."""
    bound = signature.bind(self, *args, **kwargs)
    bound.apply_defaults()
    given = dict(bound.arguments)
    keys = {
        "hash_key": given["hash_key"],
        "range_comparison": given["range_comparison"],
        "range_objs": given["range_objs"],
        "hash_key_conditions": given["hash_key_conditions"] or [],
        "range_key_conditions": given["range_key_conditions"] or [],
        "filter_kwargs": given["filter_kwargs"],
    }
    answer = _fast_query(self, keys, given)
    return original(self, *args, **kwargs) if answer is None else answer


def patched_query_names() -> list[tuple[Any, str]]:
    """The (class, attribute) pairs ``make_query_fast`` replaces."""
    from moto.dynamodb.models.table import Table

    return [(Table, "query")]


def make_query_fast() -> None:
    """Patch moto's ``Table.query`` (idempotent)."""
    require_pinned_moto("moto_query_speed")
    from moto.dynamodb.models.table import Table

    if getattr(Table.query, "_cronhook_fast", False):
        return
    original = Table.query
    signature = inspect.signature(original)

    def query(self: Any, *args: Any, **kwargs: Any) -> Any:
        return _query(self, original, signature, *args, **kwargs)

    query._cronhook_fast = True  # type: ignore[attr-defined]
    Table.query = query  # type: ignore[method-assign]
