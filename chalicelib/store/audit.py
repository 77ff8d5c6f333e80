"""The audit log's table: entries keyed ``(tenant, sk)``, ``sk = <at_ms:013d>#<suffix>``."""

from __future__ import annotations

from typing import Any

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.exceptions import PutError

from chalicelib.domain.records import AuditEntry, Page
from chalicelib.store.base import TableBase, condition_failed

__all__ = ["AuditModel", "put_entry", "query_entries"]


class AuditModel(TableBase):
    """Who changed what; never secrets."""

    class Meta(TableBase.Meta):
        table_name = "audit"

    tenant = UnicodeAttribute(hash_key=True)
    sk = UnicodeAttribute(range_key=True)
    at_ms = NumberAttribute()
    actor = UnicodeAttribute()
    action = UnicodeAttribute()
    trigger_id = UnicodeAttribute(null=True)
    detail = UnicodeAttribute(default="{}")
    expires = NumberAttribute(null=True)


def _record(stored: AuditModel) -> AuditEntry:
    return AuditEntry(
        tenant=stored.tenant,
        sk=stored.sk,
        at_ms=int(stored.at_ms),
        actor=stored.actor,
        action=stored.action,
        trigger_id=stored.trigger_id,
        detail=stored.detail or "{}",
        expires=int(stored.expires) if stored.expires is not None else None,
    )


def put_entry(entry: AuditEntry) -> bool:
    """Write one entry; False if an entry with the same ``sk`` exists already."""
    stored = AuditModel(
        entry.tenant,
        entry.sk,
        at_ms=entry.at_ms,
        actor=entry.actor,
        action=entry.action,
        trigger_id=entry.trigger_id,
        detail=entry.detail,
        expires=entry.expires,
    )
    try:
        stored.save(condition=AuditModel.sk.does_not_exist())
    except PutError as exc:
        if condition_failed(exc):
            return False
        raise
    return True


def query_entries(
    tenant: str,
    *,
    trigger_id: str | None,
    action: str | None,
    limit: int,
    last_evaluated_key: dict | None,
) -> Page[AuditEntry]:
    """One page of a tenant's entries, newest first, narrowed to a trigger and an action
    (the filter applies after the limit, so a page may hold fewer entries than ``limit``).
    """
    condition: Any = None
    if trigger_id:
        condition = AuditModel.trigger_id == trigger_id
    if action:
        clause = AuditModel.action == action
        condition = clause if condition is None else condition & clause
    results = AuditModel.query(
        tenant,
        scan_index_forward=False,
        filter_condition=condition,
        limit=limit,
        last_evaluated_key=last_evaluated_key,
    )
    items = tuple(_record(e) for e in results)
    return Page(items, results.last_evaluated_key)
