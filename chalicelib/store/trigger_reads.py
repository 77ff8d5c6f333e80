"""The REST use cases' reads of a tenant's triggers (the tenant index is keys-only)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from chalicelib.domain.records import Trigger
from chalicelib.store.paging import take_page
from chalicelib.store.triggers import TriggerModel, trigger_record

__all__ = [
    "tenant_trigger_ids",
    "get_triggers",
    "tenant_triggers_page",
    "scan_triggers",
]


def tenant_trigger_ids(tenant: str) -> list[str]:
    """Every trigger id of a tenant."""
    return [row.id for row in TriggerModel.by_tenant.query(tenant, page_size=500)]


def get_triggers(ids: Iterable[str]) -> list[Trigger]:
    """The triggers of ``ids`` that exist (BatchGetItem), in no particular order."""
    wanted = list(ids)
    return [trigger_record(item) for item in TriggerModel.batch_get(wanted)] if wanted else []


def tenant_triggers_page(
    tenant: str,
    *,
    limit: int,
    cursor: dict | None,
    materialize: Callable[[list[str]], list],
) -> tuple[list, dict | None]:
    """A page of the tenant index, newest first: ``materialize(ids)`` turns one page's
    trigger ids into what to return (None drops a row), and the key to resume after."""
    results = TriggerModel.by_tenant.query(
        tenant, scan_index_forward=False, page_size=limit, last_evaluated_key=cursor
    )
    return take_page(
        results,
        TriggerModel,
        limit=limit,
        materialize=lambda rows: materialize([row.id for row in rows]),
    )


def scan_triggers(
    *, kind: str | None = None, standing: bool = False, with_last_run: bool = False
) -> Iterator[Trigger]:
    """Every trigger of every tenant, or those of one ``kind``, those ``standing`` (a
    ``next_slot``), those ``with_last_run``. A Scan: for a restart or a rewiring only."""
    t = TriggerModel
    conditions = [
        *([t.kind == kind] if kind is not None else []),
        *([t.next_slot.exists()] if standing else []),
        *([t.last_run.exists()] if with_last_run else []),
    ]
    condition = None
    for one in conditions:
        condition = one if condition is None else condition & one
    for item in TriggerModel.scan(condition):
        yield trigger_record(item)
