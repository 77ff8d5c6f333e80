"""``/v1/keys``: API keys."""

from __future__ import annotations

from chalice import Response

from chalicelib.declare import LIST_QUERY, READ_ERRORS, WRITE_ERRORS, Query
from chalicelib.routes.resource import Resource, route

bp = Resource(__name__)


@route(
    bp,
    "/v1/keys",
    "POST",
    role="admin",
    summary="Create an API key (shown only in this answer)",
    answers={201: "KeyCreated"},
    body="KeyIn",
    errors=WRITE_ERRORS,
    description="Only the root key may name another `tenant` (403 otherwise). Keys are "
    "stored as their SHA-256 only.",
)
def create_key(who):
    from chalicelib.services import keys

    body = keys.create_key(who, bp.json(), now=bp.now())
    return Response(body=body, status_code=201)


@route(
    bp,
    "/v1/keys",
    "GET",
    role="admin",
    summary="The tenant's API keys (never the keys themselves)",
    answers={200: "KeyPage"},
    query=(Query("tenant", "Another tenant's keys (root key only)"), *LIST_QUERY),
    errors=READ_ERRORS,
)
def list_keys(who):
    from chalicelib.services import keys

    return keys.list_keys(who, bp.params())


@route(
    bp,
    "/v1/keys/{key_id}",
    "DELETE",
    role="admin",
    summary="Delete an API key",
    answers={204: None},
    errors=READ_ERRORS,
    description="The key stops working at once; triggers it created are disabled "
    "(`creator_gone`) at their next fire.",
)
def delete_key(who, key_id):
    from chalicelib.services import keys

    keys.delete_key(who, key_id, now=bp.now())
    return Response(body="", status_code=204)
