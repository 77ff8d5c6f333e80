"""``/v1/workflows``: the registered workflows, and deleting a workflow's triggers."""

from __future__ import annotations

from urllib.parse import unquote

from chalicelib import wiring
from chalicelib.declare import LIST_QUERY, READ_ERRORS
from chalicelib.routes.resource import Resource, route

triggers = wiring.lazy_module("chalicelib.services.triggers")

bp = Resource(__name__)


@route(
    bp,
    "/v1/workflows",
    "GET",
    role="viewer",
    summary="The registered workflows",
    answers={200: "WorkflowPage"},
    query=LIST_QUERY,
    errors=READ_ERRORS,
)
def list_workflows(who):
    return triggers.list_workflows(bp.params())


@route(
    bp,
    "/v1/workflows/{name}/triggers",
    "DELETE",
    role="operator",
    summary="Delete every trigger of a workflow (in the caller's tenant)",
    answers={200: "DeletedOut"},
    errors=READ_ERRORS,
)
def delete_workflow_triggers(who, name):
    return triggers.delete_workflow_triggers(who, unquote(name), now=bp.now())
