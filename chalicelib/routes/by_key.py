"""``/v1/triggers/by-key/{key}``: triggers as code, named by a stable key."""

from __future__ import annotations

from urllib.parse import unquote

from chalice import Response

from chalicelib import wiring
from chalicelib.declare import READ_ERRORS, WRITE_ERRORS
from chalicelib.routes.resource import Resource, route

triggers = wiring.lazy_module("chalicelib.services.triggers")

bp = Resource(__name__)


@route(
    bp,
    "/v1/triggers/by-key/{key}",
    "PUT",
    role="operator",
    summary="Create or update the trigger named by a key (triggers as code)",
    answers={200: "TriggerPut", 201: "TriggerPut"},
    body="TriggerByKeyIn",
    errors=(*WRITE_ERRORS, 409, 503),
    description="A create body under a stable `key` (unique per tenant). 201 when it creates "
    "the trigger (an event trigger's webhook secret shown this once); else the trigger is "
    "updated in place, keeping its state, runs and webhook secret, and the answer is 200 "
    "with `changed` (false when the body changes nothing) and `changes`. `state` is the "
    "initial state (used on create only). `managed_by` names the tool managing it.",
)
def put_trigger_by_key(who, key):
    status, body = triggers.put_trigger(who, unquote(key), bp.json(), now=bp.now())
    return Response(body=body, status_code=status)


@route(
    bp,
    "/v1/triggers/by-key/{key}/plan",
    "POST",
    role="viewer",
    summary="What a PUT by key would change (nothing is written)",
    answers={200: "TriggerPlan"},
    body="TriggerByKeyIn",
    errors=(*WRITE_ERRORS,),
    description="The same validation as the PUT; `action` is `create`, `update` or `none`.",
)
def plan_trigger_by_key(who, key):
    return triggers.plan_put(who, unquote(key), bp.json(), now=bp.now())


@route(
    bp,
    "/v1/triggers/by-key/{key}",
    "GET",
    role="viewer",
    summary="Get the trigger named by a key",
    answers={200: "TriggerOut"},
    errors=READ_ERRORS,
)
def get_trigger_by_key(who, key):
    return triggers.get_by_key(who, unquote(key))


@route(
    bp,
    "/v1/triggers/by-key/{key}",
    "DELETE",
    role="operator",
    summary="Delete the trigger named by a key (the key is free again)",
    answers={204: None},
    errors=READ_ERRORS,
)
def delete_trigger_by_key(who, key):
    triggers.delete_by_key(who, unquote(key), now=bp.now())
    return Response(body="", status_code=204)
