"""Trigger use cases behind the REST API: create, read, list, change, delete, fire, preview."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from pynamodb.connection import Connection
from pynamodb.exceptions import DoesNotExist, TransactWriteError, UpdateError
from pynamodb.expressions.condition import size
from pynamodb.transactions import TransactWrite

from chalicelib import sources
from chalicelib.domain import schedule
from chalicelib.domain.errors import Conflict, NotFound, ServiceUnavailable, ValidationError
from chalicelib.domain.ids import manual_run_id, new_trigger_id, trigger_id_of_run
from chalicelib.domain.spec import (
    DisableIn,
    FireIn,
    PreviewIn,
    ScheduleIn,
    SwitchManyIn,
    TriggerIn,
    TriggerPatch,
    decode_schedule,
    encode_schedule,
    parse_model,
    schedule_spec_from,
)
from chalicelib.observability import logger, record_metric
from chalicelib.services import audit, budgets, events, quotas
from chalicelib.services import state as state_contract
from chalicelib.services.auth import Principal
from chalicelib.services.lookup import load_owned
from chalicelib.services.pages import choice as _choice
from chalicelib.services.pages import (
    decode_cursor,
    encode_cursor,
    parse_limit,
    take_page,
)
from chalicelib.services.runs import iso_ms, run_view
from chalicelib.settings import get_settings
from chalicelib.store import dynamo
from chalicelib.store.models import RunModel, StateModel, TriggerModel
from chalicelib.store.sqs import FireMessage, send_fires
from chalicelib.workflows import get_workflow, is_known_target, remote
from chalicelib.workflows.remote import display_target

__all__ = [
    "create_trigger",
    "get_trigger_view",
    "list_triggers",
    "delete_trigger",
    "fire_now",
    "set_enabled",
    "set_enabled_many",
    "patch_trigger",
    "delete_workflow_triggers",
    "list_workflows",
    "take_page",
    "preview_schedule",
    "preview_trigger",
    "list_trigger_runs",
    "list_runs",
    "get_run_view",
    "load_owned",
    "trigger_view",
    "encode_cursor",
    "decode_cursor",
]

SOURCE_NAMES = {
    "webhook": "webhook",
    "github": "GitHub",
    "stripe": "Stripe",
    "slack": "Slack",
    "standard": "Standard Webhooks",
    "shopify": "Shopify",
}


def _ms(at: datetime) -> int:
    return int(round(at.timestamp() * 1000))


def sched_json(
    spec: schedule.ScheduleSpec, *, overlap: str, concurrency: int, tenant: str | None = None
) -> str:
    """The schedule plus the overlap policy, as projected into the due index.

    The tenant rides along (``tn``) so the heartbeat can give each fire its tenant as the
    queue's message group (fair sharing) without reading the trigger.
    """
    data = json.loads(encode_schedule(spec))
    if overlap != "skip":
        data["o"] = overlap
    if concurrency != 1:
        data["n"] = concurrency
    if tenant is not None:
        data["tn"] = tenant
    return json.dumps(data, separators=(",", ":"))


def _describe(item: TriggerModel, spec: dict) -> str:
    if item.kind == "event":
        event = spec.get("event") or {}
        source = SOURCE_NAMES.get(event.get("source", ""), event.get("source", "event"))
        flt = event.get("filter") or {}
        what = flt.get("github_event") or flt.get("type") or flt.get("topic")
        if isinstance(what, list):
            what = ", ".join(str(w) for w in what)
        return (
            f"On {source} {what}"
            if what
            else f"On {source} webhook"
            if source != "webhook"
            else "On webhook"
        )
    if item.sched:
        return schedule.describe(decode_schedule(item.sched))
    return ""


def trigger_view(
    item: TriggerModel, *, state: dict | None = None, extra: dict | None = None
) -> dict:
    """A trigger as the API shows it (never a secret)."""
    spec = dynamo.load_spec(item)
    last_run = (
        item.last_run.as_dict()
        if item.last_run is not None and hasattr(item.last_run, "as_dict")
        else item.last_run
    )
    view = {
        "id": item.id,
        # An http target's query values are masked (users put tokens in query strings).
        "workflow": display_target(item.workflow),
        "title": spec.get("title"),
        "display_name": spec.get("title") or display_target(item.workflow),
        "tags": spec.get("tags") or [],
        "kind": item.kind,
        "cadence": _describe(item, spec),
        "schedule": spec.get("schedule"),
        "event": spec.get("event"),
        "payload": spec.get("payload"),
        "backfill": spec.get("backfill", "from_now"),
        "serialize_key": spec.get("serialize_key"),
        "secret_scope": spec.get("secret_scope"),
        "limits": spec.get("limits"),
        "overlap": spec.get("overlap", "skip"),
        "concurrency": spec.get("concurrency", 1),
        "allow_destructive": bool(spec.get("allow_destructive")),
        "enabled": item.status == "active",
        "status": item.status,
        "disabled_reason": item.disabled_reason,
        "disabled_note": item.disabled_note if item.status == "disabled" else None,
        "disabled_by": item.disabled_by if item.status == "disabled" else None,
        "disabled_at": iso_ms(item.disabled_ms) if item.status == "disabled" else None,
        "next_fire_at": iso_ms(item.next_fire_at) if item.status == "active" else None,
        "consecutive_failures": int(item.consecutive_failures or 0),
        "run_count": int(item.run_count or 0),
        "last_run": (
            {
                "id": last_run.get("id"),
                "status": last_run.get("status"),
                "finished_at": iso_ms(last_run.get("finished_at")),
                "error": last_run.get("error"),
            }
            if last_run
            else None
        ),
        "webhook_url": None,
        "created_by": item.created_by,
        "created_at": iso_ms(item.created_ms),
        "updated_at": iso_ms(item.updated_ms),
        "version": int(item.version or 1),
        "warnings": [],
    }
    if state is not None:
        view["state"] = state
    # What other services add to the view, in this order: the webhook URL, warnings, budget.
    view.update(events.webhook_view(item))
    view.update(state_contract.warnings_view(item, state))
    view.update(budgets.budget_view(item, spec))
    if extra:
        view.update(extra)
    return view


def _first_fire(
    spec: schedule.ScheduleSpec, *, now: datetime, field: str = "schedule"
) -> datetime | None:
    first = schedule.next_fire_after(spec, now)
    if spec.kind == "at" and first is None:
        raise ValidationError("schedule.at is in the past", field="schedule.at")
    if first is None:
        raise ValidationError("this schedule never fires", field=field)
    return first


def _check_expiry(limits: Any, *, now: datetime) -> None:
    # An expiry already past would leave an active trigger that can never fire.
    expires_at = getattr(limits, "expires_at", None)
    if expires_at is not None and expires_at <= now:
        raise ValidationError(
            "limits.expires_at is in the past: the trigger could never fire",
            field="limits.expires_at",
        )


def create_trigger(principal: Principal, body: Any, *, now: datetime) -> dict:
    """Validate and store a new trigger; 201 body (with the webhook secret, once)."""
    settings = get_settings()
    data = parse_model(TriggerIn, body)
    if (data.schedule is None) == (data.event is None):
        raise ValidationError(
            "give exactly one of schedule (cron, interval_s or at) or event", field="schedule"
        )
    if not is_known_target(data.workflow):
        raise ValidationError(f"unknown workflow {data.workflow!r}", field="workflow")
    _check_expiry(data.limits, now=now)
    trigger_id = new_trigger_id()
    now_ms = _ms(now)
    state = data.state
    registered = get_workflow(data.workflow)
    # create only: backfill through the workflow's initial_state
    state = state_contract.seed_state(registered, data, state)
    state = state_contract.validate_state(registered, data, state)
    spec_json = data.model_dump(mode="json", exclude={"state"})
    if spec_json.get("event"):
        spec_json["event"].pop("secret", None)
    item = TriggerModel(
        trigger_id,
        tenant=principal.tenant,
        workflow=data.workflow,
        spec="",
        status="active" if data.enabled else "disabled",
        disabled_reason=None if data.enabled else "manual",
        disabled_by=None if data.enabled else principal.key_id,
        disabled_ms=None if data.enabled else now_ms,
        in_flight={},
        created_by=principal.key_id,
        created_ms=now_ms,
        updated_ms=now_ms,
        version=1,
    )
    shown_once: dict = {}
    if data.schedule is not None:
        spec = schedule_spec_from(data.schedule, anchor_at=now)
        schedule.validate_schedule(spec, min_interval_s=settings.min_interval_s)
        item.kind = spec.kind
        item.sched = sched_json(
            spec, overlap=data.overlap, concurrency=data.concurrency, tenant=principal.tenant
        )
        first = _first_fire(spec, now=now)
        item.next_fire_at = _ms(first) if first else None
        if data.enabled and first is not None:
            item.due_at = item.next_fire_at
            item.due_shard = dynamo.shard_of(trigger_id, settings.due_shards)
    else:
        item.kind = "event"
        shown_once = sources.prepare(item, data.event, now=now)
    # e.g. the http: target's outbound secret, shown once
    shown_once.update(remote.prepare_target(item, data.workflow, now=now))
    # The tenant's quotas (429 quota) are taken last, after every check a client can fail,
    # and given back if the trigger is not stored after all.
    capacity = quotas.trigger_capacity(spec_json)
    quotas.take(principal.tenant, triggers=1, runs=capacity)
    try:
        stored_spec, _ = dynamo.externalize_payload(trigger_id, spec_json)
        item.spec = json.dumps(stored_spec, separators=(",", ":"))
        if state:
            StateModel(trigger_id, state=json.dumps(state, separators=(",", ":")), version=1).save()
        item.save(condition=TriggerModel.id.does_not_exist())
    except Exception:
        quotas.release(principal.tenant, triggers=1, runs=capacity)
        raise
    _enqueue_if_sent(item, now=now)
    audit.record(
        principal,
        "create",
        tenant=principal.tenant,
        trigger_id=trigger_id,
        now=now,
        detail={"workflow": data.workflow},
    )
    record_metric("TriggersCreated", kind=item.kind)
    logger.info("trigger created", extra={"trigger_id": trigger_id, "kind": item.kind})
    return trigger_view(item, state=state or {}, extra=shown_once)


def _enqueue_if_sent(item: TriggerModel | None, *, now: datetime) -> None:
    """A slot set inside the window the heartbeat already enqueued gets its message now."""
    from chalicelib.services.heartbeat import enqueue_if_sent_window

    if item is not None and item.kind != "event":
        enqueue_if_sent_window(item, now=now)


def get_trigger_view(principal: Principal, trigger_id: str) -> dict:
    """One trigger, with its state."""
    item = load_owned(principal, trigger_id)
    state, _ = dynamo.get_state(item.id)
    return trigger_view(item, state=state)


TRIGGER_CURSOR = {"id": "S", "tenant": "S", "created_ms": "N"}
RUN_CURSOR = {"trigger_id": "S", "run_id": "S", "tenant": "S", "sort_key": "S"}
TRIGGER_RUN_CURSOR = {"trigger_id": "S", "run_id": "S"}
WORKFLOW_CURSOR = {"name": "S"}
RUN_STATUSES = (
    "queued",
    "running",
    "succeeded",
    "failed",
    "skipped",
    "refused",
    "budget_exceeded",
    "lost",
)
RUN_SURFACES = ("schedule", "event", "manual", "backfill")


def list_triggers(principal: Principal, params: dict) -> dict:
    """A page of the tenant's triggers, newest first, filtered by tag/workflow/status."""
    limit = parse_limit(params.get("limit"))
    cursor = decode_cursor(
        params.get("cursor"), shape=TRIGGER_CURSOR, fixed={"tenant": principal.tenant}
    )
    tag, wf = params.get("tag") or None, params.get("workflow") or None
    status = _choice(params, "status", ("active", "disabled"))

    def materialize(rows: list) -> list:
        found = {t.id: t for t in TriggerModel.batch_get([r.id for r in rows])} if rows else {}
        out: list = []
        for row in rows:
            item = found.get(row.id)
            shown = (item.workflow, display_target(item.workflow)) if item is not None else ()
            if item is None or (wf and wf not in shown) or (status and item.status != status):
                out.append(None)
                continue
            spec = json.loads(item.spec or "{}")
            out.append(trigger_view(item) if not tag or tag in (spec.get("tags") or []) else None)
        return out

    results = TriggerModel.by_tenant.query(
        principal.tenant, scan_index_forward=False, page_size=limit, last_evaluated_key=cursor
    )
    items, last_key = take_page(results, TriggerModel, limit=limit, materialize=materialize)
    return {"items": items, "next_cursor": encode_cursor(last_key)}


def delete_trigger(
    principal: Principal, trigger_id: str, *, now: datetime, detail: dict | None = None
) -> None:
    """Delete a trigger: it stops at once (a queued run is dropped at its start fence)."""
    _delete_item(principal, load_owned(principal, trigger_id), now=now, detail=detail)


def _delete_item(
    principal: Principal, item: TriggerModel, *, now: datetime, detail: dict | None = None
) -> None:
    # Runs are kept: they expire with their retention, and stay readable until then.
    item.delete()
    sources.on_delete(item)  # e.g. an eventbridge trigger's rule
    quotas.release(
        item.tenant, triggers=1, runs=quotas.trigger_capacity(json.loads(item.spec or "{}"))
    )
    try:
        StateModel(item.id).delete()
    except DoesNotExist:
        pass
    dynamo.delete_payload(item.id, dynamo.payload_ref(json.loads(item.spec or "{}")))
    if item.backfill_left:
        from chalicelib.services import ondemand

        ondemand.drop_backfill(item.id)
    audit.record(
        principal,
        "delete",
        tenant=item.tenant,
        trigger_id=item.id,
        now=now,
        detail={"workflow": item.workflow, **(detail or {})},
    )


def delete_workflow_triggers(principal: Principal, workflow: str, *, now: datetime) -> dict:
    """Delete every trigger of the caller's tenant that runs ``workflow``; ``{deleted: n}``."""
    if not workflow or len(workflow) > 200:
        raise ValidationError("workflow must be 1 to 200 characters", field="name")
    deleted = 0
    # The tenant index is keys-only: read every id first, then the items in batches of 100.
    ids = [row.id for row in TriggerModel.by_tenant.query(principal.tenant, page_size=500)]
    for item in TriggerModel.batch_get(ids) if ids else []:
        if item.workflow == workflow and item.tenant == principal.tenant:
            _delete_item(principal, item, now=now, detail={"via": "workflow"})
            deleted += 1
    record_metric("TriggersDeleted", deleted)
    return {"deleted": deleted}


def list_workflows(params: dict) -> dict:
    """The registered Python workflows: name, description and state schema."""
    from chalicelib.workflows import REGISTRY

    get_workflow("echo")  # loads the built-ins
    limit = parse_limit(params.get("limit"), default=100)
    # The same opaque cursor as every other list: one we did not issue is a 422.
    key = decode_cursor(params.get("cursor"), shape=WORKFLOW_CURSOR)
    after = key["name"]["S"] if key else ""
    names = sorted(n for n in REGISTRY if n > after)
    page = names[:limit]
    items = [
        {
            "name": name,
            "description": REGISTRY[name].description or None,
            "state_schema": REGISTRY[name].state_schema,
        }
        for name in page
    ]
    more = len(names) > limit
    cursor = encode_cursor({"name": {"S": page[-1]}}) if more and page else None
    return {"items": items, "next_cursor": cursor}


def set_enabled(
    principal: Principal,
    trigger_id: str,
    *,
    enabled: bool,
    now: datetime,
    body: Any = None,
) -> dict:
    """Enable (the next slot from now: no burst) or pause (reason ``manual``, with a note)."""
    data = parse_model(DisableIn, body if body is not None else {})
    item = load_owned(principal, trigger_id)
    _switch(principal, item, enabled=enabled, note=data.note, now=now)
    state, _ = dynamo.get_state(item.id)
    return trigger_view(item, state=state)


def _switch(
    principal: Principal,
    item: TriggerModel,
    *,
    enabled: bool,
    note: str | None,
    now: datetime,
    via: str | None = None,
) -> None:
    """Write one enable or pause (``item`` is updated in place) and audit it.

    A pause records who and when, and the note if one was given; pausing a trigger that
    is already disabled keeps its reason (``failures`` stays visible) and updates the
    note. An enable clears all of it, and a backfill that waited for it goes on.
    """
    settings = get_settings()
    t = TriggerModel
    now_ms = _ms(now)
    actions = [t.updated_ms.set(now_ms), t.version.add(1)]
    if enabled:
        actions += [
            t.status.set("active"),
            t.disabled_reason.remove(),
            t.disabled_note.remove(),
            t.consecutive_failures.set(0),
            t.disabled_by.remove(),
            t.disabled_ms.remove(),
        ]
        if item.sched:
            spec = decode_schedule(item.sched)
            first = schedule.next_fire_after(spec, now)
            if first is None:
                raise Conflict("this trigger's schedule has no future fire; edit it first")
            leases = [dynamo.entry_lease(e) for e in dynamo.in_flight_of(item).values()]
            actions += [
                t.next_fire_at.set(_ms(first)),
                t.due_at.set(min([_ms(first), *leases])),
                t.due_shard.set(dynamo.shard_of(item.id, settings.due_shards)),
            ]
    else:
        actions += [
            t.status.set("disabled"),
            t.disabled_by.set(principal.key_id),
            t.disabled_ms.set(now_ms),
            t.disabled_note.set(note) if note else t.disabled_note.remove(),
        ]
        if item.status == "active":
            actions.append(t.disabled_reason.set("manual"))
    item.update(actions=actions)
    if enabled:
        _enqueue_if_sent(item, now=now)
    detail: dict = {}
    if note:
        detail["note"] = note
    if via:
        detail["via"] = via
    audit.record(
        principal,
        "enable" if enabled else "disable",
        tenant=item.tenant,
        trigger_id=item.id,
        now=now,
        detail=detail,
    )
    if enabled and item.backfill_left:
        from chalicelib.services import ondemand

        ondemand.dispatch_backfill(item.id, now=now)


def set_enabled_many(principal: Principal, body: Any, *, enabled: bool, now: datetime) -> dict:
    """Pause or resume every trigger of the tenant with a tag and/or a workflow.

    A note on a resume is kept in the audit log only (a resume clears the pause's note).
    ``{changed, ids}``: the triggers whose status changed. A trigger already in the asked
    status is left alone (a repeated call changes nothing); one that cannot be resumed
    (its schedule has no future fire) is listed under ``skipped`` with the reason.
    """
    data = parse_model(SwitchManyIn, body)
    if data.tag is None and data.workflow is None:
        raise ValidationError("give tag or workflow (or both) to choose the triggers", field="tag")
    ids = [row.id for row in TriggerModel.by_tenant.query(principal.tenant, page_size=500)]
    changed: list[str] = []
    skipped: list[dict] = []
    wanted = "active" if enabled else "disabled"
    for item in sorted(TriggerModel.batch_get(ids) if ids else [], key=lambda i: i.id):
        if item.tenant != principal.tenant or item.status == wanted:
            continue
        if data.workflow is not None and item.workflow != data.workflow:
            continue
        if data.tag is not None and data.tag not in (
            json.loads(item.spec or "{}").get("tags") or []
        ):
            continue
        try:
            _switch(principal, item, enabled=enabled, note=data.note, now=now, via="bulk")
        except Conflict as exc:
            skipped.append({"id": item.id, "reason": exc.message})
            continue
        changed.append(item.id)
    if enabled:
        record_metric("TriggersEnabled", len(changed))
    else:
        record_metric("TriggersDisabled", len(changed))
    return {"changed": len(changed), "ids": changed, "skipped": skipped}


def fire_now(principal: Principal, trigger_id: str, *, now: datetime, body: Any = None) -> dict:
    """Claim a manual run and enqueue it at once; 202 ``{run_id}``.

    A body ``{"payload": ...}`` is this run's payload instead of the trigger's (kept in
    an item of its own until the run settles: the queue message carries ids only).
    """
    settings = get_settings()
    data = parse_model(FireIn, body if body is not None else {})
    item = load_owned(principal, trigger_id)
    if item.status != "active":
        raise Conflict(f"trigger is disabled ({item.disabled_reason or 'manual'}); enable it first")
    from chalicelib.services import switch

    if not switch.triggers_enabled(now=now):
        raise ServiceUnavailable("triggers are switched off (triggers_enabled); nothing fires")
    spec = json.loads(item.spec or "{}")
    capacity = int(spec.get("concurrency") or 1)
    run_id = manual_run_id(item.id, _ms(now))
    lease_ms = _ms(now) + settings.lease_s * 1000
    shard = dynamo.shard_of(item.id, settings.due_shards)
    outcome, _ = dynamo.claim_and_start(
        item.id,
        run_id=run_id,
        surface="manual",
        lease_ms=lease_ms,
        capacity=capacity,
        shard=shard,
        started=False,
    )
    if outcome != dynamo.ClaimResult.CLAIMED:
        raise Conflict(f"trigger is busy: {capacity} run(s) already in flight")
    from chalicelib.services import ondemand

    if "payload" in data.model_fields_set:
        # Written before the message is sent: the runner never starts without it.
        ondemand.save_fire_payload(run_id, data.payload)
    message = FireMessage(
        run_id=run_id,
        trigger_id=item.id,
        surface="manual",
        scheduled_ms=_ms(now),
        tenant=item.tenant,
    )
    if send_fires([message]):
        dynamo.release_claim(item.id, run_id=run_id, slot_ms=None, shard=shard)
        ondemand.delete_fire_payload(run_id)
        raise ServiceUnavailable("the run could not be queued; try again")
    audit.record(
        principal,
        "fire",
        tenant=item.tenant,
        trigger_id=trigger_id,
        now=now,
        detail={"run_id": run_id, "with_payload": "payload" in data.model_fields_set},
    )
    return {"run_id": run_id}


def _preview_spec(data: PreviewIn | ScheduleIn, *, anchor: datetime) -> schedule.ScheduleSpec:
    sched_in = ScheduleIn(
        cron=data.cron, timezone=data.timezone, interval_s=data.interval_s, at=data.at, dst=data.dst
    )
    return schedule_spec_from(sched_in, anchor_at=anchor)


def preview_schedule(body: Any, *, now: datetime) -> dict:
    """The next fires of a schedule that is not stored."""
    data = parse_model(PreviewIn, body)
    start = data.from_ or now
    try:
        spec = _preview_spec(data, anchor=start)
        schedule.validate_schedule(spec, min_interval_s=1)
    except ValidationError as exc:
        # The schedule rules name a trigger's fields (schedule.cron); this body has
        # the same fields at its top level.
        if exc.field and exc.field.startswith("schedule."):
            exc.field = exc.field[len("schedule.") :]
            exc.message = exc.message.replace("schedule.", "")
        elif exc.field == "schedule":
            exc.field = None
        raise
    fires, marks = schedule.preview_marked(spec, start=start, count=data.count)
    return {**_preview_view(fires, marks), "cadence": schedule.describe(spec)}


def preview_trigger(principal: Principal, trigger_id: str, params: dict, *, now: datetime) -> dict:
    """The next fires of a stored trigger."""
    item = load_owned(principal, trigger_id)
    count = parse_limit(params.get("count"), default=10, maximum=100, name="count")
    if not item.sched:
        return {"fires": [], "dst": []}
    spec = decode_schedule(item.sched)
    fires, marks = schedule.preview_marked(spec, start=now, count=count)
    return _preview_view(fires, marks)


def _preview_view(fires: list[datetime], marks: list[schedule.DstMark]) -> dict:
    """The fires, and next to them the fires (or missing fires) a DST transition decided."""
    return {
        "fires": [iso_ms(_ms(fire)) for fire in fires],
        "dst": [
            {"at": iso_ms(_ms(mark.at)), "change": mark.change, "policy": mark.policy}
            for mark in marks
        ],
    }


def _in_flight_runs(item: TriggerModel) -> list[dict]:
    runs = []
    for run_id, entry in sorted(dynamo.in_flight_of(item).items(), reverse=True):
        surface = {"s": "schedule", "e": "event", "m": "manual", "b": "backfill"}.get(
            entry.get("k", "s"), "schedule"
        )
        runs.append(
            {
                "id": run_id,
                "trigger_id": item.id,
                "surface": surface,
                "status": "running" if int(entry.get("s", 0)) else "queued",
                "workflow": display_target(item.workflow),
                "scheduled_for": iso_ms(entry.get("t")),
                "started_at": None,
                "finished_at": None,
                "lateness_ms": None,
                "error": None,
                "cost_usd": 0.0,
                "event_id": None,
                "attempt": 1,
                "output": None,
            }
        )
    return runs


def _run_condition(status: str | None, surface: str | None) -> Any:
    condition = None
    if status:
        condition = RunModel.status == status
    if surface:
        clause = RunModel.surface == surface
        condition = clause if condition is None else condition & clause
    return condition


def list_trigger_runs(principal: Principal, trigger_id: str, params: dict) -> dict:
    """A trigger's runs, newest first (runs in flight first, on the first page)."""
    item = load_owned(principal, trigger_id)
    limit = parse_limit(params.get("limit"))
    cursor = decode_cursor(
        params.get("cursor"), shape=TRIGGER_RUN_CURSOR, fixed={"trigger_id": item.id}
    )
    status = _choice(params, "status", RUN_STATUSES)
    surface = _choice(params, "surface", RUN_SURFACES)
    live = []
    if cursor is None:
        live = [
            r
            for r in _in_flight_runs(item)
            if (not status or r["status"] == status) and (not surface or r["surface"] == surface)
        ][:limit]
    condition = _run_condition(status, surface)
    results = RunModel.query(
        item.id,
        scan_index_forward=False,
        filter_condition=condition,
        page_size=limit if condition is None else max(limit, 200),
        last_evaluated_key=cursor,
    )
    done, last_key = take_page(results, RunModel, limit=max(1, limit - len(live)))
    # A run that settled between the two reads is in both: its record is the newer truth.
    recorded = {r.run_id for r in done}
    live = [r for r in live if r["id"] not in recorded]
    return {"items": live + [run_view(r) for r in done], "next_cursor": encode_cursor(last_key)}


def list_runs(principal: Principal, params: dict) -> dict:
    """The tenant's runs, newest first, by ``surface``, ``status`` and ``trigger_id``."""
    trigger_id = params.get("trigger_id")
    if trigger_id:
        return list_trigger_runs(principal, trigger_id, params)
    limit = parse_limit(params.get("limit"))
    status = _choice(params, "status", RUN_STATUSES)
    surface = _choice(params, "surface", RUN_SURFACES)
    if status in ("running", "queued"):
        return {
            "items": _in_flight_runs_of_tenant(principal, status, surface, limit=limit),
            "next_cursor": None,
        }
    cursor = decode_cursor(
        params.get("cursor"), shape=RUN_CURSOR, fixed={"tenant": principal.tenant}
    )
    condition = _run_condition(status, surface)
    results = RunModel.by_tenant.query(
        principal.tenant,
        scan_index_forward=False,
        filter_condition=condition,
        page_size=limit if condition is None else max(limit, 200),
        last_evaluated_key=cursor,
    )
    runs, last_key = take_page(results, RunModel, limit=limit)
    return {"items": [run_view(r) for r in runs], "next_cursor": encode_cursor(last_key)}


def _in_flight_runs_of_tenant(
    principal: Principal, status: str, surface: str | None, *, limit: int
) -> list[dict]:
    """The tenant's runs in flight (``running`` or ``queued``), newest first.

    A run in flight has no record yet (it is written once, when the run ends: one write
    less per fire); it lives in its trigger's ``in_flight``. So this listing reads the
    tenant's triggers (KEYS_ONLY index, then BatchGetItem): a cost per listing, paid
    only by this filter, instead of a write per fire.
    """
    found: list[dict] = []
    ids = [row.id for row in TriggerModel.by_tenant.query(principal.tenant, page_size=500)]
    for start in range(0, len(ids), 100):
        for item in TriggerModel.batch_get(ids[start : start + 100]):
            for run in _in_flight_runs(item):
                if run["status"] == status and (not surface or run["surface"] == surface):
                    found.append(run)
    found.sort(key=lambda r: r["id"].split(".", 1)[-1], reverse=True)
    return found[:limit]


def get_run_view(principal: Principal, run_id: str) -> dict:
    """One run (also a queued or running one)."""
    trigger_id = trigger_id_of_run(run_id) if len(run_id) <= 200 else None
    if trigger_id is None:
        raise NotFound(f"run {run_id[:80]!r} not found")
    run = dynamo.get_run(trigger_id, run_id)
    if run is not None:
        if run.tenant != principal.tenant:
            raise NotFound(f"run {run_id!r} not found")
        return run_view(run)
    item = dynamo.get_trigger(trigger_id)
    if item is not None and item.tenant == principal.tenant:
        for view in _in_flight_runs(item):
            if view["id"] == run_id:
                return view
    raise NotFound(f"run {run_id!r} not found")


# -- PATCH: edits in place ---------------------------------------------------------------

PATCH_ATTEMPTS = 4
# Fields a PATCH may clear with null; every other field must keep a value.
_NULLABLE = {"title", "payload", "serialize_key", "secret_scope", "tags", "limits"}
_CADENCE_FIELDS = ("cron", "interval_s", "at")
# What the audit diff compares (state and payload are only marked changed: they may hold
# anything, including things that should not be copied into a log).
_DIFF_FIELDS = (
    "workflow",
    "title",
    "tags",
    "kind",
    "schedule",
    "event",
    "serialize_key",
    "secret_scope",
    "limits",
    "overlap",
    "concurrency",
    "allow_destructive",
    "status",
    "next_fire_at",
)


class _Raced(Exception):
    """The item changed between our read and our write (a claim, a settle or an edit)."""


def last_claimed_slot_ms(item: TriggerModel) -> int | None:
    """The latest scheduled slot this trigger has claimed (in flight, or its last run)."""
    slots = [
        int(entry["t"])
        for entry in dynamo.in_flight_of(item).values()
        if entry.get("k", "s") == "s" and entry.get("t") is not None
    ]
    last_run = (
        item.last_run.as_dict()
        if item.last_run is not None and hasattr(item.last_run, "as_dict")
        else item.last_run
    )
    run_id = (last_run or {}).get("id") or ""
    _, _, tail = run_id.partition(".")
    if len(tail) >= 14 and tail[:13].isdigit() and tail[13] == "s":
        slots.append(int(tail[:13]))
    return max(slots) if slots else None


def _merge_schedule(old: dict, patch: ScheduleIn) -> dict:
    """The schedule after a patch: the kind is inferred from the cadence field sent."""
    sent = patch.model_fields_set
    given = [f for f in _CADENCE_FIELDS if f in sent and getattr(patch, f) is not None]
    cleared = [f for f in _CADENCE_FIELDS if f in sent and getattr(patch, f) is None]
    if len(given) > 1:
        raise ValidationError(
            f"give one of cron, interval_s or at (got {', '.join(given)})", field="schedule"
        )
    dumped = patch.model_dump(mode="json", include=sent)
    if given:
        # A new cadence replaces the old kind's fields; the timezone and DST policy carry
        # over only between cron schedules (they mean nothing to an interval or an instant).
        kind = given[0]
        merged: dict = {kind: dumped[kind]}
        if kind == "cron" and old.get("cron") is not None:
            merged["timezone"] = old.get("timezone") or "UTC"
            if old.get("dst") is not None:
                merged["dst"] = old["dst"]
    else:
        if cleared:
            raise ValidationError(
                f"schedule.{cleared[0]} cannot be removed without another cadence",
                field=f"schedule.{cleared[0]}",
            )
        merged = {k: v for k, v in old.items() if v is not None}
    for name in ("timezone", "dst"):
        if name in sent:
            merged[name] = dumped[name]
    return {k: v for k, v in merged.items() if v is not None}


def _merged_spec(item: TriggerModel, data: TriggerPatch, sent: set[str]) -> dict:
    """The trigger's settings after the patch, as a ``TriggerIn`` body (unvalidated)."""
    old = dynamo.load_spec(item)
    merged = {k: v for k, v in old.items() if k != "enabled"}
    dumped = data.model_dump(mode="json", include=sent)
    if dumped.get("workflow") is not None and dumped["workflow"] == display_target(item.workflow):
        # The view's masked form sent back (a GET, edited, PATCHed): the target is unchanged.
        dumped["workflow"] = item.workflow
    for name in sent - {"schedule", "event", "state", "limits", "enabled"}:
        value = dumped[name]
        if value is None and name not in _NULLABLE:
            raise ValidationError(f"{name} may not be null", field=name)
        merged[name] = [] if name == "tags" and value is None else value
    if "limits" in sent:
        limits = data.limits
        merged["limits"] = (
            {}
            if limits is None
            else {
                **(old.get("limits") or {}),
                **limits.model_dump(mode="json", include=limits.model_fields_set),
            }
        )
    if "schedule" in sent:
        if item.kind == "event":
            raise ValidationError(
                "an event trigger cannot be given a schedule; create a new trigger",
                field="schedule",
            )
        if data.schedule is None:
            raise ValidationError("schedule may not be null", field="schedule")
        merged["schedule"] = _merge_schedule(old.get("schedule") or {}, data.schedule)
    if "event" in sent:
        if item.kind != "event":
            raise ValidationError(
                "a scheduled trigger cannot be given an event source; create a new trigger",
                field="event",
            )
        event = data.event
        if event is None:
            raise ValidationError("event may not be null", field="event")
        old_event = old.get("event") or {}
        if "source" in event.model_fields_set and event.source != old_event.get("source"):
            # The stored signing secret was made for (or issued by) the old provider, and
            # the filter's keys are the old provider's: switching in place would leave a
            # URL that verifies nothing, or verifies with a secret of the wrong format.
            raise ValidationError(
                f"event.source cannot change (the signing secret and filter belong to "
                f"{old_event.get('source')!r}); create a new trigger for the new source",
                field="event.source",
            )
        if "secret" in event.model_fields_set:
            # Never dropped silently: a new secret replaces the old one at once and breaks
            # every delivery in flight. Rotation keeps the old one valid for a grace period.
            raise ValidationError(
                "event.secret cannot be changed by a PATCH; use "
                f"POST /v1/triggers/{item.id}/rotate-secret (the old secret keeps "
                "verifying for a grace period)",
                field="event.secret",
            )
        merged["event"] = {
            **old_event,
            **event.model_dump(mode="json", include=event.model_fields_set - {"secret"}),
        }
    if "state" in sent and data.state is None:
        raise ValidationError("state may not be null; send {} to clear it", field="state")
    if "enabled" in sent and data.enabled is None:
        raise ValidationError("enabled may not be null", field="enabled")
    return merged


def _diff(before: dict, after: dict, *, state_changed: bool, payload_changed: bool) -> dict:
    changes = {
        name: {"from": before.get(name), "to": after.get(name)}
        for name in _DIFF_FIELDS
        if before.get(name) != after.get(name)
    }
    if state_changed:
        changes["state"] = {"changed": True}
    if payload_changed:
        changes["payload"] = {"changed": True}
    return changes


def _capacity_change(item: TriggerModel, data: TriggerPatch, sent: set[str]) -> int:
    """How much the patch changes the trigger's concurrency (its share of the runs quota)."""
    if "concurrency" not in sent or data.concurrency is None:
        return 0
    return quotas.trigger_capacity({"concurrency": data.concurrency}) - quotas.trigger_capacity(
        dynamo.load_spec(item)
    )


def patch_trigger(principal: Principal, trigger_id: str, body: Any, *, now: datetime) -> dict:
    """Edit a trigger in place; 200 with the trigger, 409 on a stale ``version``.

    1. Validate the body (``TriggerPatch``), then merge it into the stored settings and
       validate the result as a whole (``TriggerIn``): every 422 names its field.
    2. A cadence edit infers the kind from the field sent (``cron``, ``interval_s`` or
       ``at``), drops the other kind's fields, and recomputes the next slot strictly after
       ``max(now, the last slot claimed)``: a slot that already ran, or is running, is
       never fired again, whatever the new schedule says.
    3. One conditional write, fenced on ``version`` and on what a claim changes (see
       ``_write_patch``); a state edit goes in the same transaction, with CAS on the
       state's own version. A lost race re-reads and tries again; a stale ``version`` the
       client sent is a 409.
    4. Audit the change as a field diff (never a secret).
    """
    data = parse_model(TriggerPatch, body)
    sent = set(data.model_fields_set) - {"version"}
    if not sent:
        raise ValidationError("the patch changes nothing: send at least one field", field=None)
    for _attempt in range(PATCH_ATTEMPTS):
        item = load_owned(principal, trigger_id)
        current = int(item.version or 1)
        if data.version is not None and data.version != current:
            if data.version > current:
                raise Conflict(
                    f"version {data.version} does not exist yet: the trigger is at version "
                    f"{current}; send the version you read",
                    field="version",
                )
            raise Conflict(
                f"version {data.version} is stale: the trigger is at version {current}; "
                "read it again and reapply your change",
                field="version",
            )
        before = trigger_view(item)
        # More concurrency takes more of the tenant's runs-in-flight quota (429 quota),
        # before the write; a write that does not happen gives it back.
        grow = _capacity_change(item, data, sent)
        if grow > 0:
            quotas.take(item.tenant, runs=grow)
        try:
            updated, state, shown_once = _write_patch(principal, item, data, sent, now=now)
        except _Raced:
            if grow > 0:
                quotas.release(item.tenant, runs=grow)
            continue
        except Exception:
            if grow > 0:
                quotas.release(item.tenant, runs=grow)
            raise
        if grow < 0:
            quotas.release(item.tenant, runs=-grow)
        after = trigger_view(updated, state=state, extra=shown_once)
        if after.get("next_fire_at") != before.get("next_fire_at"):
            _enqueue_if_sent(dynamo.get_trigger(item.id), now=now)
        audit.record(
            principal,
            "update",
            tenant=item.tenant,
            trigger_id=item.id,
            now=now,
            detail={
                "version": int(updated.version or 1),
                "changes": _diff(
                    before,
                    after,
                    state_changed="state" in sent,
                    payload_changed="payload" in sent,
                ),
            },
        )
        record_metric("TriggersUpdated", kind=updated.kind)
        return after
    raise Conflict("the trigger kept changing while it was edited; try again", field="version")


def _prepare_http_target(item: TriggerModel, workflow: str, *, now: datetime) -> dict:
    """A new ``http:`` or ``lambda:`` target is checked; an http one gets an outbound secret
    (shown once) if it has none."""
    if item.outbound_secret_sealed is None:
        return remote.prepare_target(item, workflow, now=now)
    # Keep the secret the receiver already verifies with; only check the new URL.
    probe = TriggerModel(item.id, tenant=item.tenant)
    remote.prepare_target(probe, workflow, now=now)
    return {}


def _write_patch(
    principal: Principal,
    item: TriggerModel,
    data: TriggerPatch,
    sent: set[str],
    *,
    now: datetime,
) -> tuple[TriggerModel, dict, dict]:
    settings = get_settings()
    merged = _merged_spec(item, data, sent)
    full = parse_model(TriggerIn, {**merged, "state": {}})
    if (
        "limits" in sent
        and data.limits is not None
        and "expires_at" in data.limits.model_fields_set
    ):
        _check_expiry(full.limits, now=now)
    if "workflow" in sent and not is_known_target(full.workflow):
        raise ValidationError(f"unknown workflow {full.workflow!r}", field="workflow")
    if "event" in sent and data.event is not None and full.event is not None:
        # The same checks as create (events.prepare), before anything is written: a bad
        # filter is a 422 naming event.filter.<key>, and the trigger keeps its version.
        # Both the event as sent (the merge goes through JSON, where 1e999 would quietly
        # become null) and the merged result.
        # The source is the stored one when the patch does not name it.
        sources.validate_event(data.event.model_copy(update={"source": full.event.source}))
        sources.validate_event(full.event)
    state_out: dict | None = None
    if "state" in sent:
        state_out = data.state or {}
        state_out = state_contract.validate_state(get_workflow(full.workflow), full, state_out)
    spec_json = full.model_dump(mode="json", exclude={"state", "enabled"})
    if spec_json.get("event"):
        spec_json["event"].pop("secret", None)

    t = TriggerModel
    now_ms = _ms(now)
    shown_once: dict = {}
    if full.workflow != item.workflow and full.workflow.startswith(("http:", "lambda:")):
        shown_once = _prepare_http_target(item, full.workflow, now=now)
        if shown_once:
            actions_first = [t.outbound_secret_sealed.set(item.outbound_secret_sealed)]
        else:
            actions_first = []
    else:
        actions_first = []
    status = item.status
    if "enabled" in sent and data.enabled != (item.status == "active"):
        status = "active" if data.enabled else "disabled"
    # A large payload goes to an item of its own (dynamo.externalize_payload); the one
    # it replaces is deleted once the new spec is written.
    old_ref = dynamo.payload_ref(json.loads(item.spec or "{}"))
    stored_spec, new_ref = dynamo.externalize_payload(item.id, spec_json, existing=old_ref)
    actions: list = [
        *actions_first,
        t.spec.set(json.dumps(stored_spec, separators=(",", ":"))),
        t.workflow.set(full.workflow),
        t.updated_ms.set(now_ms),
        t.version.add(1),
    ]
    if status != item.status:
        actions.append(t.status.set(status))
        if status == "active":
            actions += [t.disabled_reason.remove(), t.consecutive_failures.set(0)]
            actions += [t.disabled_note.remove(), t.disabled_by.remove(), t.disabled_ms.remove()]
        else:
            actions += [
                t.disabled_reason.set("manual"),
                t.disabled_by.set(principal.key_id),
                t.disabled_ms.set(now_ms),
            ]
    condition = t.version == int(item.version or 1)

    recomputed = False
    if item.kind != "event" and full.schedule is not None:
        old_spec = decode_schedule(item.sched) if item.sched else None
        sched_in = full.schedule
        anchor = now
        if (
            sched_in.interval_s is not None
            and old_spec is not None
            and old_spec.interval_s == sched_in.interval_s
            and old_spec.anchor_at is not None
        ):
            anchor = old_spec.anchor_at  # the same interval keeps its phase
        elif sched_in.interval_s is not None:
            # A new interval counts from the last slot that fired (or from now): the
            # next fire is one new interval after it, never a burst of catch-up fires.
            last = last_claimed_slot_ms(item)
            anchor = datetime.fromtimestamp(last / 1000, tz=UTC) if last is not None else now
        new_spec = schedule_spec_from(sched_in, anchor_at=anchor)
        schedule.validate_schedule(new_spec, min_interval_s=settings.min_interval_s)
        new_sched = sched_json(
            new_spec, overlap=full.overlap, concurrency=full.concurrency, tenant=item.tenant
        )
        cadence_changed = old_spec is None or encode_schedule(new_spec) != encode_schedule(old_spec)
        if new_sched != item.sched:
            actions += [t.sched.set(new_sched), t.kind.set(new_spec.kind)]
        if cadence_changed or (status == "active" and item.status != "active"):
            recomputed = True
            # Race with the heartbeat, drawn as a timeline (a claim writes in_flight,
            # next_fire_at and due_at, never `version`):
            #
            #   heartbeat                         PATCH
            #   reads due row: slot S             reads item: version v, next_fire_at S
            #   claim S: if next_fire_at == S
            #     -> in_flight[S], next := S'
            #                                     write: if version == v
            #                                            and next_fire_at == S   -> fails
            #                                     re-read: S is in flight, so the new
            #                                     slot N is computed after max(now, S)
            #
            # or the PATCH writes first: next_fire_at is no longer S, so the claim's own
            # condition fails and the heartbeat counts a lost race; S never fires. A
            # settle that applies a workflow's next_fire_at is fenced the same way, and
            # the in_flight size fence keeps due_at covering every live lease.
            last = last_claimed_slot_ms(item)
            bound = now if last is None else max(now, datetime.fromtimestamp(last / 1000, tz=UTC))
            first = schedule.next_fire_after(new_spec, bound)
            if first is None:
                if new_spec.kind == "at":
                    raise ValidationError(
                        "schedule.at must be after now and after the last fire",
                        field="schedule.at",
                    )
                if not cadence_changed:
                    raise Conflict("this trigger's schedule has no future fire; edit it first")
                raise ValidationError("this schedule never fires", field="schedule")
            next_ms = _ms(first)
            leases = [dynamo.entry_lease(e) for e in dynamo.in_flight_of(item).values()]
            actions.append(t.next_fire_at.set(next_ms))
            if status == "active":
                actions += [
                    t.due_at.set(min([next_ms, *leases])),
                    t.due_shard.set(dynamo.shard_of(item.id, settings.due_shards)),
                ]
            elif leases:
                actions.append(t.due_at.set(min(leases)))
            else:
                actions += [t.due_at.remove(), t.due_shard.remove()]
            condition &= (
                t.next_fire_at == int(item.next_fire_at)
                if item.next_fire_at is not None
                else t.next_fire_at.does_not_exist()
            )
            condition &= size(t.in_flight) == len(dynamo.in_flight_of(item))

    if not recomputed and status == "disabled" and item.status == "active":
        # Out of the due index at once (only a live lease keeps it there), fenced so that
        # a claim landing in between cannot lose the lease that lets it be reaped.
        leases = [dynamo.entry_lease(e) for e in dynamo.in_flight_of(item).values()]
        if leases:
            actions.append(t.due_at.set(min(leases)))
        else:
            actions += [t.due_at.remove(), t.due_shard.remove()]
        condition &= size(t.in_flight) == len(dynamo.in_flight_of(item))

    if state_out is None:
        try:
            item.update(actions=actions, condition=condition)
        except UpdateError as exc:
            if getattr(exc, "cause_response_code", None) == "ConditionalCheckFailedException":
                raise _Raced() from None
            raise
        if old_ref != new_ref:
            dynamo.delete_payload(item.id, old_ref)
        state, _ = dynamo.get_state(item.id)
        return item, state, shown_once
    _, state_version = dynamo.get_state(item.id)
    state_item = StateModel(
        item.id,
        state=json.dumps(state_out, separators=(",", ":")),
        version=state_version + 1,
    )
    state_condition = (
        StateModel.trigger_id.does_not_exist()
        if state_version == 0
        else StateModel.version == state_version
    )
    connection = Connection(region=settings.region, host=settings.endpoint_url)
    try:
        with TransactWrite(connection=connection) as tx:
            tx.update(TriggerModel(item.id), actions=actions, condition=condition)
            tx.save(state_item, condition=state_condition)
    except TransactWriteError as exc:
        if exc.cause_response_code != "TransactionCanceledException":
            raise
        # Which condition failed? Ask the items rather than the cancellation reasons:
        # moto lists the reasons in table-name order, DynamoDB in request order.
        if dynamo.get_state(item.id)[1] != state_version:
            raise Conflict(
                "the state changed while it was edited (a run wrote it); read it and retry",
                field="state",
            ) from None
        raise _Raced() from None
    if old_ref != new_ref:
        dynamo.delete_payload(item.id, old_ref)
    fresh = dynamo.get_trigger(item.id)
    if fresh is None:
        raise NotFound(f"trigger {item.id!r} not found")
    return fresh, state_out, shown_once


def now_utc() -> datetime:
    """The clock, read by entry points only."""
    return datetime.now(UTC)
