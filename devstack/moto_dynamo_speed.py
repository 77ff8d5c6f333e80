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

``Item.size``: a query sizes every row it looks at, twice (its 1 MB page limit), through
a chain of type tests per attribute; the patch sizes strings and numbers directly, with
the same arithmetic (UTF-8 bytes of a string, characters of a number), and leaves every
other type to moto.

``transact_write_items``: moto deep-copies every table a transaction touches, all its
items, to roll back a cancelled one (each new trigger's first fire runs one on the
triggers table: ~15 % of the embedded AWS's CPU in the lateness run). The patch keeps
copies of the items at the transaction's keys only and puts those back on a
cancellation: the same tables after, as the writes are serialised (``moto_atomic``) and
a write changes only the item at its key. A table with a stream keeps moto's way (its
stream records are rolled back with the table).

``Item`` instances untracked: moto's ``BaseModel.__new__`` appends every instance to
``Item.instances_tracked`` (for its dashboard; emptied only by a moto reset, which the
embedded AWS never has), so every row a query copies or projects lived as long as the
process. Measured: 1,000 items kept per ``waiting_count`` of a 1,000-event queue, 380 MB
and a 0.7 s ``gc.collect()`` after 150 of them; the webhook burst makes 2,000. The
patch makes items as ``object.__new__`` does, tracked nowhere.

``Table.query``: a page costs the partition it reads, not the table (``moto_query_speed``).
"""

from __future__ import annotations

import functools
import re
from typing import Any

from devstack.moto_version import require_pinned_moto

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


@functools.lru_cache(maxsize=65_536)
def _number(text: str) -> dict[str, Any]:
    """A number as the boto3 (de)serialisers give it back ("1e3" -> "1E+3"): a pure
    function of its text, so kept (an invalid one raises, and is not kept)."""
    from moto.dynamodb.models import dynamo_type

    return dynamo_type.serializer.serialize(dynamo_type.deserializer.deserialize({"N": text}))


def _scalar(kind: str, value: str) -> Any:
    """``DynamoType({kind: value})`` of a string or number (nothing nested to convert)."""
    from moto.dynamodb.models.dynamo_type import DynamoType

    made = DynamoType.__new__(DynamoType)
    made.type, made.value = kind, value
    return made


def _top_level(item: Any, names: list[str]) -> dict[str, Any]:
    """The projected attributes (``DynamoType``), for paths that are all top-level names:
    what ``find_nested_key``, ``merge_dicts`` and the boto3 (de)serialisers make of them,
    each named attribute once, in the paths' order."""
    from moto.dynamodb.models import dynamo_type

    out: dict[str, Any] = {}
    for name in names:
        value = item.attrs.get(name)
        if value is None or name in out:
            continue
        kind, inner = value.type, value.value
        if kind == "S" and isinstance(inner, str):
            out[name] = _scalar("S", inner)  # the (de)serialisers leave a string as it is
        elif kind == "N" and isinstance(inner, str):
            out[name] = dynamo_type.DynamoType(_number(inner))
        else:
            plain = dynamo_type.deserializer.deserialize(value.to_regular_json())
            out[name] = dynamo_type.DynamoType(dynamo_type.serializer.serialize(plain))
    return out


def _project(self: Any, projection_expressions: list[list[str]]) -> Any:
    """``Item.project``, converting only the attributes the paths name."""
    from moto.dynamodb.models import dynamo_type
    from moto.dynamodb.models.dynamo_type import merge_dicts  # botocore's, as Item.project
    from moto.dynamodb.models.utilities import find_nested_key

    if all(len(path) == 1 and "[" not in path[0] for path in projection_expressions):
        return _new_item(
            self.hash_key, self.range_key, _top_level(self, [p[0] for p in projection_expressions])
        )
    wanted = _top_names(projection_expressions)
    plain = {
        key: dynamo_type.deserializer.deserialize(value.to_regular_json())
        for key, value in self.attrs.items()
        if key in wanted
    }
    result: dict[str, Any] = {}
    for path in projection_expressions:
        merge_dicts(result, find_nested_key(path, plain))
    attrs = dynamo_type.serializer.serialize(result)["M"]
    return _new_item(
        self.hash_key, self.range_key, {k: dynamo_type.DynamoType(v) for k, v in attrs.items()}
    )


# moto's item limit (LimitedSizeDict): an item built over it raises ItemSizeTooLarge.
_ITEM_LIMIT = 405_000


def _new_item(hash_key: Any, range_key: Any, converted: dict[str, Any]) -> Any:
    """``Item(hash_key, range_key, attrs)`` of attributes already ``DynamoType``, its size
    checked once, not once per attribute (moto re-sums the whole item at each: quadratic).
    Over the limit it raises as moto's ``LimitedSizeDict`` does (the running total passes
    the limit at some attribute exactly when the whole does)."""
    from moto.dynamodb.exceptions import ItemSizeTooLarge
    from moto.dynamodb.models.dynamo_type import Item, LimitedSizeDict

    if _attrs_size(converted) > _ITEM_LIMIT:
        raise ItemSizeTooLarge
    item: Any = Item.__new__(Item)
    item.hash_key, item.range_key = hash_key, range_key
    item.attrs = LimitedSizeDict(converted)  # dict.update: no per-attribute check
    return item


def _item_size(self: Any) -> int:
    """``Item.size``: name bytes plus value size, strings and numbers sized directly."""
    return _attrs_size(self.attrs)


def _attrs_size(attrs: dict[str, Any]) -> int:
    """moto's size of these attributes: each name's UTF-8 bytes plus its value's size."""
    total = 0
    for key, value in attrs.items():
        kind, inner = value.type, value.value
        total += len(key.encode("utf-8"))  # bytesize(key): a name is a str
        if kind == "S" and isinstance(inner, str):
            total += len(inner.encode("utf-8"))
        elif kind == "N" and isinstance(inner, str):
            total += len(inner)  # DynamoType.size: len(str(value))
        else:
            total += value.size()
    return total


def _untracked(cls: type, *args: Any, **kwargs: Any) -> Any:
    """``BaseModel.__new__`` without its ``cls.instances_tracked.append(instance)``."""
    return object.__new__(cls)


def _keys_of(backend: Any, transact_items: list[dict]) -> list[tuple[Any, Any, Any]]:
    """(table, hash key, range key) of each write; an op whose key moto cannot read is
    skipped (moto fails it before it writes)."""
    keys = []
    for entry in transact_items:
        for op_type, op in entry.items():
            table = backend.tables.get(op.get("TableName"))
            if table is None or op_type == "ConditionCheck":
                continue
            try:
                key = op["Item"] if op_type == "Put" else op["Key"]
                keys.append((table, *backend.get_keys_value(table, key)))
            except Exception:
                continue
    return keys


def _item_backup(backend: Any, transact_items: list[dict]) -> list[tuple[Any, Any, Any, Any]]:
    import copy

    backup = []
    for table, hash_key, range_key in _keys_of(backend, transact_items):
        current = table.get_item(hash_key, range_key)
        backup.append((table, hash_key, range_key, copy.deepcopy(current)))
    return backup


def _restore(backend: Any, backup: list[tuple[Any, Any, Any, Any]]) -> None:
    """Put back each item as it was (the first copy of a key is the one from before)."""
    for table, hash_key, range_key, item in reversed(backup):
        holder = table.items[hash_key] if range_key is not None else table.items
        slot = range_key if range_key is not None else hash_key
        if item is None:
            holder.pop(slot, None)
        else:
            holder[slot] = item


def _transact_write_items(self: Any, original: Any, transact_items: list[dict]) -> None:
    from moto.dynamodb.exceptions import (
        MockValidationException,
        MultipleTransactionsException,
        TooManyTransactionsException,
        TransactionCanceledException,
        TransactWriteSingleOpException,
    )

    if len(transact_items) > 100:
        raise TooManyTransactionsException()
    names = {op.get("TableName") for entry in transact_items for op in entry.values()}
    if any(getattr(self.tables.get(name), "stream_shard", None) is not None for name in names):
        return original(self, transact_items)  # streams: moto's whole-table copy
    backup = _item_backup(self, transact_items)
    try:
        errors = _apply_all(self, transact_items)
    except TransactWriteSingleOpException:
        raise  # moto raises this one before its rollback: the earlier ops stay written
    except (MultipleTransactionsException, MockValidationException):
        _restore(self, backup)
        raise
    if any(code is not None for code, _, _ in errors):
        _restore(self, backup)
        raise TransactionCanceledException(errors)
    return None


def _apply_all(backend: Any, transact_items: list[dict]) -> list[tuple]:
    """moto 5.2.5's loop of ``transact_write_items``: each op, its error (or Nones)."""
    from moto.dynamodb.exceptions import (
        ConditionalCheckFailed,
        MockValidationException,
        MultipleTransactionsException,
        TransactWriteSingleOpException,
    )

    targets: set[tuple[str, str]] = set()
    errors: list[tuple] = []
    for entry in transact_items:
        if len(list(entry.keys())) > 1:
            raise TransactWriteSingleOpException
        failed: dict = {}
        try:
            _apply_one(backend, entry, targets, failed)
            errors.append((None, None, None))
        except (MultipleTransactionsException, MockValidationException):
            raise
        except ConditionalCheckFailed as exc:
            errors.append(("ConditionalCheckFailed", str(exc.message), failed.get("item")))
        except Exception as exc:
            errors.append((type(exc).__name__, str(exc), failed.get("item")))
    return errors


def _apply_one(backend: Any, entry: dict, targets: set, failed: dict) -> None:
    from moto.dynamodb.comparisons import get_filter_expression
    from moto.dynamodb.exceptions import ConditionalCheckFailed, MultipleTransactionsException

    op_type, op = next(iter(entry.items()))
    if op_type not in {"ConditionCheck", "Put", "Delete", "Update"}:
        raise ValueError("Unsupported transaction operation")
    table_name = op["TableName"]
    condition = op.get("ConditionExpression")
    names, values = op.get("ExpressionAttributeNames"), op.get("ExpressionAttributeValues")
    if op_type == "Put":
        attrs = op["Item"]
        table = backend.get_table(table_name)
        key = {table.hash_key_attr: attrs[table.hash_key_attr]}
        if table.range_key_attr is not None:
            key[table.range_key_attr] = attrs[table.range_key_attr]
    else:
        key = op["Key"]
    target = (str(table_name), str(dict(sorted(key.items()))))
    if target in targets:
        raise MultipleTransactionsException()
    targets.add(target)
    current = backend.get_item(table_name, key)
    if condition is not None:
        if not get_filter_expression(condition, names, values).expr(current):
            if op.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and current:
                failed["item"] = current.to_json()["Attributes"]
            raise ConditionalCheckFailed(item=failed.get("item"))
    expressions = {
        "condition_expression": condition,
        "expression_attribute_names": names,
        "expression_attribute_values": values,
    }
    if op_type == "Put":
        backend.put_item(table_name, op["Item"], **expressions)
    elif op_type == "Delete":
        backend.delete_item(table_name, key, **expressions)
    elif op_type == "Update":
        backend.update_item(
            table_name, key, update_expression=op["UpdateExpression"], **expressions
        )


def patched_dynamodb_names() -> list[tuple[Any, str]]:
    """The (class, attribute) pairs ``make_dynamodb_fast`` replaces (tests restore them)."""
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.dynamo_type import Item

    from devstack.moto_query_speed import patched_query_names

    patched: list[tuple[Any, str]] = [(Item, "project"), (Item, "size"), (Item, "__new__")]
    patched.append((DynamoDBBackend, "transact_write_items"))
    return patched + patched_query_names()


def make_dynamodb_fast() -> None:
    """Patch moto's DynamoDB item projection and size, transaction rollback and Query
    (``moto_query_speed``) (idempotent).

    The patched transaction holds ``moto_atomic``'s write lock from its first read to its
    last write (re-entrant: its writes take it again), whether or not, and in whichever
    order, ``make_dynamodb_atomic`` is applied.
    """
    require_pinned_moto("moto_dynamo_speed")
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.dynamo_type import Item

    from devstack.moto_atomic import write_lock
    from devstack.moto_query_speed import make_query_fast

    make_query_fast()
    if getattr(Item.project, "_cronhook_fast", False):
        return
    _project._cronhook_fast = True  # type: ignore[attr-defined]
    Item.project = _project  # type: ignore[method-assign]
    Item.size = _item_size  # type: ignore[method-assign]
    Item.__new__ = staticmethod(_untracked)  # type: ignore[method-assign, assignment]
    original = DynamoDBBackend.transact_write_items

    def transact_write_items(self: Any, transact_items: list[dict]) -> None:
        with write_lock():
            return _transact_write_items(self, original, transact_items)

    transact_write_items._cronhook_fast = True  # type: ignore[attr-defined]
    DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]
