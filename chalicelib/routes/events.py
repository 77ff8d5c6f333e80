"""An event trigger's events, deliveries and signing secret; replaying an event."""

from __future__ import annotations

from chalice import Response

from chalicelib.declare import LIST_QUERY, READ_ERRORS, WRITE_ERRORS, Query
from chalicelib.domain.event_rules import EVENT_STATUSES
from chalicelib.routes.resource import Resource, route

bp = Resource(__name__)

# services/deliveries.OUTCOMES (not imported: it loads the store on every function's start).
DELIVERY_OUTCOMES = (
    "accepted",
    "duplicate",
    "filtered",
    "invalid_signature",
    "stale",
    "too_large",
    "throttled",
)


@route(
    bp,
    "/v1/triggers/{trigger_id}/rotate-secret",
    "POST",
    role="operator",
    summary="Rotate an event trigger's signing secret",
    answers={200: "SecretOut"},
    body="RotateSecretIn",
    optional_body=True,
    errors=(*WRITE_ERRORS, 409),
    description="The new secret is shown only in this answer; the old one keeps verifying "
    "for a grace period.",
)
def rotate_secret(who, trigger_id):
    from chalicelib.services import events

    return events.rotate_secret(who, trigger_id, bp.json(required=False), now=bp.now())


@route(
    bp,
    "/v1/triggers/{trigger_id}/events",
    "GET",
    role="viewer",
    summary="An event trigger's received events, newest first",
    answers={200: "EventPage"},
    query=(
        Query("status", "Only events with this status", enum=EVENT_STATUSES),
        *LIST_QUERY,
    ),
    errors=READ_ERRORS,
)
def list_trigger_events(who, trigger_id):
    from chalicelib.services import events

    return events.list_events(who, trigger_id, bp.params())


@route(
    bp,
    "/v1/events/{event_id}/replay",
    "POST",
    role="operator",
    summary="Run a stored event again",
    answers={202: "ReplayStarted"},
    errors=(*READ_ERRORS, 409, 503),
)
def replay_event(who, event_id):
    from chalicelib.services import events

    return Response(body=events.replay_event(who, event_id, now=bp.now()), status_code=202)


@route(
    bp,
    "/v1/triggers/{trigger_id}/deliveries",
    "GET",
    role="viewer",
    summary="The webhook deliveries to a trigger, accepted and rejected, newest first "
    "(kept 7 days)",
    answers={200: "DeliveryPage"},
    query=(
        Query("outcome", "Only deliveries with this outcome", enum=DELIVERY_OUTCOMES),
        *LIST_QUERY,
    ),
    errors=READ_ERRORS,
)
def list_trigger_deliveries(who, trigger_id):
    from chalicelib.services import deliveries

    return deliveries.list_deliveries(who, trigger_id, bp.params())
