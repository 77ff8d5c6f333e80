"""Where the embedded AWS's writes meet its journal (``journal``): patches on moto's backends.

Each patched call applies the write and appends the images it left while holding the
lock that orders writes (DynamoDB: ``moto_atomic``'s, which reads take too; S3: one of
its own), then fsyncs the journal outside that lock, before it returns: the answer is
built from what it returns, so no write is acknowledged before it is durable. A call
that raises (a failed condition, a cancelled transaction) changed nothing and journals
nothing. The calls a transaction makes itself are journaled once, by the transaction.
"""

from __future__ import annotations

import base64
import functools
import inspect
import threading
from collections.abc import Callable
from typing import Any

from devstack.journal import Journal, wire_item
from devstack.moto_version import require_pinned_moto

__all__ = ["install", "dump_objects"]

_JOURNALED = "_cronhook_journaled"
_nesting = threading.local()
_s3_lock = threading.Lock()


def install(journal: Journal, *, bucket_prefix: str) -> None:
    """Journal every DynamoDB write, and S3 writes to buckets named ``bucket_prefix*``."""
    require_pinned_moto("journal_hooks")
    from moto.dynamodb.models import DynamoDBBackend
    from moto.s3.models import S3Backend

    from devstack.moto_atomic import write_lock

    dynamo_keys = {
        "put_item": _put_keys,
        "update_item": _key_arg,
        "delete_item": _key_arg,
        "transact_write_items": _transaction_keys,
    }
    for name, keys_of in dynamo_keys.items():
        _wrap(DynamoDBBackend, name, _dynamo_hook(journal, keys_of, write_lock()))
    for name in ("put_object", "delete_object"):
        _wrap(S3Backend, name, _s3_hook(journal, bucket_prefix))


def _wrap(owner: type, name: str, hook: Callable) -> None:
    original = getattr(owner, name)
    if getattr(original, _JOURNALED, False):
        return
    signature = inspect.signature(original)

    def journaled(self, *args, __original=original, **kwargs):
        call = signature.bind(self, *args, **kwargs).arguments
        return hook(self, call, lambda: __original(self, *args, **kwargs))

    functools.update_wrapper(journaled, original)
    setattr(journaled, _JOURNALED, True)
    setattr(owner, name, journaled)


# -- DynamoDB ---------------------------------------------------------------------------


def _dynamo_hook(journal: Journal, keys_of: Callable, lock: Any) -> Callable:
    def hook(backend: Any, call: dict, apply: Callable[[], Any]) -> Any:
        with lock:
            depth = getattr(_nesting, "depth", 0)
            _nesting.depth = depth + 1
            try:
                result = apply()
            finally:
                _nesting.depth = depth
            if depth:
                return result  # inside a transaction: it journals its items itself
            keys = keys_of(backend, call)
            seq = journal.append([_image(backend, table, key) for table, key in keys])
        journal.sync(seq)
        return result

    return hook


def _table_key(backend: Any, table_name: str, attrs: dict) -> tuple[str, dict]:
    table = backend.get_table(table_name)
    key = {table.hash_key_attr: attrs[table.hash_key_attr]}
    if table.range_key_attr is not None:
        key[table.range_key_attr] = attrs[table.range_key_attr]
    return table.name, key


def _put_keys(backend: Any, call: dict) -> list[tuple[str, dict]]:
    return [_table_key(backend, call["table_name"], call["item_attrs"])]


def _key_arg(backend: Any, call: dict) -> list[tuple[str, dict]]:
    return [_table_key(backend, call["table_name"], call["key"])]


def _transaction_keys(backend: Any, call: dict) -> list[tuple[str, dict]]:
    keys = []
    for entry in call["transact_items"]:
        ((kind, op),) = entry.items()
        if kind == "Put":
            keys.append(_table_key(backend, op["TableName"], op["Item"]))
        elif kind in ("Update", "Delete"):
            keys.append(_table_key(backend, op["TableName"], op["Key"]))
    return keys


def _image(backend: Any, table_name: str, key: dict) -> dict:
    """The journal record of one item: its table, key, and the item as it is now (or null)."""
    table = backend.get_table(table_name)
    hash_value, range_value = backend.get_keys_value(table, key)
    item = table.get_item(hash_value, range_value)
    return {"t": table_name, "k": key, "i": None if item is None else wire_item(item)}


# -- S3 -------------------------------------------------------------------------------------


def _s3_hook(journal: Journal, bucket_prefix: str) -> Callable:
    def hook(backend: Any, call: dict, apply: Callable[[], Any]) -> Any:
        bucket, name = call["bucket_name"], call["key_name"]
        if not bucket.startswith(bucket_prefix):
            return apply()
        with _s3_lock:
            result = apply()
            kept = backend.get_bucket(bucket).keys.get(name)
            value = None if kept is None else base64.b64encode(kept.value).decode()
            seq = journal.append([{"b": bucket, "o": name, "v": value}])
        journal.sync(seq)
        return result

    return hook


def dump_objects(bucket_prefix: str) -> dict[str, dict[str, str]]:
    """Every object of the buckets named ``bucket_prefix*``, as base64 text by key."""
    from moto.s3.models import s3_backends

    dump: dict[str, dict[str, str]] = {}
    for account in list(s3_backends.keys()):
        for partition in list(s3_backends[account].keys()):
            backend = s3_backends[account][partition]
            for name, bucket in list(backend.buckets.items()):
                if not name.startswith(bucket_prefix):
                    continue
                with _s3_lock:
                    dump[name] = {
                        key: base64.b64encode(bucket.keys[key].value).decode()
                        for key in list(bucket.keys.keys())
                    }
    return dump
