"""Make moto's DynamoDB honour DynamoDB's per-item atomicity under concurrent requests.

Real DynamoDB evaluates a ConditionExpression and applies the write atomically. moto's
server handles requests on threads and checks the condition, then writes, with no lock
between the two: two conditional updates racing on one item can both succeed (seen
here: 20 concurrent heartbeats double-claimed a slot about once in 100 rounds). So every
mutating backend call is serialised with one lock, in the process that serves them: the
tests' in-process server, and the local stack's embedded AWS process (``embedded_aws``
applies it there).

Reads take the same lock, answer included: DynamoDB reads an item whole, before or
after a write, but moto changes items in place, so an unlocked read could see one half
way through an update. Seen in the local stack's 2,000-webhook burst: a Query of the
pending index built its page's last key from an event whose ``pending_trigger`` an update
had just removed (``KeyError``, a 500 to the runner).
"""

from __future__ import annotations

import functools
import threading

from devstack.moto_version import require_pinned_moto

__all__ = ["make_dynamodb_atomic", "write_lock"]

_lock = threading.RLock()
_MUTATORS = ("put_item", "update_item", "delete_item", "transact_write_items", "batch_write_item")
# The request handlers of the reads: the backend's read and the answer built from the
# live items both happen under the lock.
_READERS = ("get_item", "query", "scan", "batch_get_item", "transact_get_items")


def write_lock() -> threading.RLock:
    """The lock every patched write holds (a snapshot takes it to list a table's items)."""
    return _lock


def make_dynamodb_atomic() -> None:
    """Patch moto's DynamoDB backend (writes) and request handler (reads) once (idempotent)."""
    require_pinned_moto("moto_atomic")
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.responses import DynamoHandler

    for owner, names in ((DynamoDBBackend, _MUTATORS), (DynamoHandler, _READERS)):
        for name in names:
            _lock_method(owner, name)


def _lock_method(owner: type, name: str) -> None:
    original = getattr(owner, name)
    if getattr(original, "_cronhook_atomic", False):
        return

    def locked(self, *args, __original=original, **kwargs):
        with _lock:
            return __original(self, *args, **kwargs)

    functools.update_wrapper(locked, original)
    locked._cronhook_atomic = True  # type: ignore[attr-defined]
    setattr(owner, name, locked)
