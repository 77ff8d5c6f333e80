"""Make moto's DynamoDB honour DynamoDB's per-item atomicity under concurrent requests.

Real DynamoDB evaluates a ConditionExpression and applies the write atomically. moto's
server handles requests on threads and checks the condition, then writes, with no lock
between the two: two conditional updates racing on one item can both succeed (seen
here: 20 concurrent heartbeats double-claimed a slot about once in 100 rounds). The
local stack and the tests run moto in this process, so every mutating backend call
is serialised with one lock. Reads stay unlocked, as they may interleave for real.
"""

from __future__ import annotations

import functools
import threading

__all__ = ["make_dynamodb_atomic"]

_lock = threading.RLock()
_MUTATORS = ("put_item", "update_item", "delete_item", "transact_write_items", "batch_write_item")


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
