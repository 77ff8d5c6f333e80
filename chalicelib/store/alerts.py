"""Alert policies and their notifications: one table, five kinds of item.

=========================  ===============================  ===========================
item                       pk                               sk
=========================  ===============================  ===========================
a policy                   ``t#<tenant>``                   ``p#<policy id>``
a notification             ``n#<policy id>``                ``<at ms:013d>#<ntf id>``
a quiet mark               ``q#<policy id>``                ``<trigger id>#<kind>``
a digest bucket's flush    ``f#<policy id>``                ``<epoch minute>``
a swept policy             ``sweep``                        ``<tenant>#<policy id>``
a sweep's finding          ``s#<policy id>``                ``<transition id>``
=========================  ===============================  ===========================

A tenant's policies are one query (the worker reads them per transition, off the fire
path); the policies the heartbeat's sweep looks at (``late``, ``no_event``) are one query
of the ``sweep`` partition. Notifications list newest first and expire (TTL).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from chalicelib.domain.records import Notification, Page
from chalicelib.store.base import TableBase, condition_failed
from chalicelib.store.events import EventModel
from chalicelib.store.paging import take_page

__all__ = [
    "AlertModel",
    "NOTIFICATION_RETENTION_S",
    "put_policy",
    "get_policy",
    "delete_policy",
    "policies_of",
    "policies_page",
    "swept_policies",
    "put_notification",
    "set_outcome",
    "set_outcomes",
    "pending_in",
    "notifications_page",
    "take_quiet",
    "claim_flush",
    "release_flush",
    "first_sighting",
    "last_event_ms",
]

NOTIFICATION_RETENTION_S = 30 * 86400


class AlertModel(TableBase):
    """Alert policies, notifications, quiet marks, digest flushes (see the module docstring)."""

    class Meta(TableBase.Meta):
        table_name = "alerts"

    pk = UnicodeAttribute(hash_key=True)
    sk = UnicodeAttribute(range_key=True)
    body = UnicodeAttribute(null=True)  # a policy (channel secrets sealed) or a notification
    outcome = UnicodeAttribute(null=True)  # notifications: pending | sent | failed | suppressed
    error = UnicodeAttribute(null=True)  # notifications: why the channel failed
    last_ms = NumberAttribute(null=True)  # quiet marks: the last notification sent
    last_tid = UnicodeAttribute(null=True)  # quiet marks: the transition that set last_ms
    expires = NumberAttribute(null=True)


def _policy_key(tenant: str, policy_id: str) -> tuple[str, str]:
    return f"t#{tenant}", f"p#{policy_id}"


def put_policy(tenant: str, policy: dict, *, swept: bool) -> None:
    """Write a policy (a create or a whole replacement), and its place in the sweep."""
    pk, sk = _policy_key(tenant, policy["id"])
    AlertModel(pk, sk, body=json.dumps(policy, separators=(",", ":"))).save()
    marker = AlertModel("sweep", f"{tenant}#{policy['id']}")
    if swept:
        marker.save()
    else:
        marker.delete()


def get_policy(tenant: str, policy_id: str) -> dict | None:
    """A tenant's policy, or None."""
    pk, sk = _policy_key(tenant, policy_id)
    try:
        item = AlertModel.get(pk, sk)
    except AlertModel.DoesNotExist:
        return None
    return json.loads(item.body or "{}")


def delete_policy(tenant: str, policy_id: str) -> None:
    """Remove a policy and its sweep marker (its notifications expire on their own)."""
    pk, sk = _policy_key(tenant, policy_id)
    AlertModel(pk, sk).delete()
    AlertModel("sweep", f"{tenant}#{policy_id}").delete()


def policies_of(tenant: str) -> list[dict]:
    """Every policy of a tenant, oldest id first (one query)."""
    return [
        json.loads(item.body or "{}")
        for item in AlertModel.query(f"t#{tenant}", AlertModel.sk.startswith("p#"))
    ]


def policies_page(tenant: str, *, limit: int, cursor: dict | None) -> Page[dict]:
    """A page of a tenant's policies, oldest id first, and the key to resume after."""
    results = AlertModel.query(
        f"t#{tenant}",
        AlertModel.sk.startswith("p#"),
        page_size=limit,
        last_evaluated_key=cursor,
    )
    rows, last_key = take_page(results, AlertModel, limit=limit)
    return Page(tuple(json.loads(row.body or "{}") for row in rows), last_key)


def swept_policies() -> Iterator[tuple[str, str]]:
    """``(tenant, policy id)`` of every policy that watches for ``late`` or ``no_event``."""
    for item in AlertModel.query("sweep"):
        tenant, _, policy_id = item.sk.rpartition("#")
        yield tenant, policy_id


def put_notification(
    policy_id: str, *, at_ms: int, notification: dict, outcome: str, expires: int
) -> bool:
    """Record a notification once (its id is stable per transition): False if it exists."""
    item = AlertModel(
        f"n#{policy_id}",
        f"{at_ms:013d}#{notification['id']}",
        body=json.dumps(notification, separators=(",", ":"), default=str),
        outcome=outcome,
        expires=expires,
    )
    try:
        item.save(condition=AlertModel.sk.does_not_exist())
    except Exception as exc:
        if condition_failed(exc):
            return False
        raise
    return True


def set_outcome(policy_id: str, sk: str, *, outcome: str, error: str | None) -> None:
    """A pending notification's outcome once its channel answered (fenced on pending)."""
    item = AlertModel(f"n#{policy_id}", sk)
    actions: list[Any] = [AlertModel.outcome.set(outcome)]
    if error:
        actions.append(AlertModel.error.set(error[:1000]))
    try:
        item.update(
            actions=actions,
            condition=AlertModel.outcome == "pending",
        )
    except Exception as exc:
        if not condition_failed(exc):
            raise


def set_outcomes(
    policy_id: str, rows: list[tuple[str, dict]], *, outcome: str, error: str | None, expires: int
) -> None:
    """The outcome of many notifications a flush sent as one message (25 a BatchWriteItem).

    Only the flush writes a pending row after it is created (a redelivered transition's
    put is conditional and never overwrites), so a plain put of the settled row is safe.
    """
    with AlertModel.batch_write() as batch:
        for sk, note in rows:
            batch.save(
                AlertModel(
                    f"n#{policy_id}",
                    sk,
                    body=json.dumps(note, separators=(",", ":"), default=str),
                    outcome=outcome,
                    error=error[:1000] if error else None,
                    expires=expires,
                )
            )


def pending_in(policy_id: str, *, from_ms: int, to_ms: int) -> list[tuple[str, dict]]:
    """``(sk, notification)`` of the pending notifications written in ``[from_ms, to_ms)``."""
    results = AlertModel.query(
        f"n#{policy_id}",
        AlertModel.sk.between(f"{from_ms:013d}", f"{to_ms - 1:013d}~"),
        filter_condition=AlertModel.outcome == "pending",
    )
    return [(item.sk, json.loads(item.body or "{}")) for item in results]


def notifications_page(policy_id: str, *, limit: int, cursor: dict | None) -> Page[Notification]:
    """A page of a policy's notifications, newest first, and the key to resume after."""
    results = AlertModel.query(
        f"n#{policy_id}", scan_index_forward=False, page_size=limit, last_evaluated_key=cursor
    )
    rows, last_key = take_page(results, AlertModel, limit=limit)
    notifications = tuple(
        Notification(json.loads(row.body or "{}"), outcome=row.outcome, error=row.error)
        for row in rows
    )
    return Page(notifications, last_key)


def take_quiet(
    policy_id: str, trigger_id: str, kind: str, *, now_ms: int, quiet_s: int, transition_id: str
) -> bool:
    """Take the right to notify about ``trigger_id``'s ``kind`` now: False while the last
    one is younger than ``quiet_s``. The same transition again (a redelivery) keeps it."""
    mark = AlertModel(f"q#{policy_id}", f"{trigger_id}#{kind}")
    free = (
        AlertModel.last_ms.does_not_exist()
        | (AlertModel.last_ms <= now_ms - quiet_s * 1000)
        | (AlertModel.last_tid == transition_id)
    )
    try:
        mark.update(
            actions=[
                AlertModel.last_ms.set(now_ms),
                AlertModel.last_tid.set(transition_id),
                AlertModel.expires.set(now_ms // 1000 + quiet_s + 86400),
            ],
            condition=free,
        )
    except Exception as exc:
        if condition_failed(exc):
            return False
        raise
    return True


def claim_flush(policy_id: str, minute: int, *, expires: int) -> bool:
    """The first writer of a digest bucket schedules its flush: True for that one."""
    item = AlertModel(f"f#{policy_id}", str(minute), expires=expires)
    try:
        item.save(condition=AlertModel.sk.does_not_exist())
    except Exception as exc:
        if condition_failed(exc):
            return False
        raise
    return True


def release_flush(policy_id: str, minute: int) -> None:
    """Forget a bucket's claim (its flush message could not be sent: the next writer will)."""
    AlertModel(f"f#{policy_id}", str(minute)).delete()


def first_sighting(policy_id: str, transition_id: str, *, expires: int) -> bool:
    """A sweep's finding, once: True the first time ``transition_id`` is seen."""
    item = AlertModel(f"s#{policy_id}", transition_id, expires=expires)
    try:
        item.save(condition=AlertModel.sk.does_not_exist())
    except Exception as exc:
        if condition_failed(exc):
            return False
        raise
    return True


def last_event_ms(trigger_id: str) -> int | None:
    """When the trigger's newest stored event was received (one keys-only query), or None."""
    for row in EventModel.by_trigger.query(trigger_id, scan_index_forward=False, limit=1):
        head = str(row.received_sk).partition("#")[0]
        return int(head) if head.isdigit() else None
    return None
