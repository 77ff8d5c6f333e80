"""Runs through the API: a trigger's runs, the tenant's runs, one run.

A run in flight has no record yet (it is written once, when the run ends: one write less
per fire); it lives in its trigger's ``in_flight``, and is shown from there. A manual run
queued behind a busy trigger is not in ``in_flight`` until it starts: it is shown from its
request (``store/run_reads``: the trigger's queued ids, then their requests). A success of
a ``history: failures`` trigger has no record at all: its latest is shown from ``last_run``.
"""

from __future__ import annotations

from typing import Any

from chalicelib.domain.errors import NotFound
from chalicelib.domain.history import records_run
from chalicelib.domain.ids import trigger_id_of_run
from chalicelib.domain.records import Trigger
from chalicelib.domain.runs import (
    RUN_STATUSES,
    RUN_SURFACES,
    SURFACE_CODES,
    scheduled_slot_of_run,
)
from chalicelib.services.auth import Principal
from chalicelib.services.lookup import load_owned
from chalicelib.services.pages import choice, decode_cursor, encode_cursor, parse_limit
from chalicelib.services.runs import iso_ms, run_view
from chalicelib.services.triggers.shared import in_flight, last_run_of, stored_spec
from chalicelib.store import run_reads, trigger_reads
from chalicelib.store import runs as runs_store
from chalicelib.store import triggers as triggers_store
from chalicelib.workflows.remote import display_target

__all__ = [
    "RUN_CURSOR",
    "TRIGGER_RUN_CURSOR",
    "RUN_STATUSES",
    "RUN_SURFACES",
    "in_flight_runs",
    "queued_run_view",
    "live_runs",
    "list_trigger_runs",
    "list_runs",
    "get_run_view",
]

RUN_CURSOR = {"trigger_id": "S", "run_id": "S", "tenant": "S", "sort_key": "S"}
TRIGGER_RUN_CURSOR = {"trigger_id": "S", "run_id": "S"}


def _unrecorded_view(
    item: Trigger, run_id: str, *, surface: str, status: str, **known: Any
) -> dict:
    """The view of a run that has no record (in flight, queued, or a success of a
    ``history: failures`` trigger): what is known of it, the rest empty."""
    return {
        "id": run_id,
        "trigger_id": item.id,
        "surface": surface,
        "status": status,
        "workflow": display_target(item.workflow),
        "scheduled_for": None,
        "fire_at": None,
        "started_at": None,
        "finished_at": None,
        "lateness_ms": None,
        "error": None,
        "cost_usd": 0.0,
        "event_id": None,
        "attempt": 1,
        "output": None,
        "duration_ms": None,
        "rerun_of": None,
        **known,
    }


def in_flight_runs(item: Trigger) -> list[dict]:
    """The trigger's runs in flight, as run views, newest first."""
    return [
        _unrecorded_view(
            item,
            entry.run_id,
            surface=entry.surface,
            status=entry.status,
            scheduled_for=iso_ms(entry.slot_ms),
            started_at=iso_ms(entry.started_ms),
        )
        for entry in in_flight(item)
    ]


def queued_run_view(item: Trigger, run_id: str, request: dict | None) -> dict:
    """A manual run waiting for its busy trigger (not claimed yet), from its request."""
    surface = SURFACE_CODES.get(run_id.partition(".")[2][13:14], "manual")
    return _unrecorded_view(
        item, run_id, surface=surface, status="queued", rerun_of=(request or {}).get("r")
    )


def _newest_first(runs: list[dict]) -> list[dict]:
    # A run id is ``{trigger_id}.{13-digit ms}...``: the tail sorts by time across triggers.
    return sorted(runs, key=lambda r: r["id"].split(".", 1)[-1], reverse=True)


def live_runs(items: list[Trigger]) -> list[dict]:
    """The runs of ``items`` in flight and their queued manual runs, newest first.

    The queued ones cost a read of the triggers' queued ids (one GetItem, or one
    BatchGetItem a 100 triggers) and, only when some are noted, one of their requests.
    """
    live = [r for item in items for r in in_flight_runs(item)]
    noted = run_reads.queued_fire_ids(item.id for item in items)
    if noted:
        by_id = {item.id: item for item in items}
        seen = {r["id"] for r in live}
        waiting = [(t, r) for t, ids in noted.items() for r in ids if r not in seen]
        requests = run_reads.waiting_fire_requests(r for _, r in waiting)
        live += [
            queued_run_view(by_id[t], r, requests[r])
            for t, r in waiting
            if r in requests and t in by_id
        ]
    return _newest_first(live)


def unrecorded_last_run(item: Trigger) -> list[dict]:
    """A ``history: failures`` trigger's last run when it succeeded (it has no record).

    Shown from the trigger's ``last_run``: the outcome and when it finished, nothing more.
    """
    last = last_run_of(item) or {}
    run_id = str(last.get("id") or "")
    _, _, tail = run_id.partition(".")
    surface = SURFACE_CODES.get(tail[13:14], "schedule")
    status = str(last.get("status") or "")
    if not run_id or records_run(stored_spec(item).history, status=status, surface=surface):
        return []
    return [
        _unrecorded_view(
            item,
            run_id,
            surface=surface,
            status=status,
            scheduled_for=iso_ms(scheduled_slot_of_run(run_id)),
            finished_at=iso_ms(last.get("finished_at")),
        )
    ]


def _wanted(run: dict, status: str | None, surface: str | None) -> bool:
    return (not status or run["status"] == status) and (not surface or run["surface"] == surface)


def list_trigger_runs(principal: Principal, trigger_id: str, params: dict) -> dict:
    """A trigger's runs, newest first (runs in flight first, on the first page)."""
    item = load_owned(principal, trigger_id)
    limit = parse_limit(params.get("limit"))
    cursor = decode_cursor(
        params.get("cursor"), shape=TRIGGER_RUN_CURSOR, fixed={"trigger_id": item.id}
    )
    status = choice(params, "status", RUN_STATUSES)
    surface = choice(params, "surface", RUN_SURFACES)
    live, unrecorded = [], []
    if cursor is None:
        live = [r for r in live_runs([item]) if _wanted(r, status, surface)][:limit]
        unrecorded = [r for r in unrecorded_last_run(item) if _wanted(r, status, surface)]
    room = max(1, limit - len(live) - len(unrecorded))
    done = run_reads.trigger_runs_page(
        item.id, status=status, surface=surface, limit=limit, cursor=cursor, take=room
    )
    last_key = done.last_evaluated_key
    # A run that settled between the two reads is in both: its record is the newer truth.
    recorded = {r.run_id for r in done}
    live = [r for r in live if r["id"] not in recorded]
    unrecorded = [r for r in unrecorded if r["id"] not in recorded]  # recorded before a switch
    finished = [run_view(r) for r in done]
    # The last success of a ``failures`` trigger takes its place by run id (ids sort by
    # time within a trigger); older than a full page, it is left out of the listing.
    if last_key is None or not finished:
        finished += unrecorded
    else:
        finished += [r for r in unrecorded if r["id"] > finished[-1]["id"]]
    finished.sort(key=lambda r: r["id"], reverse=True)
    return {"items": live + finished, "next_cursor": encode_cursor(last_key)}


def list_runs(principal: Principal, params: dict) -> dict:
    """The tenant's runs, newest first, by ``surface``, ``status`` and ``trigger_id``."""
    trigger_id = params.get("trigger_id")
    if trigger_id:
        return list_trigger_runs(principal, trigger_id, params)
    limit = parse_limit(params.get("limit"))
    status = choice(params, "status", RUN_STATUSES)
    surface = choice(params, "surface", RUN_SURFACES)
    if status in ("running", "queued"):
        return {
            "items": _in_flight_runs_of_tenant(principal, status, surface, limit=limit),
            "next_cursor": None,
        }
    cursor = decode_cursor(
        params.get("cursor"), shape=RUN_CURSOR, fixed={"tenant": principal.tenant}
    )
    # Unfiltered by status, the first page starts with what is in flight now (as a
    # trigger's own listing does): a run is recorded only when it settles.
    live = []
    if cursor is None and not status:
        live = _in_flight_runs_of_tenant(principal, None, surface, limit=limit)
    room = max(1, limit - len(live))
    runs = run_reads.tenant_runs_page(
        principal.tenant, status=status, surface=surface, limit=room, cursor=cursor, take=room
    )
    last_key = runs.last_evaluated_key
    # A run that settled between the two reads is in both: its record is the newer truth.
    recorded = {r.run_id for r in runs}
    live = [r for r in live if r["id"] not in recorded]
    items = live + [run_view(r) for r in runs]
    return {"items": items, "next_cursor": encode_cursor(last_key)}


def _in_flight_runs_of_tenant(
    principal: Principal, status: str | None, surface: str | None, *, limit: int
) -> list[dict]:
    """The tenant's runs in flight (``running`` or ``queued``; both if None), newest first.

    This listing reads the tenant's triggers (KEYS_ONLY index, then BatchGetItem): a cost
    per listing, paid only by this filter, instead of a write per fire.
    """
    items: list[Trigger] = []
    ids = trigger_reads.tenant_trigger_ids(principal.tenant)
    for start in range(0, len(ids), 100):
        items += trigger_reads.get_triggers(ids[start : start + 100])
    return [r for r in live_runs(items) if _wanted(r, status, surface)][:limit]


def get_run_view(principal: Principal, run_id: str) -> dict:
    """One run (also a queued or running one)."""
    trigger_id = trigger_id_of_run(run_id) if len(run_id) <= 200 else None
    if trigger_id is None:
        raise NotFound(f"run {run_id[:80]!r} not found")
    run = runs_store.get_run(trigger_id, run_id)
    if run is not None:
        if run.tenant != principal.tenant:
            raise NotFound(f"run {run_id!r} not found")
        return run_view(run)
    item = triggers_store.get_trigger(trigger_id)
    if item is not None and item.tenant == principal.tenant:
        for view in in_flight_runs(item) + unrecorded_last_run(item):
            if view["id"] == run_id:
                return view
    raise NotFound(f"run {run_id!r} not found")
