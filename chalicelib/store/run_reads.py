"""The REST use cases' reads of run records: one trigger's runs, or a tenant's."""

from __future__ import annotations

from typing import Any

from chalicelib.domain.records import Page, RunRecord
from chalicelib.store.paging import take_page
from chalicelib.store.runs import RunModel, run_record

__all__ = ["trigger_runs_page", "tenant_runs_page", "schedule_lateness_since"]
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


def _page(results: Any, *, take: int) -> Page[RunRecord]:
    rows, last_key = take_page(results, RunModel, limit=take)
    return Page(tuple(run_record(r) for r in rows), last_key)


def trigger_runs_page(
    trigger_id: str,
    *,
    status: str | None,
    surface: str | None,
    limit: int,
    cursor: dict | None,
    take: int,
) -> Page[RunRecord]:
    """Up to ``take`` of a trigger's run records, newest first, read ``limit`` a page."""
    condition = _condition(status, surface)
    results = RunModel.query(
        trigger_id,
        scan_index_forward=False,
        filter_condition=condition,
        page_size=limit if condition is None else max(limit, _FILTERED_PAGE),
        last_evaluated_key=cursor,
    )
    return _page(results, take=take)


def tenant_runs_page(
    tenant: str,
    *,
    status: str | None,
    surface: str | None,
    limit: int,
    cursor: dict | None,
    take: int,
) -> Page[RunRecord]:
    """Up to ``take`` of a tenant's run records, newest first, read ``limit`` a page."""
    condition = _condition(status, surface)
    results = RunModel.by_tenant.query(
        tenant,
        scan_index_forward=False,
        filter_condition=condition,
        page_size=limit if condition is None else max(limit, _FILTERED_PAGE),
        last_evaluated_key=cursor,
    )
    return _page(results, take=take)


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
