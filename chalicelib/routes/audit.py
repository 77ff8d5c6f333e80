"""``/v1/audit``: the audit log."""

from __future__ import annotations

from chalicelib.declare import LIST_QUERY, READ_ERRORS, Query
from chalicelib.routes.resource import Resource, route

bp = Resource(__name__)


@route(
    bp,
    "/v1/audit",
    "GET",
    role="admin",
    summary="The audit log, newest first",
    answers={200: "AuditPage"},
    query=(
        Query("trigger_id", "Only entries about this trigger"),
        Query("action", "Only this action"),
        *LIST_QUERY,
    ),
    errors=READ_ERRORS,
)
def list_audit(who):
    from chalicelib.services import audit

    return audit.list_audit(who, bp.params())
