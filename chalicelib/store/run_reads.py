"""The REST use cases' reads of run records: one trigger's runs, or a tenant's."""

from __future__ import annotations

from typing import Any

from chalicelib.store.models import RunModel

__all__ = ["RUN_ROW", "trigger_runs_query", "tenant_runs_query", "schedule_lateness_since"]

# The item class of a run page (to read its raw rows back as records).
RUN_ROW = RunModel
# A filtered read asks for at least this many rows a page: a filter drops rows after the
# read, and a page of ``limit`` rows would come back nearly empty.
_FILTERED_PAGE = 200


def _condition(status: str | None, surface: str | None) -> Any:
    condition = None
    if status:
        condition = RunModel.status == status
    if surface:
        clause = RunModel.surface == surface
        condition = clause if condition is None else condition & clause
    return condition


def trigger_runs_query(
    trigger_id: str,
    *,
    status: str | None,
    surface: str | None,
    limit: int,
    cursor: dict | None,
) -> Any:
    """A trigger's run records, newest first (for ``store.paging.take_page``)."""
    condition = _condition(status, surface)
    return RunModel.query(
        trigger_id,
        scan_index_forward=False,
        filter_condition=condition,
        page_size=limit if condition is None else max(limit, _FILTERED_PAGE),
        last_evaluated_key=cursor,
    )


def tenant_runs_query(
    tenant: str,
    *,
    status: str | None,
    surface: str | None,
    limit: int,
    cursor: dict | None,
) -> Any:
    """A tenant's run records, newest first (for ``store.paging.take_page``)."""
    condition = _condition(status, surface)
    return RunModel.by_tenant.query(
        tenant,
        scan_index_forward=False,
        filter_condition=condition,
        page_size=limit if condition is None else max(limit, _FILTERED_PAGE),
        last_evaluated_key=cursor,
    )


def schedule_lateness_since(
    tenant: str, since_ms: int, *, max_rows: int
) -> tuple[int, list[int], bool]:
    """A tenant's runs recorded since ``since_ms``: how many (at most ``max_rows`` are
    read), the lateness of each scheduled one, in ms, and whether the count was capped."""
    count, lateness = 0, []
    since = f"{since_ms:013d}"
    for run in RunModel.by_tenant.query(tenant, RunModel.sort_key >= since, page_size=500):
        count += 1
        if run.lateness_ms is not None and run.surface == "schedule":
            lateness.append(int(run.lateness_ms))
        if count >= max_rows:
            return count, lateness, True
    return count, lateness, False
