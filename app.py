"""cronhook: Chalice wiring only. Routes, the heartbeat schedule, the SQS runner."""

from __future__ import annotations

from urllib.parse import unquote

from chalice import Chalice, Rate, Response

from chalicelib import wiring
from chalicelib.declare import LIST_QUERY, READ_ERRORS, WRITE_ERRORS, Query, declare
from chalicelib.domain.runs import RUN_STATUSES
from chalicelib.settings import ENQUEUER_MAX_CONCURRENCY, RUNNER_MAX_CONCURRENCY
from chalicelib.wiring import api, caller, json_body, now_utc

# Imported on first use, not here: every function loads this file, and the authorizer and
# the heartbeat never touch the trigger service (pydantic models; infra/coldstart.py).
triggers = wiring.lazy_module("chalicelib.services.triggers")
run_pages = wiring.lazy_module("chalicelib.services.run_pages")
run_logs_service = wiring.lazy_module("chalicelib.services.run_logs")

app = Chalice(app_name="cronhook")
app.api.cors = False

RUN_STATUS = Query(
    "status",
    "Only runs with this status",
    enum=RUN_STATUSES,
)
RUN_SURFACE = Query(
    "surface", "Only runs from this surface", enum=("schedule", "event", "manual", "backfill")
)


@app.authorizer(name="authorizer", ttl_seconds=0)
def api_key(auth_request):
    """Every /v1 route but the OpenAPI document: ``Authorization: Bearer <key>``."""
    return wiring.authorize(auth_request)


def _params() -> dict:
    request = app.current_request
    return dict((request.query_params if request is not None else None) or {})


@app.route("/healthz", methods=["GET", "HEAD"])
@declare("Liveness", role=None, answers={200: "HealthOut"})
@api
def healthz():
    if app.current_request.method == "HEAD":
        return Response(body="", status_code=200)
    return {"ok": True}


@app.route("/v1/triggers", methods=["POST"], authorizer=api_key)
@declare(
    "Create a trigger",
    role="operator",
    answers={201: "TriggerCreated"},
    body="TriggerIn",
    errors=(*WRITE_ERRORS, 503),
    description="Exactly one of `schedule.cron`, `schedule.interval_s`, `schedule.at` or "
    "`event.source`. An event trigger's answer carries `webhook.url` and `webhook.secret`, "
    "an `http:` target's `outbound_secret`: each shown only this once.",
)
@api
def create_trigger():
    request = app.current_request
    body = triggers.create_trigger(caller(request, "operator"), json_body(request), now=now_utc())
    return Response(body=body, status_code=201)


@app.route("/v1/triggers", methods=["GET"], authorizer=api_key)
@declare(
    "List triggers, newest first",
    role="viewer",
    answers={200: "TriggerPage"},
    query=(
        Query("tag", "Only triggers with this tag"),
        Query("workflow", "Only triggers of this workflow"),
        Query("status", "Only triggers with this status", enum=("active", "disabled")),
        *LIST_QUERY,
    ),
    errors=READ_ERRORS,
)
@api
def list_triggers():
    return triggers.list_triggers(caller(app.current_request), _params())


@app.route("/v1/triggers/{trigger_id}", methods=["GET"], authorizer=api_key)
@declare(
    "Get a trigger (with its state)", role="viewer", answers={200: "TriggerOut"}, errors=READ_ERRORS
)
@api
def get_trigger(trigger_id):
    return triggers.get_trigger_view(caller(app.current_request), trigger_id)


@app.route("/v1/triggers/{trigger_id}", methods=["DELETE"], authorizer=api_key)
@declare(
    "Delete a trigger (it stops at once; its runs stay for their retention)",
    role="operator",
    answers={204: None},
    errors=READ_ERRORS,
)
@api
def delete_trigger(trigger_id):
    triggers.delete_trigger(caller(app.current_request, "operator"), trigger_id, now=now_utc())
    return Response(body="", status_code=204)


@app.route("/v1/triggers/by-key/{key}", methods=["PUT"], authorizer=api_key)
@declare(
    "Create or update the trigger named by a key (triggers as code)",
    role="operator",
    answers={200: "TriggerPut", 201: "TriggerPut"},
    body="TriggerByKeyIn",
    errors=(*WRITE_ERRORS, 409, 503),
    description="A create body under a stable `key` (unique per tenant). 201 when it creates "
    "the trigger (an event trigger's webhook secret shown this once); else the trigger is "
    "updated in place, keeping its state, runs and webhook secret, and the answer is 200 "
    "with `changed` (false when the body changes nothing) and `changes`. `state` is the "
    "initial state (used on create only). `managed_by` names the tool managing it.",
)
@api
def put_trigger_by_key(key):
    request = app.current_request
    principal = caller(request, "operator")
    status, body = triggers.put_trigger(principal, unquote(key), json_body(request), now=now_utc())
    return Response(body=body, status_code=status)


@app.route("/v1/triggers/by-key/{key}/plan", methods=["POST"], authorizer=api_key)
@declare(
    "What a PUT by key would change (nothing is written)",
    role="viewer",
    answers={200: "TriggerPlan"},
    body="TriggerByKeyIn",
    errors=(*WRITE_ERRORS,),
    description="The same validation as the PUT; `action` is `create`, `update` or `none`.",
)
@api
def plan_trigger_by_key(key):
    request = app.current_request
    principal = caller(request)
    return triggers.plan_put(principal, unquote(key), json_body(request), now=now_utc())


@app.route("/v1/triggers/by-key/{key}", methods=["GET"], authorizer=api_key)
@declare(
    "Get the trigger named by a key", role="viewer", answers={200: "TriggerOut"}, errors=READ_ERRORS
)
@api
def get_trigger_by_key(key):
    return triggers.get_by_key(caller(app.current_request), unquote(key))


@app.route("/v1/triggers/by-key/{key}", methods=["DELETE"], authorizer=api_key)
@declare(
    "Delete the trigger named by a key (the key is free again)",
    role="operator",
    answers={204: None},
    errors=READ_ERRORS,
)
@api
def delete_trigger_by_key(key):
    principal = caller(app.current_request, "operator")
    triggers.delete_by_key(principal, unquote(key), now=now_utc())
    return Response(body="", status_code=204)


@app.route("/v1/triggers/{trigger_id}/fire", methods=["POST"], authorizer=api_key)
@declare(
    "Run a trigger now (surface manual)",
    role="operator",
    answers={202: "RunQueued"},
    body="FireIn",
    optional_body=True,
    errors=(*WRITE_ERRORS, 409, 503),
    description="`{\"payload\": ...}` is this run's payload instead of the trigger's. On a "
    'busy trigger the run waits its turn (`queued: true`), unless `{"if_idle": true}` '
    "(then 409).",
)
@api
def fire_trigger(trigger_id):
    request = app.current_request
    principal = caller(request, "operator")
    body = json_body(request, required=False)
    return Response(
        body=triggers.fire_now(principal, trigger_id, now=now_utc(), body=body), status_code=202
    )


@app.route("/v1/triggers/{trigger_id}/enable", methods=["POST"], authorizer=api_key)
@declare(
    "Enable (the next fire is computed from now)",
    role="operator",
    answers={200: "TriggerOut"},
    body="DisableIn",
    optional_body=True,
    errors=(*WRITE_ERRORS, 409),
)
@api
def enable_trigger(trigger_id):
    request = app.current_request
    principal = caller(request, "operator")
    body = json_body(request, required=False)
    return triggers.set_enabled(principal, trigger_id, enabled=True, now=now_utc(), body=body)


@app.route("/v1/triggers/{trigger_id}/disable", methods=["POST"], authorizer=api_key)
@declare(
    "Pause (reason manual), with an optional note",
    role="operator",
    answers={200: "TriggerOut"},
    body="DisableIn",
    optional_body=True,
    errors=(*WRITE_ERRORS, 409),
    description="The trigger shows `disabled_note`, `disabled_by` and `disabled_at` until "
    "it is enabled again.",
)
@api
def disable_trigger(trigger_id):
    request = app.current_request
    principal = caller(request, "operator")
    body = json_body(request, required=False)
    return triggers.set_enabled(principal, trigger_id, enabled=False, now=now_utc(), body=body)


@app.route("/v1/triggers/enable", methods=["POST"], authorizer=api_key)
@declare(
    "Resume every trigger with a tag and/or a workflow",
    role="operator",
    answers={200: "SwitchedOut"},
    body="SwitchManyIn",
    errors=WRITE_ERRORS,
)
@api
def enable_triggers():
    request = app.current_request
    principal = caller(request, "operator")
    return triggers.set_enabled_many(principal, json_body(request), enabled=True, now=now_utc())


@app.route("/v1/triggers/disable", methods=["POST"], authorizer=api_key)
@declare(
    "Pause every trigger with a tag and/or a workflow, with an optional note",
    role="operator",
    answers={200: "SwitchedOut"},
    body="SwitchManyIn",
    errors=WRITE_ERRORS,
)
@api
def disable_triggers():
    request = app.current_request
    principal = caller(request, "operator")
    return triggers.set_enabled_many(principal, json_body(request), enabled=False, now=now_utc())


@app.route("/v1/triggers/{trigger_id}/skip", methods=["POST"], authorizer=api_key)
@declare(
    "Skip one future slot, with a reason",
    role="operator",
    answers={200: "TriggerOut"},
    body="SkipIn",
    errors=(*WRITE_ERRORS, 409),
    description="The slot must be one the schedule has (see the preview), after now and after "
    "the last slot that fired. When it comes it is recorded `skipped` with the reason and "
    "not run. Previews list it under `calendar` (`change: skipped`).",
)
@api
def skip_slot(trigger_id):
    request = app.current_request
    principal = caller(request, "operator")
    return triggers.skip_slot(principal, trigger_id, json_body(request), now=now_utc())


@app.route("/v1/triggers/{trigger_id}/skip/{slot}", methods=["DELETE"], authorizer=api_key)
@declare(
    "Undo a skip that has not passed",
    role="operator",
    answers={200: "TriggerOut"},
    errors=(*WRITE_ERRORS, 409),
    description="`slot` is the skipped instant (ISO-8601). 404 when there is no skip there; "
    "409 when the slot has passed (its `skipped` record stands).",
)
@api
def unskip_slot(trigger_id, slot):
    principal = caller(app.current_request, "operator")
    return triggers.unskip_slot(principal, trigger_id, unquote(slot), now=now_utc())


@app.route("/v1/triggers/{trigger_id}/extra", methods=["POST"], authorizer=api_key)
@declare(
    "One extra run at an instant",
    role="operator",
    answers={200: "TriggerOut"},
    body="ExtraIn",
    errors=(*WRITE_ERRORS, 409),
    description="A future instant (at most 366 days ahead) that fires once as a slot of the "
    "schedule (run id and record as a slot's), with `payload` if given. Previews list it "
    "under `calendar` (`change: extra`).",
)
@api
def add_extra(trigger_id):
    request = app.current_request
    principal = caller(request, "operator")
    return triggers.add_extra(principal, trigger_id, json_body(request), now=now_utc())


@app.route("/v1/triggers/{trigger_id}/backfill", methods=["POST"], authorizer=api_key)
@declare(
    "Run the slots of a past window (at most 1,000), oldest first",
    role="operator",
    answers={200: "BackfillPlan", 202: "BackfillStarted"},
    body="BackfillIn",
    errors=(*WRITE_ERRORS, 409, 503),
    description="Slots with `from <= slot <= to`; each runs with the run id the slot has on "
    "the schedule, so a slot that already ran is not run again. Runs have surface "
    "`backfill` and go through the trigger's concurrency, serialize_key and budget. "
    "`dry_run` answers 200 with the count, the first and last slot and a cost estimate "
    "from the trigger's recent runs.",
)
@api
def backfill_trigger(trigger_id):
    from chalicelib.services import ondemand

    request = app.current_request
    principal = caller(request, "operator")
    body = ondemand.backfill(principal, trigger_id, json_body(request), now=now_utc())
    return Response(body=body, status_code=200 if "run_ids" not in body else 202)


@app.route("/v1/triggers/{trigger_id}/preview", methods=["GET"], authorizer=api_key)
@declare(
    "The next fires of a trigger",
    role="viewer",
    answers={200: "PreviewOut"},
    query=(Query("count", "How many (10)", type="integer", minimum=1, maximum=100),),
    errors=READ_ERRORS,
)
@api
def preview_trigger(trigger_id):
    principal = caller(app.current_request)
    return triggers.preview_trigger(principal, trigger_id, _params(), now=now_utc())


@app.route("/v1/schedules/simulate", methods=["POST"], authorizer=api_key)
@declare(
    "What-if: a trigger's slots over a window, through outages, and what each becomes",
    role="viewer",
    answers={200: "SimulationOut"},
    body="SimulateIn",
    errors=READ_ERRORS + (422,),
    description="`trigger` (a create body) or `trigger_id`, `from`, `to` (at most 366 days "
    "apart), `outages` (nothing runs from `from` to `to`) and `run_s` (how long a run holds "
    "the trigger, 30). Each slot's `outcome` is `run`, `skipped`, `missed`, `moved`, "
    "`holiday` or `extra`, decided by the engine's own schedule, catch-up and overlap "
    "rules; `estimated_usd` prices the runs at the benchmark's cost per fire.",
)
@api
def simulate_schedule():
    request = app.current_request
    principal = caller(request, "viewer")
    return triggers.simulate_schedule(principal, json_body(request), now=now_utc())


@app.route("/v1/schedules/preview", methods=["POST"], authorizer=api_key)
@declare(
    "The next fires of a schedule that is not stored",
    role="viewer",
    answers={200: "PreviewOut"},
    body="PreviewIn",
    errors=WRITE_ERRORS,
)
@api
def preview_schedule():
    request = app.current_request
    caller(request)
    return triggers.preview_schedule(json_body(request), now=now_utc())


@app.route("/v1/triggers/{trigger_id}/runs", methods=["GET"], authorizer=api_key)
@declare(
    "A trigger's runs, newest first (runs in flight first)",
    role="viewer",
    answers={200: "RunPage"},
    query=(RUN_SURFACE, RUN_STATUS, *LIST_QUERY),
    errors=READ_ERRORS,
)
@api
def list_trigger_runs(trigger_id):
    return triggers.list_trigger_runs(caller(app.current_request), trigger_id, _params())


@app.route("/v1/runs", methods=["GET"], authorizer=api_key)
@declare(
    "The tenant's runs, newest first (runs in flight first)",
    role="viewer",
    answers={200: "RunPage"},
    query=(RUN_SURFACE, RUN_STATUS, Query("trigger_id", "Only this trigger's runs"), *LIST_QUERY),
    errors=READ_ERRORS,
)
@api
def list_runs():
    return triggers.list_runs(caller(app.current_request), _params())


@app.route("/v1/runs/{run_id}", methods=["GET"], authorizer=api_key)
@declare(
    "One run (also a queued or running one), with its payload and its error's detail",
    role="viewer",
    answers={200: "RunDetailOut"},
    errors=READ_ERRORS,
)
@api
def get_run(run_id):
    return run_pages.get_run_page(caller(app.current_request), run_id)


@app.route("/v1/runs/{run_id}/rerun", methods=["POST"], authorizer=api_key)
@declare(
    "Run it again: a manual run of its trigger with the same payload",
    role="operator",
    answers={202: "RunQueued"},
    errors=(*WRITE_ERRORS, 409, 503),
    description="The new run's `rerun_of` is this run. A busy trigger queues it.",
)
@api
def rerun_run(run_id):
    principal = caller(app.current_request, "operator")
    return Response(body=run_pages.rerun(principal, run_id, now=now_utc()), status_code=202)


@app.route("/v1/runs/{run_id}/logs", methods=["GET"], authorizer=api_key)
@declare(
    "The run's log lines",
    role="viewer",
    answers={200: "RunLogsOut"},
    errors=READ_ERRORS,
    description="Local: the stack's own log. AWS: a CloudWatch Logs Insights query on the "
    "run id (`query`, and `console_url` to open it in the AWS console).",
)
@api
def run_logs(run_id):
    return run_logs_service.run_logs(caller(app.current_request), run_id, now=now_utc())


@app.route(
    "/v1/triggers/{trigger_id}",
    methods=["PATCH"],
    content_types=["application/json", "application/merge-patch+json"],
    authorizer=api_key,
)
@declare(
    "Edit a trigger in place",
    role="operator",
    answers={200: "TriggerEditOut"},
    body="TriggerPatch",
    errors=(*WRITE_ERRORS, 409),
    query=(
        Query(
            "dry_run",
            "true: answer the trigger as the edit would make it, with `slots_diff` (the slots "
            "added and removed over the next 30 days); nothing is stored",
            enum=("true", "false"),
        ),
    ),
    description="Send only the fields to change (objects such as `limits` and `event` merge). "
    "A cadence edit infers the kind from the field sent (`cron`, `interval_s` or `at`), "
    "clears the other kind's fields and recomputes `next_fire_at` strictly after now and "
    "after the last slot that fired, so no slot runs twice. Send `version` (from the "
    "trigger) to get a 409 instead of overwriting someone else's edit. `state` is replaced "
    "as a whole, compare-and-set against runs.",
)
@api
def patch_trigger(trigger_id):
    request = app.current_request
    principal = caller(request, "operator")
    if _params().get("dry_run") == "true":
        return triggers.dry_run_patch(principal, trigger_id, json_body(request), now=now_utc())
    return triggers.patch_trigger(principal, trigger_id, json_body(request), now=now_utc())


@app.route("/v1/workflows", methods=["GET"], authorizer=api_key)
@declare(
    "The registered workflows",
    role="viewer",
    answers={200: "WorkflowPage"},
    query=LIST_QUERY,
    errors=READ_ERRORS,
)
@api
def list_workflows():
    caller(app.current_request)
    return triggers.list_workflows(_params())


@app.route("/v1/workflows/{name}/triggers", methods=["DELETE"], authorizer=api_key)
@declare(
    "Delete every trigger of a workflow (in the caller's tenant)",
    role="operator",
    answers={200: "DeletedOut"},
    errors=READ_ERRORS,
)
@api
def delete_workflow_triggers(name):
    principal = caller(app.current_request, "operator")
    return triggers.delete_workflow_triggers(principal, unquote(name), now=now_utc())


@app.route("/v1/audit", methods=["GET"], authorizer=api_key)
@declare(
    "The audit log, newest first",
    role="admin",
    answers={200: "AuditPage"},
    query=(
        Query("trigger_id", "Only entries about this trigger"),
        Query("action", "Only this action"),
        *LIST_QUERY,
    ),
    errors=READ_ERRORS,
)
@api
def list_audit():
    from chalicelib.services import audit

    return audit.list_audit(caller(app.current_request, "admin"), _params())


@app.route("/v1/keys", methods=["POST"], authorizer=api_key)
@declare(
    "Create an API key (shown only in this answer)",
    role="admin",
    answers={201: "KeyCreated"},
    body="KeyIn",
    errors=WRITE_ERRORS,
    description="Only the root key may name another `tenant` (403 otherwise). Keys are "
    "stored as their SHA-256 only.",
)
@api
def create_key():
    from chalicelib.services import keys

    request = app.current_request
    body = keys.create_key(caller(request, "admin"), json_body(request), now=now_utc())
    return Response(body=body, status_code=201)


@app.route("/v1/keys", methods=["GET"], authorizer=api_key)
@declare(
    "The tenant's API keys (never the keys themselves)",
    role="admin",
    answers={200: "KeyPage"},
    query=(Query("tenant", "Another tenant's keys (root key only)"), *LIST_QUERY),
    errors=READ_ERRORS,
)
@api
def list_keys():
    from chalicelib.services import keys

    return keys.list_keys(caller(app.current_request, "admin"), _params())


@app.route("/v1/keys/{key_id}", methods=["DELETE"], authorizer=api_key)
@declare(
    "Delete an API key",
    role="admin",
    answers={204: None},
    errors=READ_ERRORS,
    description="The key stops working at once; triggers it created are disabled "
    "(`creator_gone`) at their next fire.",
)
@api
def delete_key(key_id):
    from chalicelib.services import keys

    keys.delete_key(caller(app.current_request, "admin"), key_id, now=now_utc())
    return Response(body="", status_code=204)


@app.route("/v1/openapi.json", methods=["GET"])
@declare(
    "This document",
    role=None,
    answers={200: None},
    description="OpenAPI 3.1, built from what each route declares.",
)
@api
def openapi_document():
    from chalicelib import openapi

    return openapi.document(app.routes)


@app.middleware("http")
def contract_errors(event, get_response):
    return wiring.contract_error_shape(get_response(event))


@app.route("/hooks/{token}", methods=["POST"], content_types=["*/*"])
@declare(
    "Receive a signed webhook",
    role=None,
    answers={200: "HookAnswer", 202: "HookAnswer"},
    raw_body=True,
    errors=(400, 401, 404, 410, 413, 415, 422, 429, 503),
    description="Authenticated by the provider's signature, not by an API key; see the "
    "contract's Ingress section and docs/providers/.",
)
@api
def receive_webhook(token):
    from chalicelib.services import events

    request = app.current_request
    status, body = events.receive(
        token, body=request.raw_body or b"", headers=dict(request.headers), now=now_utc()
    )
    return Response(body=body, status_code=status, headers={"Content-Type": "application/json"})


@app.route("/hooks/{token}", methods=["GET"])
@declare(
    "Answer LinkedIn's endpoint validation (a linkedin trigger's URL)",
    role=None,
    answers={200: "ChallengeAnswer"},
    query=(Query("challengeCode", "The code LinkedIn sends to validate the URL (a UUID)"),),
    errors=(401, 422, 429),
    description="`challengeResponse` is hex HMAC-SHA256 of `challengeCode` keyed with the "
    "trigger's client secret; any other token, and a code that is not a UUID (the endpoint "
    "signs nothing else), answer the same 401 as a bad signature.",
)
@api
def answer_hook_challenge(token):
    from chalicelib.sources import linkedin

    return linkedin.answer_challenge(token, _params(), now=now_utc())


@app.route("/v1/triggers/{trigger_id}/rotate-secret", methods=["POST"], authorizer=api_key)
@declare(
    "Rotate an event trigger's signing secret",
    role="operator",
    answers={200: "SecretOut"},
    body="RotateSecretIn",
    optional_body=True,
    errors=(*WRITE_ERRORS, 409),
    description="The new secret is shown only in this answer; the old one keeps verifying "
    "for a grace period.",
)
@api
def rotate_secret(trigger_id):
    from chalicelib.services import events

    request = app.current_request
    principal = caller(request, "operator")
    body = json_body(request, required=False)
    return events.rotate_secret(principal, trigger_id, body, now=now_utc())


@app.route("/v1/triggers/{trigger_id}/events", methods=["GET"], authorizer=api_key)
@declare(
    "An event trigger's received events, newest first",
    role="viewer",
    answers={200: "EventPage"},
    query=(Query("status", "Only events with this status"), *LIST_QUERY),
    errors=READ_ERRORS,
)
@api
def list_trigger_events(trigger_id):
    from chalicelib.services import events

    return events.list_events(caller(app.current_request), trigger_id, _params())


@app.route("/v1/events/{event_id}/replay", methods=["POST"], authorizer=api_key)
@declare(
    "Run a stored event again",
    role="operator",
    answers={202: "ReplayStarted"},
    errors=(*READ_ERRORS, 409, 503),
)
@api
def replay_event(event_id):
    from chalicelib.services import events

    principal = caller(app.current_request, "operator")
    body = events.replay_event(principal, event_id, now=now_utc())
    return Response(body=body, status_code=202)


@app.route("/v1/triggers/{trigger_id}/deliveries", methods=["GET"], authorizer=api_key)
@declare(
    "The webhook deliveries to a trigger, accepted and rejected, newest first (kept 7 days)",
    role="viewer",
    answers={200: "DeliveryPage"},
    query=(
        Query(
            "outcome",
            "Only deliveries with this outcome",
            enum=(
                "accepted",
                "duplicate",
                "filtered",
                "invalid_signature",
                "stale",
                "too_large",
                "throttled",
            ),
        ),
        *LIST_QUERY,
    ),
    errors=READ_ERRORS,
)
@api
def list_trigger_deliveries(trigger_id):
    from chalicelib.services import deliveries

    return deliveries.list_deliveries(caller(app.current_request), trigger_id, _params())


@app.route("/v1/health", methods=["GET"], authorizer=api_key)
@declare(
    "Is the scheduler ticking: last tick, queue and dead-letter depth, lateness, fires",
    role="viewer",
    answers={200: "HealthReport"},
    errors=READ_ERRORS,
)
@api
def health():
    from chalicelib.services import health

    return health.health(caller(app.current_request), now=now_utc())


@app.route("/", methods=["GET"])
@declare(
    "The web console (HTML)",
    role=None,
    answers={200: None},
    content_types=("text/html",),
)
def console_index():
    from chalicelib import console

    return console.asset("index.html")


@app.route("/console/{name}", methods=["GET"])
@declare(
    "The console's static files (CSS, JavaScript)",
    role=None,
    answers={200: None},
    errors=(404,),
    content_types=("text/css", "text/javascript"),
)
def console_asset(name):
    from chalicelib import console

    return console.asset(name)


# -- alerts (chalicelib/services/alerts; docs/alerts.md) -----------------------------------
alerts = wiring.lazy_module("chalicelib.services.alerts.policies")


@app.route("/v1/alerts", methods=["POST"], authorizer=api_key)
@declare(
    "Create an alert policy",
    role="admin",
    answers={201: "AlertCreated"},
    body="AlertIn",
    errors=(*WRITE_ERRORS, 503),
    description="Who is told when the triggers it matches fail, are disabled, recover, run "
    "late or hear nothing, and how (email, Slack, a signed webhook, SNS). Slack and webhook "
    "URLs pass the address policy of `http:` targets. A policy with a webhook channel gets a "
    "signing secret, shown only in this answer as `signing_secret`.",
)
@api
def create_alert():
    request = app.current_request
    body = alerts.create_alert(caller(request, "admin"), json_body(request), now=now_utc())
    return Response(body=body, status_code=201)


@app.route("/v1/alerts", methods=["GET"], authorizer=api_key)
@declare("List alert policies", role="viewer", answers={200: "AlertList"}, errors=READ_ERRORS)
@api
def list_alerts():
    return alerts.list_alerts(caller(app.current_request, "viewer"))


@app.route("/v1/alerts/{alert_id}", methods=["GET"], authorizer=api_key)
@declare("Get an alert policy", role="viewer", answers={200: "AlertOut"}, errors=READ_ERRORS)
@api
def get_alert(alert_id):
    return alerts.get_alert(caller(app.current_request, "viewer"), alert_id)


@app.route(
    "/v1/alerts/{alert_id}",
    methods=["PATCH"],
    content_types=["application/json", "application/merge-patch+json"],
    authorizer=api_key,
)
@declare(
    "Edit an alert policy",
    role="admin",
    answers={200: "AlertOut"},
    body="AlertPatch",
    errors=(*WRITE_ERRORS, 503),
    description="The fields sent replace the stored ones; `channels` is replaced as a whole "
    "(send each Slack URL again: it is never shown).",
)
@api
def patch_alert(alert_id):
    request = app.current_request
    return alerts.patch_alert(caller(request, "admin"), alert_id, json_body(request), now=now_utc())


@app.route("/v1/alerts/{alert_id}", methods=["DELETE"], authorizer=api_key)
@declare("Delete an alert policy", role="admin", answers={204: None}, errors=READ_ERRORS)
@api
def delete_alert(alert_id):
    alerts.delete_alert(caller(app.current_request, "admin"), alert_id, now=now_utc())
    return Response(body="", status_code=204)


@app.route("/v1/alerts/{alert_id}/test", methods=["POST"], authorizer=api_key)
@declare(
    "Send a test notification on every channel",
    role="admin",
    answers={202: "AlertTestQueued"},
    errors=(*READ_ERRORS, 503),
    description="Queued, and sent within seconds; each channel's outcome is listed in "
    "`/v1/alerts/{alert_id}/notifications` (kind `test`).",
)
@api
def test_alert(alert_id):
    body = alerts.test_alert(caller(app.current_request, "admin"), alert_id, now=now_utc())
    return Response(body=body, status_code=202)


@app.route("/v1/alerts/{alert_id}/notifications", methods=["GET"], authorizer=api_key)
@declare(
    "An alert policy's notifications, newest first",
    role="viewer",
    answers={200: "NotificationPage"},
    query=LIST_QUERY,
    errors=READ_ERRORS,
    description="`outcome`: `pending` (waiting for its minute's message), `sent`, `failed` "
    "(with `error`, after retries) or `suppressed` (inside `quiet_s`).",
)
@api
def list_alert_notifications(alert_id):
    return alerts.list_notifications(caller(app.current_request, "viewer"), alert_id, _params())


@app.schedule(Rate(1, unit=Rate.MINUTES), name="heartbeat")
def heartbeat(event):
    wiring.heartbeat_once()


@app.on_sqs_message(
    queue="cronhook-fires", batch_size=10, name="runner", maximum_concurrency=RUNNER_MAX_CONCURRENCY
)
def runner(event):
    return wiring.handle_sqs_batch(event.to_dict(), event.context)


@app.on_sqs_message(
    queue="cronhook-ticks",
    batch_size=1,
    name="enqueuer",
    maximum_concurrency=ENQUEUER_MAX_CONCURRENCY,
)
def enqueuer(event):
    """A fanned-out heartbeat tick: one due shard per message (services/heartbeat/fanout.py)."""
    return wiring.handle_tick_batch(event.to_dict(), event.context)


@app.on_sqs_message(queue="cronhook-ingest", batch_size=10, name="ingest")
def ingest(event):
    """EventBridge rules (eventbridge, s3) and SES mail (email) deliver here."""
    return wiring.handle_ingest_batch(event.to_dict())


@app.on_sqs_message(queue="cronhook-alerts", batch_size=10, name="alerts")
def alerts_worker(event):
    """Lifecycle transitions, digest flushes and test sends (chalicelib/services/alerts)."""
    return wiring.handle_alerts_batch(event.to_dict())


@app.lambda_function(name="trigger_provider")
def trigger_provider(event, context):
    """``Custom::CronhookTrigger`` in any stack of the account (service token
    ``CronhookTriggerProvider``): create, update, delete a trigger; answer CloudFormation."""
    return wiring.handle_trigger_resource(event)
