"""The audit log's table: entries keyed ``(tenant, sk)``, ``sk = <at_ms:013d>#<suffix>``."""

from __future__ import annotations

from typing import Any

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.exceptions import PutError

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


def put_entry(entry: AuditModel) -> bool:
    """Write one entry; False if an entry with the same ``sk`` exists already."""
    try:
        entry.save(condition=AuditModel.sk.does_not_exist())
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
) -> Any:
    """One page of a tenant's entries, newest first, narrowed to a trigger and an action.

    A pynamodb result iterator: read ``last_evaluated_key`` after consuming it (the filter
    applies after the limit, so a page may hold fewer entries than ``limit``).
    """
    condition: Any = None
    if trigger_id:
        condition = AuditModel.trigger_id == trigger_id
    if action:
        clause = AuditModel.action == action
        condition = clause if condition is None else condition & clause
    return AuditModel.query(
        tenant,
        scan_index_forward=False,
        filter_condition=condition,
        limit=limit,
        last_evaluated_key=last_evaluated_key,
    )
