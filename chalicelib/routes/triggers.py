"""``/v1/triggers``: create, read, edit, delete, fire, pause and preview triggers."""

from __future__ import annotations

from chalice import Response

from chalicelib import wiring
from chalicelib.declare import LIST_QUERY, READ_ERRORS, WRITE_ERRORS, Query
from chalicelib.routes.resource import Resource, route

# Imported on first use, not here: every function loads app.py, and the authorizer and
# the heartbeat never touch the trigger service (pydantic models; infra/coldstart.py).
triggers = wiring.lazy_module("chalicelib.services.triggers")

bp = Resource(__name__)


@route(
    bp,
    "/v1/triggers",
    "POST",
    role="operator",
    summary="Create a trigger",
    answers={201: "TriggerCreated"},
    body="TriggerIn",
    errors=(*WRITE_ERRORS, 503),
    description="Exactly one of `schedule.cron`, `schedule.interval_s`, `schedule.at` or "
    "`event.source`. An event trigger's answer carries `webhook.url` and `webhook.secret`, "
    "an `http:` target's `outbound_secret`: each shown only this once.",
)
def create_trigger(who):
    body = triggers.create_trigger(who, bp.json(), now=bp.now())
    return Response(body=body, status_code=201)


@route(
    bp,
    "/v1/triggers",
    "GET",
    role="viewer",
    summary="List triggers, newest first",
    answers={200: "TriggerPage"},
    query=(
        Query("tag", "Only triggers with this tag"),
        Query("workflow", "Only triggers of this workflow"),
        Query("status", "Only triggers with this status", enum=("active", "disabled")),
        *LIST_QUERY,
    ),
    errors=READ_ERRORS,
)
def list_triggers(who):
    return triggers.list_triggers(who, bp.params())


@route(
    bp,
    "/v1/triggers/{trigger_id}",
    "GET",
    role="viewer",
    summary="Get a trigger (with its state)",
    answers={200: "TriggerOut"},
    errors=READ_ERRORS,
)
def get_trigger(who, trigger_id):
    return triggers.get_trigger_view(who, trigger_id)


@route(
    bp,
    "/v1/triggers/{trigger_id}",
    "DELETE",
    role="operator",
    summary="Delete a trigger (it stops at once; its runs stay for their retention)",
    answers={204: None},
    errors=READ_ERRORS,
)
def delete_trigger(who, trigger_id):
    triggers.delete_trigger(who, trigger_id, now=bp.now())
    return Response(body="", status_code=204)


@route(
    bp,
    "/v1/triggers/{trigger_id}",
    "PATCH",
    role="operator",
    summary="Edit a trigger in place",
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
def patch_trigger(who, trigger_id):
    from chalicelib.services.pages import choice

    # Anything but true/false is refused: a "yes" or a "1" meant a dry run, and was stored.
    if choice(bp.params(), "dry_run", ("true", "false")) == "true":
        return triggers.dry_run_patch(who, trigger_id, bp.json(), now=bp.now())
    return triggers.patch_trigger(who, trigger_id, bp.json(), now=bp.now())


@route(
    bp,
    "/v1/triggers/{trigger_id}/fire",
    "POST",
    role="operator",
    summary="Run a trigger now (surface manual)",
    answers={202: "RunQueued"},
    body="FireIn",
    optional_body=True,
    errors=(*WRITE_ERRORS, 409, 503),
    description="`{\"payload\": ...}` is this run's payload instead of the trigger's. On a "
    'busy trigger the run waits its turn (`queued: true`), unless `{"if_idle": true}` '
    "(then 409).",
)
def fire_trigger(who, trigger_id):
    body = bp.json(required=False)
    return Response(
        body=triggers.fire_now(who, trigger_id, now=bp.now(), body=body), status_code=202
    )


@route(
    bp,
    "/v1/triggers/{trigger_id}/enable",
    "POST",
    role="operator",
    summary="Enable (the next fire is computed from now)",
    answers={200: "TriggerOut"},
    body="DisableIn",
    optional_body=True,
    errors=(*WRITE_ERRORS, 409),
)
def enable_trigger(who, trigger_id):
    body = bp.json(required=False)
    return triggers.set_enabled(who, trigger_id, enabled=True, now=bp.now(), body=body)


@route(
    bp,
    "/v1/triggers/{trigger_id}/disable",
    "POST",
    role="operator",
    summary="Pause (reason manual), with an optional note",
    answers={200: "TriggerOut"},
    body="DisableIn",
    optional_body=True,
    errors=(*WRITE_ERRORS, 409),
    description="The trigger shows `disabled_note`, `disabled_by` and `disabled_at` until "
    "it is enabled again.",
)
def disable_trigger(who, trigger_id):
    body = bp.json(required=False)
    return triggers.set_enabled(who, trigger_id, enabled=False, now=bp.now(), body=body)


@route(
    bp,
    "/v1/triggers/enable",
    "POST",
    role="operator",
    summary="Resume every trigger with a tag and/or a workflow",
    answers={200: "SwitchedOut"},
    body="SwitchManyIn",
    errors=WRITE_ERRORS,
)
def enable_triggers(who):
    return triggers.set_enabled_many(who, bp.json(), enabled=True, now=bp.now())


@route(
    bp,
    "/v1/triggers/disable",
    "POST",
    role="operator",
    summary="Pause every trigger with a tag and/or a workflow, with an optional note",
    answers={200: "SwitchedOut"},
    body="SwitchManyIn",
    errors=WRITE_ERRORS,
)
def disable_triggers(who):
    return triggers.set_enabled_many(who, bp.json(), enabled=False, now=bp.now())


@route(
    bp,
    "/v1/triggers/{trigger_id}/backfill",
    "POST",
    role="operator",
    summary="Run the slots of a past window (at most 1,000), oldest first",
    answers={200: "BackfillPlan", 202: "BackfillStarted"},
    body="BackfillIn",
    errors=(*WRITE_ERRORS, 409, 503),
    description="Slots with `from <= slot <= to`; each runs with the run id the slot has on "
    "the schedule, so a slot that already ran is not run again. Runs have surface "
    "`backfill` and go through the trigger's concurrency, serialize_key and budget. "
    "`dry_run` answers 200 with the count, the first and last slot and a cost estimate "
    "from the trigger's recent runs.",
)
def backfill_trigger(who, trigger_id):
    from chalicelib.services import ondemand

    body = ondemand.backfill(who, trigger_id, bp.json(), now=bp.now())
    return Response(body=body, status_code=200 if "run_ids" not in body else 202)


@route(
    bp,
    "/v1/triggers/{trigger_id}/preview",
    "GET",
    role="viewer",
    summary="The next fires of a trigger",
    answers={200: "PreviewOut"},
    query=(Query("count", "How many (10)", type="integer", minimum=1, maximum=100),),
    errors=READ_ERRORS,
)
def preview_trigger(who, trigger_id):
    return triggers.preview_trigger(who, trigger_id, bp.params(), now=bp.now())


@route(
    bp,
    "/v1/schedules/preview",
    "POST",
    role="viewer",
    summary="The next fires of a schedule that is not stored",
    answers={200: "PreviewOut"},
    body="PreviewIn",
    errors=WRITE_ERRORS,
)
def preview_schedule(who):
    return triggers.preview_schedule(bp.json(), now=bp.now())
