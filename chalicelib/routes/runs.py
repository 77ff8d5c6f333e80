"""``/v1/runs`` and a trigger's runs."""

from __future__ import annotations

from chalicelib import wiring
from chalicelib.declare import LIST_QUERY, READ_ERRORS, Query
from chalicelib.domain.runs import RUN_STATUSES, RUN_SURFACES
from chalicelib.routes.resource import Resource, route

triggers = wiring.lazy_module("chalicelib.services.triggers")

bp = Resource(__name__)

RUN_STATUS = Query("status", "Only runs with this status", enum=RUN_STATUSES)
RUN_SURFACE = Query("surface", "Only runs from this surface", enum=RUN_SURFACES)


@route(
    bp,
    "/v1/triggers/{trigger_id}/runs",
    "GET",
    role="viewer",
    summary="A trigger's runs, newest first (runs in flight first)",
    answers={200: "RunPage"},
    query=(RUN_SURFACE, RUN_STATUS, *LIST_QUERY),
    errors=READ_ERRORS,
)
def list_trigger_runs(who, trigger_id):
    return triggers.list_trigger_runs(who, trigger_id, bp.params())


@route(
    bp,
    "/v1/runs",
    "GET",
    role="viewer",
    summary="The tenant's runs, newest first (runs in flight first)",
    answers={200: "RunPage"},
    query=(RUN_SURFACE, RUN_STATUS, Query("trigger_id", "Only this trigger's runs"), *LIST_QUERY),
    errors=READ_ERRORS,
)
def list_runs(who):
    return triggers.list_runs(who, bp.params())


@route(
    bp,
    "/v1/runs/{run_id}",
    "GET",
    role="viewer",
    summary="One run (also a queued or running one)",
    answers={200: "RunOut"},
    errors=READ_ERRORS,
)
def get_run(who, run_id):
    return triggers.get_run_view(who, run_id)
