"""Make moto's DynamoDB honour DynamoDB's per-item atomicity under concurrent requests.

Real DynamoDB evaluates a ConditionExpression and applies the write atomically. moto's
server handles requests on threads and checks the condition, then writes, with no lock
between the two: two conditional updates racing on one item can both succeed (seen
here: 20 concurrent heartbeats double-claimed a slot about once in 100 rounds). So every
mutating backend call is serialised with one lock, in the process that serves them: the
tests' in-process server, and the local stack's embedded AWS process (``embedded_aws``
applies it there). Reads stay unlocked, as they may interleave for real.
"""

from __future__ import annotations

import functools
import threading

__all__ = ["make_dynamodb_atomic", "write_lock"]

_lock = threading.RLock()
_MUTATORS = ("put_item", "update_item", "delete_item", "transact_write_items", "batch_write_item")


def write_lock() -> threading.RLock:
    """The lock every patched write holds (a snapshot of the tables takes it too)."""
    return _lock


def make_dynamodb_atomic() -> None:
    """Patch moto's DynamoDB backend once (idempotent)."""
    from moto.dynamodb.models import DynamoDBBackend

    for name in _MUTATORS:
        original = getattr(DynamoDBBackend, name)
        if getattr(original, "_cronhook_atomic", False):
            continue

        def locked(self, *args, __original=original, **kwargs):
            with _lock:
                return __original(self, *args, **kwargs)

        functools.update_wrapper(locked, original)
        locked._cronhook_atomic = True  # type: ignore[attr-defined]
        setattr(DynamoDBBackend, name, locked)
