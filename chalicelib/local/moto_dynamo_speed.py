"""moto's DynamoDB projections, costing what they keep (the embedded AWS's).

moto 5.2 projects an item (a KEYS_ONLY or INCLUDE index's rows, a
``ProjectionExpression``) by turning the *whole* item into plain Python values, picking
the named attributes out of that, and serialising them back. The events table's pending
indexes are KEYS_ONLY: ``waiting_count`` (every accepted webhook) reads up to 1,000 rows
of a trigger's queue, and each row was a full conversion of the event, its body and
headers included, to keep four keys. Measured on 2,000 events of one trigger: 0.7-0.9 s
a query, most of it here (issue 12, the webhook burst).

The patch converts only the top-level attributes the expressions can reach, with the
same functions (``find_nested_key``, ``merge_dicts``, the boto3 (de)serialisers), so the
projected item is the same; the item itself is never changed, as before.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["make_dynamodb_fast", "patched_dynamodb_names"]

# find_nested_key's reading of a path's first element: ``name`` or ``name[3]``.
_LIST_ELEMENT = re.compile(r"(.+)\[(\d+)\]$")


def _top_names(projection_expressions: list[list[str]]) -> set[str]:
    """Every top-level attribute ``find_nested_key`` may read for these paths."""
    names = set()
    for path in projection_expressions:
        names.add(path[0])
        element = _LIST_ELEMENT.match(path[0])
        if element:
            names.add(element.group(1))
    return names


def _project(self: Any, projection_expressions: list[list[str]]) -> Any:
    """``Item.project``, converting only the attributes the paths name."""
    from moto.core.utils import merge_dicts
    from moto.dynamodb.models import dynamo_type
    from moto.dynamodb.models.utilities import find_nested_key

    wanted = _top_names(projection_expressions)
    plain = {
        key: dynamo_type.deserializer.deserialize(value.to_regular_json())
        for key, value in self.attrs.items()
        if key in wanted
    }
    result: dict[str, Any] = {}
    for path in projection_expressions:
        merge_dicts(result, find_nested_key(path, plain))
    return dynamo_type.Item(
        hash_key=self.hash_key,
        range_key=self.range_key,
        attrs=dynamo_type.serializer.serialize(result)["M"],
    )


def patched_dynamodb_names() -> list[tuple[Any, str]]:
    """The (class, attribute) pairs ``make_dynamodb_fast`` replaces (tests restore them)."""
    from moto.dynamodb.models.dynamo_type import Item

    return [(Item, "project")]


def make_dynamodb_fast() -> None:
    """Patch moto's DynamoDB item projection (idempotent)."""
    from moto.dynamodb.models.dynamo_type import Item

    if getattr(Item.project, "_cronhook_fast", False):
        return
    _project._cronhook_fast = True  # type: ignore[attr-defined]
    Item.project = _project  # type: ignore[method-assign]
