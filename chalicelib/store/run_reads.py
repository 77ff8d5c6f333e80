"""The REST use cases' reads of run records: one trigger's runs, or a tenant's; and the
manual runs waiting for their trigger, which have no record yet.

A queued manual run is known by its request item (``{run_id}#payload`` in the states
table, ``store/backfill.py``), keyed by run id only: a list cannot query them by trigger.
So each trigger with queued manual runs keeps their ids in one item of its own
(``{trigger_id}#queued``), written by the fire that queues one (``note_queued_fire``); a
list reads it (one GetItem a trigger, one BatchGetItem a 100 for a tenant), and the
requests it names (one BatchGetItem a 100) to leave out a run that has settled since:
its request is deleted then. An id whose request is gone is pruned at the next queued fire.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from pynamodb.exceptions import DoesNotExist

from chalicelib.domain.records import Page, RunRecord
from chalicelib.observability import logger
from chalicelib.store.paging import take_page
from chalicelib.store.runs import RunModel, run_record
from chalicelib.store.state import StateModel, put_versioned

__all__ = [
    "trigger_runs_page",
    "tenant_runs_page",
    "schedule_lateness_since",
    "queued_fire_ids",
    "waiting_fire_requests",
    "note_queued_fire",
]
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


_BATCH = 100
_NOTE_ATTEMPTS = 5


def _queued_key(trigger_id: str) -> str:
    return f"{trigger_id}#queued"


def _request_key(run_id: str) -> str:
    return f"{run_id}#payload"  # ``store/backfill.py``: a manual run's request


def _ids_of(stored: StateModel) -> list[str]:
    data = json.loads(stored.state or "[]")
    return [str(i) for i in data] if isinstance(data, list) else []


def queued_fire_ids(trigger_ids: Iterable[str]) -> dict[str, list[str]]:
    """The run ids each trigger noted as queued (some may have started or settled since)."""
    wanted = [_queued_key(t) for t in dict.fromkeys(trigger_ids)]
    found: dict[str, list[str]] = {}
    if len(wanted) == 1:
        try:
            items = [StateModel.get(wanted[0], consistent_read=True)]
        except DoesNotExist:
            items = []
    else:
        items = [
            stored
            for start in range(0, len(wanted), _BATCH)
            for stored in StateModel.batch_get(wanted[start : start + _BATCH], consistent_read=True)
        ]
    for stored in items:
        ids = _ids_of(stored)
        if ids:
            found[stored.trigger_id.rpartition("#")[0]] = ids
    return found


def waiting_fire_requests(run_ids: Iterable[str]) -> dict[str, dict]:
    """The requests of ``run_ids`` that are still kept (deleted once a run settles)."""
    keys = [_request_key(r) for r in dict.fromkeys(run_ids)]
    found: dict[str, dict] = {}
    for start in range(0, len(keys), _BATCH):
        for stored in StateModel.batch_get(keys[start : start + _BATCH], consistent_read=True):
            data = json.loads(stored.state or "{}")
            found[stored.trigger_id.rpartition("#")[0]] = data if isinstance(data, dict) else {}
    return found


def note_queued_fire(trigger_id: str, run_id: str) -> None:
    """Add ``run_id`` to the trigger's queued manual runs, dropping those that settled.

    Compare-and-set on the item's version: two fires queued at once both land.
    """
    key = _queued_key(trigger_id)
    for _ in range(_NOTE_ATTEMPTS):
        try:
            stored = StateModel.get(key, consistent_read=True)
            ids, version = _ids_of(stored), int(stored.version)
        except DoesNotExist:
            ids, version = [], 0
        waiting = waiting_fire_requests(ids) if ids else {}
        kept = [i for i in ids if i in waiting]
        if put_versioned(key, json.dumps([*kept, run_id]), expected_version=version):
            return
    # The run is queued all the same (its request is stored and its message sent): only
    # the listings will not show it before it starts. Never an error for the fire.
    logger.warning(
        "queued run not noted for the listings: its trigger's list kept changing",
        extra={"trigger_id": trigger_id, "run_id": run_id},
    )
