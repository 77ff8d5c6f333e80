"""cronhook: Chalice wiring only. Routes, the heartbeat schedule, the SQS runner."""

from __future__ import annotations

from urllib.parse import unquote

from chalice import Chalice, Rate, Response

from chalicelib import wiring
from chalicelib.settings import RUNNER_MAX_CONCURRENCY
from chalicelib.wiring import api, caller, json_body, now_utc

# Imported on first use, not here: every function loads this file, and the authorizer and
# the heartbeat never touch the trigger service (pydantic models; infra/coldstart.py).
triggers = wiring.lazy_module("chalicelib.services.triggers")

app = Chalice(app_name="cronhook")
app.api.cors = False


@app.authorizer(name="authorizer", ttl_seconds=0)
def api_key(auth_request):
    """Every /v1 route but the OpenAPI document: ``Authorization: Bearer <key>``."""
    return wiring.authorize(auth_request)


def _params() -> dict:
    return dict(app.current_request.query_params or {})


@app.route("/healthz", methods=["GET"])
@api
def healthz():
    return {"ok": True}


@app.route("/v1/triggers", methods=["POST"], authorizer=api_key)
@api
def create_trigger():
    request = app.current_request
    body = triggers.create_trigger(caller(request, "operator"), json_body(request), now=now_utc())
    return Response(body=body, status_code=201)


@app.route("/v1/triggers", methods=["GET"], authorizer=api_key)
@api
def list_triggers():
    return triggers.list_triggers(caller(app.current_request), _params())


@app.route("/v1/triggers/{trigger_id}", methods=["GET"], authorizer=api_key)
@api
def get_trigger(trigger_id):
    return triggers.get_trigger_view(caller(app.current_request), trigger_id)


@app.route("/v1/triggers/{trigger_id}", methods=["DELETE"], authorizer=api_key)
@api
def delete_trigger(trigger_id):
    triggers.delete_trigger(caller(app.current_request, "operator"), trigger_id, now=now_utc())
    return Response(body="", status_code=204)


@app.route("/v1/triggers/{trigger_id}/fire", methods=["POST"], authorizer=api_key)
@api
def fire_trigger(trigger_id):
    principal = caller(app.current_request, "operator")
    return Response(body=triggers.fire_now(principal, trigger_id, now=now_utc()), status_code=202)


@app.route("/v1/triggers/{trigger_id}/enable", methods=["POST"], authorizer=api_key)
@api
def enable_trigger(trigger_id):
    principal = caller(app.current_request, "operator")
    return triggers.set_enabled(principal, trigger_id, enabled=True, now=now_utc())


@app.route("/v1/triggers/{trigger_id}/disable", methods=["POST"], authorizer=api_key)
@api
def disable_trigger(trigger_id):
    request = app.current_request
    principal = caller(request, "operator")
    note = triggers.disable_note(json_body(request, required=False))
    return triggers.set_enabled(principal, trigger_id, enabled=False, now=now_utc(), note=note)


@app.route("/v1/triggers/{trigger_id}/preview", methods=["GET"], authorizer=api_key)
@api
def preview_trigger(trigger_id):
    principal = caller(app.current_request)
    return triggers.preview_trigger(principal, trigger_id, _params(), now=now_utc())


@app.route("/v1/schedules/preview", methods=["POST"], authorizer=api_key)
@api
def preview_schedule():
    request = app.current_request
    caller(request)
    return triggers.preview_schedule(json_body(request), now=now_utc())


@app.route("/v1/triggers/{trigger_id}/runs", methods=["GET"], authorizer=api_key)
@api
def list_trigger_runs(trigger_id):
    return triggers.list_trigger_runs(caller(app.current_request), trigger_id, _params())


@app.route("/v1/runs", methods=["GET"], authorizer=api_key)
@api
def list_runs():
    return triggers.list_runs(caller(app.current_request), _params())


@app.route("/v1/runs/{run_id}", methods=["GET"], authorizer=api_key)
@api
def get_run(run_id):
    return triggers.get_run_view(caller(app.current_request), run_id)


@app.route(
    "/v1/triggers/{trigger_id}",
    methods=["PATCH"],
    content_types=["application/json", "application/merge-patch+json"],
    authorizer=api_key,
)
@api
def patch_trigger(trigger_id):
    request = app.current_request
    principal = caller(request, "operator")
    return triggers.patch_trigger(principal, trigger_id, json_body(request), now=now_utc())


@app.route("/v1/workflows", methods=["GET"], authorizer=api_key)
@api
def list_workflows():
    caller(app.current_request)
    return triggers.list_workflows(_params())


@app.route("/v1/workflows/{name}/triggers", methods=["DELETE"], authorizer=api_key)
@api
def delete_workflow_triggers(name):
    principal = caller(app.current_request, "operator")
    return triggers.delete_workflow_triggers(principal, unquote(name), now=now_utc())


@app.route("/v1/audit", methods=["GET"], authorizer=api_key)
@api
def list_audit():
    from chalicelib.services import audit

    return audit.list_audit(caller(app.current_request, "admin"), _params())


@app.route("/v1/keys", methods=["POST"], authorizer=api_key)
@api
def create_key():
    from chalicelib.services import keys

    request = app.current_request
    body = keys.create_key(caller(request, "admin"), json_body(request), now=now_utc())
    return Response(body=body, status_code=201)


@app.route("/v1/keys", methods=["GET"], authorizer=api_key)
@api
def list_keys():
    from chalicelib.services import keys

    return keys.list_keys(caller(app.current_request, "admin"), _params())


@app.route("/v1/keys/{key_id}", methods=["DELETE"], authorizer=api_key)
@api
def delete_key(key_id):
    from chalicelib.services import keys

    keys.delete_key(caller(app.current_request, "admin"), key_id, now=now_utc())
    return Response(body="", status_code=204)


@app.route("/v1/openapi.json", methods=["GET"])
@api
def openapi_document():
    from chalicelib import openapi

    return openapi.document(app.routes)


@app.middleware("http")
def contract_errors(event, get_response):
    return wiring.contract_error_shape(get_response(event))


@app.route("/hooks/{token}", methods=["POST"], content_types=["*/*"])
@api
def receive_webhook(token):
    from chalicelib.services import events

    request = app.current_request
    status, body = events.receive(
        token, body=request.raw_body or b"", headers=dict(request.headers), now=now_utc()
    )
    return Response(body=body, status_code=status, headers={"Content-Type": "application/json"})


@app.route("/v1/triggers/{trigger_id}/rotate-secret", methods=["POST"], authorizer=api_key)
@api
def rotate_secret(trigger_id):
    from chalicelib.services import events

    request = app.current_request
    principal = caller(request, "operator")
    body = json_body(request, required=False)
    return events.rotate_secret(principal, trigger_id, body, now=now_utc())


@app.route("/v1/triggers/{trigger_id}/events", methods=["GET"], authorizer=api_key)
@api
def list_trigger_events(trigger_id):
    from chalicelib.services import events

    return events.list_events(caller(app.current_request), trigger_id, _params())


@app.route("/v1/events/{event_id}/replay", methods=["POST"], authorizer=api_key)
@api
def replay_event(event_id):
    from chalicelib.services import events

    principal = caller(app.current_request, "operator")
    body = events.replay_event(principal, event_id, now=now_utc())
    return Response(body=body, status_code=202)


@app.route("/v1/triggers/{trigger_id}/deliveries", methods=["GET"], authorizer=api_key)
@api
def list_trigger_deliveries(trigger_id):
    from chalicelib.services import deliveries

    return deliveries.list_deliveries(caller(app.current_request), trigger_id, _params())


@app.route("/v1/health", methods=["GET"], authorizer=api_key)
@api
def health():
    from chalicelib.services import health

    return health.health(caller(app.current_request), now=now_utc())


@app.route("/", methods=["GET"])
def console_index():
    from chalicelib import console

    return console.asset("index.html")


@app.route("/console/{name}", methods=["GET"])
def console_asset(name):
    from chalicelib import console

    return console.asset(name)


@app.schedule(Rate(1, unit=Rate.MINUTES), name="heartbeat")
def heartbeat(event):
    wiring.heartbeat_once()


@app.on_sqs_message(
    queue="cronhook-fires", batch_size=10, name="runner", maximum_concurrency=RUNNER_MAX_CONCURRENCY
)
def runner(event):
    return wiring.handle_sqs_batch(event.to_dict(), event.context)
