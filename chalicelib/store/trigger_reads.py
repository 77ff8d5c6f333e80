"""The REST use cases' reads of a tenant's triggers (the tenant index is keys-only)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from chalicelib.store.models import TriggerModel

__all__ = ["tenant_trigger_ids", "get_triggers", "tenant_triggers_query", "TRIGGER_ROW"]

# The item class of a tenant-index page (to read its raw rows back as items).
TRIGGER_ROW = TriggerModel


def tenant_trigger_ids(tenant: str) -> list[str]:
    """Every trigger id of a tenant."""
    return [row.id for row in TriggerModel.by_tenant.query(tenant, page_size=500)]


def get_triggers(ids: Iterable[str]) -> list[TriggerModel]:
    """The trigger items of ``ids`` that exist (BatchGetItem), in no particular order."""
    wanted = list(ids)
    return list(TriggerModel.batch_get(wanted)) if wanted else []


def tenant_triggers_query(tenant: str, *, limit: int, cursor: dict | None) -> Any:
    """The tenant index, newest first, ``limit`` rows a page (for ``store.paging.take_page``)."""
    return TriggerModel.by_tenant.query(
        tenant, scan_index_forward=False, page_size=limit, last_evaluated_key=cursor
    )
