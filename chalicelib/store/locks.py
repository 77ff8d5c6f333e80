"""Fenced leases on serialize keys: one run at a time per key, across triggers.

A lock item holds ``owner`` (a run id), ``lease_until`` (epoch ms) and ``waiters``
(``run_id -> {t, k, at, e, w}``: what it takes to send that run's message again, and when
it started waiting). Every write is one conditional UpdateItem:

- **acquire** succeeds if nobody owns the key, we own it already (the lock was handed to
  us), or the owner's lease has expired (its runner died; leases come from the runner's
  timeout, so a live run is never overtaken).
- **release** is fenced on ``owner == run_id``. If runs are waiting, the oldest becomes the
  owner at once (a short hand-off lease) so a newcomer cannot jump the queue; its message
  is then re-sent by the caller.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pynamodb.attributes import MapAttribute, NumberAttribute, UnicodeAttribute
from pynamodb.exceptions import DoesNotExist, UpdateError
from pynamodb.expressions.condition import size

from chalicelib.store.base import TableBase, condition_failed, missing_path, plain_map

__all__ = ["LockModel", "Holder", "acquire", "wait", "leave", "release", "holder"]


class LockModel(TableBase):
    """A fenced lease on a serialize_key: one run at a time across triggers."""

    class Meta(TableBase.Meta):
        table_name = "locks"

    key = UnicodeAttribute(hash_key=True)
    owner = UnicodeAttribute(null=True)
    lease_until = NumberAttribute(null=True)
    waiters: MapAttribute[str, Any] = MapAttribute(default=dict)


@dataclass(frozen=True)
class Holder:
    """Who owns a key now, and until when."""

    owner: str | None
    lease_until: int | None
    waiters: dict


def _waiters(item: LockModel) -> dict:
    return plain_map(item.waiters)


def holder(key: str) -> Holder:
    """The key's owner, lease and waiters (consistent read)."""
    try:
        item = LockModel.get(key, consistent_read=True)
    except DoesNotExist:
        return Holder(None, None, {})
    lease = int(item.lease_until) if item.lease_until is not None else None
    return Holder(item.owner, lease, _waiters(item))


def acquire(key: str, *, run_id: str, lease_until_ms: int, now_ms: int) -> bool:
    """Own ``key`` until ``lease_until_ms`` if it is free, ours, or its lease expired."""
    t = LockModel
    item = LockModel(key)
    try:
        item.update(
            actions=[
                t.owner.set(run_id),
                t.lease_until.set(lease_until_ms),
                t.waiters.set(t.waiters | {}),
            ],
            condition=t.owner.does_not_exist() | (t.owner == run_id) | (t.lease_until < now_ms),
        )
    except UpdateError as exc:
        if condition_failed(exc):
            return False
        raise
    if run_id in _waiters(item):
        leave(key, run_id=run_id)
    return True


def wait(key: str, *, run_id: str, entry: dict) -> None:
    """Join the key's queue (keeping the original place if already in it)."""
    t = LockModel
    try:
        LockModel(key).update(actions=[t.waiters[run_id].set(t.waiters[run_id] | entry)])
    except UpdateError as exc:
        if not missing_path(exc):
            raise
        # The item predates its waiters map: create the map, then join.
        LockModel(key).update(actions=[t.waiters.set(t.waiters | {})])
        LockModel(key).update(actions=[t.waiters[run_id].set(t.waiters[run_id] | entry)])


def leave(key: str, *, run_id: str) -> None:
    """Leave the key's queue (no-op if not in it)."""
    t = LockModel
    try:
        LockModel(key).update(
            actions=[t.waiters[run_id].remove()], condition=t.waiters[run_id].exists()
        )
    except UpdateError as exc:
        if not (condition_failed(exc) or missing_path(exc)):
            raise


def release(key: str, *, run_id: str, handoff_until_ms: int) -> tuple[str, dict] | None:
    """Give ``key`` up, fenced on owning it; returns the waiter it was handed to, if any."""
    t = LockModel
    for _attempt in range(5):
        try:
            item = LockModel.get(key, consistent_read=True)
        except DoesNotExist:
            return None
        if item.owner != run_id:
            return None  # not ours (any more): our lease expired and someone took over
        waiters = _waiters(item)
        try:
            if waiters:
                next_id, entry = min(
                    waiters.items(), key=lambda kv: (int(kv[1].get("w", 0)), kv[0])
                )
                LockModel(key).update(
                    actions=[
                        t.owner.set(next_id),
                        t.lease_until.set(handoff_until_ms),
                        t.waiters[next_id].remove(),
                    ],
                    condition=(t.owner == run_id) & t.waiters[next_id].exists(),
                )
                return next_id, entry
            LockModel(key).update(
                actions=[t.owner.remove(), t.lease_until.remove()],
                condition=(t.owner == run_id)
                & (t.waiters.does_not_exist() | (size(t.waiters) == 0)),
            )
            return None
        except UpdateError as exc:
            if not condition_failed(exc):
                raise
            # A waiter joined (or left) between our read and write: read again.
    return None
