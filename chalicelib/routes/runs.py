"""``/v1/runs`` and a trigger's runs."""

from __future__ import annotations

from chalice import Response

from chalicelib import wiring
from chalicelib.declare import LIST_QUERY, READ_ERRORS, WRITE_ERRORS, Query
from chalicelib.domain.runs import RUN_STATUSES, RUN_SURFACES
from chalicelib.routes.resource import Resource, route

triggers = wiring.lazy_module("chalicelib.services.triggers")
run_pages = wiring.lazy_module("chalicelib.services.run_pages")
run_logs_service = wiring.lazy_module("chalicelib.services.run_logs")

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
    summary="One run (also a queued or running one), with its payload and its error's detail",
    answers={200: "RunDetailOut"},
    errors=READ_ERRORS,
)
def get_run(who, run_id):
    return run_pages.get_run_page(who, run_id)


@route(
    bp,
    "/v1/runs/{run_id}/rerun",
    "POST",
    role="operator",
    summary="Run it again: a manual run of its trigger with the same payload",
    answers={202: "RunQueued"},
    errors=(*WRITE_ERRORS, 409, 503),
    description="The new run's `rerun_of` is this run. A busy trigger queues it. No body, "
    "or `{}`: a rerun takes no fields (an unknown one is a 422 naming it).",
)
def rerun_run(who, run_id):
    body = bp.json(required=False)
    return Response(body=run_pages.rerun(who, run_id, now=bp.now(), body=body), status_code=202)


@route(
    bp,
    "/v1/runs/{run_id}/logs",
    "GET",
    role="viewer",
    summary="The run's log lines",
    answers={200: "RunLogsOut"},
    errors=READ_ERRORS,
    description="Local: the stack's own log. AWS: a CloudWatch Logs Insights query on the "
    "run id (`query`, and `console_url` to open it in the AWS console).",
)
def run_logs(who, run_id):
    return run_logs_service.run_logs(who, run_id, now=bp.now())
