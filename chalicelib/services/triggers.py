"""Trigger use cases behind the REST API: create, read, list, change, delete, fire, preview."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from typing import Any

from pynamodb.exceptions import DoesNotExist

from chalicelib.domain import schedule
from chalicelib.domain.errors import Conflict, NotFound, ServiceUnavailable, ValidationError
from chalicelib.domain.ids import manual_run_id, new_trigger_id, trigger_id_of_run
from chalicelib.domain.spec import (
    PreviewIn,
    ScheduleIn,
    TriggerIn,
    decode_schedule,
    encode_schedule,
    parse_model,
    schedule_spec_from,
)
from chalicelib.observability import logger, record_metric
from chalicelib.services.auth import Principal
from chalicelib.services.runs import iso_ms, run_view
from chalicelib.settings import get_settings
from chalicelib.store import dynamo
from chalicelib.store.models import RunModel, StateModel, TriggerModel
from chalicelib.store.sqs import FireMessage, send_fires
from chalicelib.workflows import get_workflow, is_known_target

__all__ = [
    "create_trigger",
    "get_trigger_view",
    "list_triggers",
    "delete_trigger",
    "fire_now",
    "set_enabled",
    "preview_schedule",
    "preview_trigger",
    "list_trigger_runs",
    "list_runs",
    "get_run_view",
    "load_owned",
    "trigger_view",
    "encode_cursor",
    "decode_cursor",
    "event_hooks",
    "view_hooks",
    "audit",
]

SOURCE_NAMES = {
    "webhook": "webhook",
    "github": "GitHub",
    "stripe": "Stripe",
    "slack": "Slack",
    "standard": "Standard Webhooks",
    "shopify": "Shopify",
}

# Extension points filled by other services when they load (see services/plugins.py):
# - "prepare": events — prepare(item, event_in, now=) -> dict shown once on create
# - "audit": audit — audit(principal, action, tenant=, trigger_id=, now=, detail=)
# - "validate_state": guardrails — validate_state(workflow|None, TriggerIn, state) -> state
event_hooks: dict[str, Any] = {}
# Each view hook is view(item, spec, state|None) -> dict merged into the trigger view
# (events add webhook_url; guardrails add warnings).
view_hooks: list[Any] = []


def audit(
    principal: Principal | None,
    action: str,
    *,
    tenant: str,
    trigger_id: str | None,
    now: datetime,
    detail: dict | None = None,
) -> None:
    """Record who did what (the audit service replaces this no-op when loaded)."""
    hook = event_hooks.get("audit")
    if hook is not None:
        hook(principal, action, tenant=tenant, trigger_id=trigger_id, now=now, detail=detail or {})


def _ms(at: datetime) -> int:
    return int(round(at.timestamp() * 1000))


def encode_cursor(key: dict | None) -> str | None:
    """An opaque pagination cursor for a DynamoDB ``LastEvaluatedKey``."""
    if not key:
        return None
    return base64.urlsafe_b64encode(json.dumps(key, separators=(",", ":")).encode()).decode()


def decode_cursor(cursor: str | None) -> dict | None:
    """The ``LastEvaluatedKey`` inside a cursor; 422 for a cursor we did not issue."""
    if not cursor:
        return None
    try:
        value = json.loads(base64.urlsafe_b64decode(cursor.encode() + b"==="))
        if not isinstance(value, dict):
            raise ValueError
        return value
    except (ValueError, UnicodeDecodeError):
        raise ValidationError("cursor is not valid", field="cursor") from None


def parse_limit(raw: str | None, *, default: int = 50, maximum: int = 200) -> int:
    """The ``limit`` query parameter, 1..maximum."""
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValidationError("limit must be an integer", field="limit") from None
    if not 1 <= value <= maximum:
        raise ValidationError(f"limit must be between 1 and {maximum}", field="limit")
    return value


def sched_json(spec: schedule.ScheduleSpec, *, overlap: str, concurrency: int) -> str:
    """The schedule plus the overlap policy, as projected into the due index."""
    data = json.loads(encode_schedule(spec))
    if overlap != "skip":
        data["o"] = overlap
    if concurrency != 1:
        data["n"] = concurrency
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
    spec = json.loads(item.spec or "{}")
    last_run = (
        item.last_run.as_dict()
        if item.last_run is not None and hasattr(item.last_run, "as_dict")
        else item.last_run
    )
    view = {
        "id": item.id,
        "workflow": item.workflow,
        "title": spec.get("title"),
        "display_name": spec.get("title") or item.workflow,
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
    for view_hook in view_hooks:
        view.update(view_hook(item, spec, state))
    if extra:
        view.update(extra)
    return view


def load_owned(principal: Principal, trigger_id: str) -> TriggerModel:
    """The trigger if it belongs to the caller's tenant; 404 otherwise (also for other tenants)."""
    if not trigger_id.startswith("trg_") or len(trigger_id) > 64:
        raise NotFound(f"trigger {trigger_id!r} not found")
    item = dynamo.get_trigger(trigger_id)
    if item is None or item.tenant != principal.tenant:
        raise NotFound(f"trigger {trigger_id!r} not found")
    return item


def _first_fire(
    spec: schedule.ScheduleSpec, *, now: datetime, field: str = "schedule"
) -> datetime | None:
    first = schedule.next_fire_after(spec, now)
    if spec.kind == "at" and first is None:
        raise ValidationError("schedule.at is in the past", field="schedule.at")
    if first is None:
        raise ValidationError("this schedule never fires", field=field)
    return first


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
    trigger_id = new_trigger_id()
    now_ms = _ms(now)
    state = data.state
    registered = get_workflow(data.workflow)
    validate_state = event_hooks.get("validate_state")
    if validate_state is not None:
        state = validate_state(registered, data, state)
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
        item.sched = sched_json(spec, overlap=data.overlap, concurrency=data.concurrency)
        first = _first_fire(spec, now=now)
        item.next_fire_at = _ms(first) if first else None
        if data.enabled and first is not None:
            item.due_at = item.next_fire_at
            item.due_shard = dynamo.shard_of(trigger_id, settings.due_shards)
    else:
        item.kind = "event"
        prepare = event_hooks.get("prepare")
        if prepare is None:
            raise ServiceUnavailable("event triggers are not available")
        shown_once = prepare(item, data.event, now=now)
    item.spec = json.dumps(spec_json, separators=(",", ":"))
    if state:
        StateModel(trigger_id, state=json.dumps(state, separators=(",", ":")), version=1).save()
    item.save(condition=TriggerModel.id.does_not_exist())
    audit(
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


def get_trigger_view(principal: Principal, trigger_id: str) -> dict:
    """One trigger, with its state."""
    item = load_owned(principal, trigger_id)
    state, _ = dynamo.get_state(item.id)
    return trigger_view(item, state=state)


def list_triggers(principal: Principal, params: dict) -> dict:
    """A page of the tenant's triggers, newest first, filtered by tag/workflow/status."""
    limit = parse_limit(params.get("limit"))
    cursor = decode_cursor(params.get("cursor"))
    tag, wf, status = params.get("tag"), params.get("workflow"), params.get("status")
    if status not in (None, "", "active", "disabled"):
        raise ValidationError("status must be active or disabled", field="status")
    items: list[dict] = []
    last_key = cursor
    while len(items) < limit:
        page = TriggerModel.by_tenant.query(
            principal.tenant,
            scan_index_forward=False,
            limit=limit,
            last_evaluated_key=last_key,
        )
        ids = [row.id for row in page]
        last_key = page.last_evaluated_key
        if ids:
            found = {t.id: t for t in TriggerModel.batch_get(ids)}
            for trigger_id in ids:
                item = found.get(trigger_id)
                if item is None:
                    continue
                spec = json.loads(item.spec or "{}")
                if tag and tag not in (spec.get("tags") or []):
                    continue
                if wf and item.workflow != wf:
                    continue
                if status and item.status != status:
                    continue
                items.append(trigger_view(item))
        if not last_key:
            break
    return {"items": items[:limit], "next_cursor": encode_cursor(last_key) if last_key else None}


def delete_trigger(principal: Principal, trigger_id: str, *, now: datetime) -> None:
    """Delete a trigger: it stops at once (a queued run is dropped at its start fence)."""
    item = load_owned(principal, trigger_id)
    item.delete()
    try:
        StateModel(trigger_id).delete()
    except DoesNotExist:
        pass
    audit(principal, "delete", tenant=item.tenant, trigger_id=trigger_id, now=now)


def set_enabled(principal: Principal, trigger_id: str, *, enabled: bool, now: datetime) -> dict:
    """Enable (recomputing the next slot from now: no burst) or disable (reason ``manual``)."""
    settings = get_settings()
    item = load_owned(principal, trigger_id)
    t = TriggerModel
    now_ms = _ms(now)
    actions = [t.updated_ms.set(now_ms), t.version.add(1)]
    if enabled:
        actions += [
            t.status.set("active"),
            t.disabled_reason.remove(),
            t.consecutive_failures.set(0),
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
        actions += [t.status.set("disabled"), t.disabled_reason.set("manual")]
    item.update(actions=actions)
    audit(
        principal,
        "enable" if enabled else "disable",
        tenant=item.tenant,
        trigger_id=trigger_id,
        now=now,
    )
    state, _ = dynamo.get_state(item.id)
    return trigger_view(item, state=state)


def fire_now(principal: Principal, trigger_id: str, *, now: datetime, payload: Any = None) -> dict:
    """Claim a manual run and enqueue it at once; 202 ``{run_id}``."""
    settings = get_settings()
    item = load_owned(principal, trigger_id)
    if item.status != "active":
        raise Conflict(f"trigger is disabled ({item.disabled_reason or 'manual'}); enable it first")
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
    message = FireMessage(
        run_id=run_id, trigger_id=item.id, surface="manual", scheduled_ms=_ms(now)
    )
    if send_fires([message]):
        dynamo.release_claim(item.id, run_id=run_id, slot_ms=None, shard=shard)
        raise ServiceUnavailable("the run could not be queued; try again")
    audit(
        principal,
        "fire",
        tenant=item.tenant,
        trigger_id=trigger_id,
        now=now,
        detail={"run_id": run_id},
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
    spec = _preview_spec(data, anchor=start)
    schedule.validate_schedule(spec, min_interval_s=1)
    fires = schedule.preview(spec, start=start, count=data.count)
    return {"fires": [iso_ms(_ms(f)) for f in fires], "cadence": schedule.describe(spec)}


def preview_trigger(principal: Principal, trigger_id: str, params: dict, *, now: datetime) -> dict:
    """The next fires of a stored trigger."""
    item = load_owned(principal, trigger_id)
    count = parse_limit(params.get("count"), default=10, maximum=100)
    if not item.sched:
        return {"fires": []}
    spec = decode_schedule(item.sched)
    fires = schedule.preview(spec, start=now, count=count)
    return {"fires": [iso_ms(_ms(f)) for f in fires]}


def _in_flight_runs(item: TriggerModel) -> list[dict]:
    runs = []
    for run_id, entry in sorted(dynamo.in_flight_of(item).items(), reverse=True):
        surface = {"s": "schedule", "e": "event", "m": "manual"}.get(
            entry.get("k", "s"), "schedule"
        )
        runs.append(
            {
                "id": run_id,
                "trigger_id": item.id,
                "surface": surface,
                "status": "running" if int(entry.get("s", 0)) else "queued",
                "workflow": item.workflow,
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


def list_trigger_runs(principal: Principal, trigger_id: str, params: dict) -> dict:
    """A trigger's runs, newest first (runs in flight first, on the first page)."""
    item = load_owned(principal, trigger_id)
    limit = parse_limit(params.get("limit"))
    cursor = decode_cursor(params.get("cursor"))
    status, surface = params.get("status"), params.get("surface")
    page = RunModel.query(item.id, scan_index_forward=False, limit=limit, last_evaluated_key=cursor)
    done = [run_view(r) for r in page]
    items = (_in_flight_runs(item) if cursor is None else []) + done
    if status:
        items = [r for r in items if r["status"] == status]
    if surface:
        items = [r for r in items if r["surface"] == surface]
    return {"items": items, "next_cursor": encode_cursor(page.last_evaluated_key)}


def list_runs(principal: Principal, params: dict) -> dict:
    """The tenant's runs, newest first, by ``surface``, ``status`` and ``trigger_id``."""
    trigger_id = params.get("trigger_id")
    if trigger_id:
        return list_trigger_runs(principal, trigger_id, params)
    limit = parse_limit(params.get("limit"))
    cursor = decode_cursor(params.get("cursor"))
    condition = None
    if params.get("status"):
        condition = RunModel.status == params["status"]
    if params.get("surface"):
        clause = RunModel.surface == params["surface"]
        condition = clause if condition is None else condition & clause
    items: list[dict] = []
    last_key = cursor
    while len(items) < limit:
        page = RunModel.by_tenant.query(
            principal.tenant,
            scan_index_forward=False,
            filter_condition=condition,
            limit=limit,
            last_evaluated_key=last_key,
        )
        items.extend(run_view(r) for r in page)
        last_key = page.last_evaluated_key
        if not last_key:
            break
    return {"items": items[:limit], "next_cursor": encode_cursor(last_key)}


def get_run_view(principal: Principal, run_id: str) -> dict:
    """One run (also a queued or running one)."""
    trigger_id = trigger_id_of_run(run_id)
    if trigger_id is None:
        raise NotFound(f"run {run_id!r} not found")
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


def now_utc() -> datetime:
    """The clock, read by entry points only."""
    return datetime.now(UTC)
