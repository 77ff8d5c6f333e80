"""``/v1/alerts``: alert policies and their notifications (chalicelib/services/alerts;
docs/alerts.md)."""

from __future__ import annotations

from chalice import Response

from chalicelib import wiring
from chalicelib.declare import LIST_QUERY, READ_ERRORS, WRITE_ERRORS
from chalicelib.routes.resource import Resource, route

alerts = wiring.lazy_module("chalicelib.services.alerts.policies")

bp = Resource(__name__)


@route(
    bp,
    "/v1/alerts",
    "POST",
    role="admin",
    summary="Create an alert policy",
    answers={201: "AlertCreated"},
    body="AlertIn",
    errors=(*WRITE_ERRORS, 503),
    description="Who is told when the triggers it matches fail, are disabled, recover, run "
    "late or hear nothing, and how (email, Slack, a signed webhook, SNS). Slack and webhook "
    "URLs pass the address policy of `http:` targets. A policy with a webhook channel gets a "
    "signing secret, shown only in this answer as `signing_secret`.",
)
def create_alert(who):
    return Response(body=alerts.create_alert(who, bp.json(), now=bp.now()), status_code=201)


@route(
    bp,
    "/v1/alerts",
    "GET",
    role="viewer",
    summary="List alert policies",
    answers={200: "AlertList"},
    query=LIST_QUERY,
    errors=READ_ERRORS,
)
def list_alerts(who):
    return alerts.list_alerts(who, bp.params())


@route(
    bp,
    "/v1/alerts/{alert_id}",
    "GET",
    role="viewer",
    summary="Get an alert policy",
    answers={200: "AlertOut"},
    errors=READ_ERRORS,
)
def get_alert(who, alert_id):
    return alerts.get_alert(who, alert_id)


@route(
    bp,
    "/v1/alerts/{alert_id}",
    "PATCH",
    role="admin",
    summary="Edit an alert policy",
    answers={200: "AlertOut"},
    body="AlertPatch",
    errors=(*WRITE_ERRORS, 503),
    description="The fields sent replace the stored ones; `channels` is replaced as a whole "
    "(send each Slack URL again: it is never shown).",
)
def patch_alert(who, alert_id):
    return alerts.patch_alert(who, alert_id, bp.json(), now=bp.now())


@route(
    bp,
    "/v1/alerts/{alert_id}",
    "DELETE",
    role="admin",
    summary="Delete an alert policy",
    answers={204: None},
    errors=READ_ERRORS,
)
def delete_alert(who, alert_id):
    alerts.delete_alert(who, alert_id, now=bp.now())
    return Response(body="", status_code=204)


@route(
    bp,
    "/v1/alerts/{alert_id}/test",
    "POST",
    role="admin",
    summary="Send a test notification on every channel",
    answers={202: "AlertTestQueued"},
    errors=(*READ_ERRORS, 503),
    description="Queued, and sent within seconds; each channel's outcome is listed in "
    "`/v1/alerts/{alert_id}/notifications` (kind `test`).",
)
def test_alert(who, alert_id):
    return Response(body=alerts.test_alert(who, alert_id, now=bp.now()), status_code=202)


@route(
    bp,
    "/v1/alerts/{alert_id}/notifications",
    "GET",
    role="viewer",
    summary="An alert policy's notifications, newest first",
    answers={200: "NotificationPage"},
    query=LIST_QUERY,
    errors=READ_ERRORS,
    description="`outcome`: `pending` (waiting for its minute's message), `sent`, `failed` "
    "(with `error`, after retries) or `suppressed` (inside `quiet_s`).",
)
def list_alert_notifications(who, alert_id):
    return alerts.list_notifications(who, alert_id, bp.params())
