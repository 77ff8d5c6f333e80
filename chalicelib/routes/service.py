"""The service itself: liveness, health, and the OpenAPI document."""

from __future__ import annotations

from chalice import Response

from chalicelib.declare import READ_ERRORS
from chalicelib.routes.resource import Resource, route

bp = Resource(__name__)


@route(bp, "/healthz", ("GET", "HEAD"), role=None, summary="Liveness", answers={200: "HealthOut"})
def healthz():
    if bp.current_request.method == "HEAD":
        return Response(body="", status_code=200)
    return {"ok": True}


@route(
    bp,
    "/v1/openapi.json",
    "GET",
    role=None,
    summary="This document",
    answers={200: None},
    description="OpenAPI 3.1, built from what each route declares.",
)
def openapi_document():
    from chalicelib import openapi

    return openapi.document(bp.current_app.routes)


@route(
    bp,
    "/v1/health",
    "GET",
    role="viewer",
    summary="Is the scheduler ticking: last tick, queue and dead-letter depth, lateness, fires",
    answers={200: "HealthReport"},
    errors=READ_ERRORS,
)
def health(who):
    from chalicelib.services import health

    return health.health(who, now=bp.now())
