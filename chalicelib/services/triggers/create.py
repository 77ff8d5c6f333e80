"""``POST /v1/triggers``: validate, place the first slot (or the hook), take the quotas, store."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime
from typing import Any

from chalicelib import sources
from chalicelib.domain import schedule
from chalicelib.domain.due import sched_json, to_ms
from chalicelib.domain.errors import ValidationError
from chalicelib.domain.ids import new_trigger_id
from chalicelib.domain.records import Trigger
from chalicelib.domain.spec import ScheduleIn, TriggerIn, parse_model, schedule_spec_from
from chalicelib.domain.trigger_spec import split_about
from chalicelib.observability import logger, record_metric
from chalicelib.services import audit, quotas
from chalicelib.services import state as state_contract
from chalicelib.services.auth import Principal
from chalicelib.services.triggers.shared import (
    check_expiry,
    enqueue_if_sent,
    first_fire,
    spec_to_store,
)
from chalicelib.services.triggers.views import trigger_view
from chalicelib.settings import get_settings
from chalicelib.store import payloads, trigger_writes
from chalicelib.store import triggers as triggers_store
from chalicelib.workflows import get_workflow, is_known_target, remote

__all__ = ["create_trigger", "parse_body"]


def parse_body(body: Any, *, now: datetime) -> TriggerIn:
    """A create body, validated: 422 naming the field (nothing is written)."""
    data = parse_model(TriggerIn, body)
    if (data.schedule is None) == (data.event is None):
        raise ValidationError(
            "give exactly one of schedule (cron, interval_s or at) or event", field="schedule"
        )
    if not is_known_target(data.workflow):
        raise ValidationError(f"unknown workflow {data.workflow!r}", field="workflow")
    check_expiry(data.limits, now=now)
    return data


def _new_item(principal: Principal, data: TriggerIn, trigger_id: str, now_ms: int) -> Trigger:
    enabled = data.enabled
    return Trigger(
        trigger_id,
        tenant=principal.tenant,
        workflow=data.workflow,
        spec="",
        status="active" if enabled else "disabled",
        disabled_reason=None if enabled else "manual",
        disabled_by=None if enabled else principal.key_id,
        disabled_ms=None if enabled else now_ms,
        in_flight={},
        created_by=principal.key_id,
        created_ms=now_ms,
        updated_ms=now_ms,
        version=1,
    )


def _place_schedule(
    item: Trigger, data: TriggerIn, sched_in: ScheduleIn, *, now: datetime
) -> Trigger:
    """The schedule's projection, its first slot, and (when enabled) its due index key."""
    settings = get_settings()
    spec = schedule_spec_from(sched_in, anchor_at=now)
    schedule.validate_schedule(spec, min_interval_s=settings.min_interval_s)
    first = to_ms(first_fire(spec, now=now))
    return replace(
        item,
        kind=spec.kind,
        sched=sched_json(
            spec, overlap=data.overlap, concurrency=data.concurrency, tenant=item.tenant
        ),
        next_fire_at=first,
        due_at=first if data.enabled else None,
        due_shard=triggers_store.shard_of(item.id, settings.due_shards) if data.enabled else None,
    )


def _place(item: Trigger, data: TriggerIn, *, now: datetime) -> tuple[Trigger, dict]:
    """Schedule or hook, then the target: the trigger to store, and what is shown once
    (secrets) in the 201."""
    shown_once: dict = {}
    if data.schedule is not None:
        item = _place_schedule(item, data, data.schedule, now=now)
    elif data.event is not None:  # exactly one of them (``parse_body``)
        item, shown_once = sources.prepare(replace(item, kind="event"), data.event, now=now)
    # e.g. the http: target's outbound secret, shown once
    item, shown = remote.prepare_target(item, data.workflow, now=now)
    return item, {**shown_once, **shown}


def _store(item: Trigger, spec_json: dict, state: dict | None) -> tuple[Trigger, dict]:
    """Take the tenant's quotas (429 quota), store, and give them back if the write fails.

    The quotas are taken last, after every check a client can fail. Returns the trigger
    as stored, and the title and tags kept in the about item (the 201 shows them without
    reading it back).
    """
    capacity = quotas.trigger_capacity(spec_json)
    quotas.take(item.tenant, triggers=1, runs=capacity)
    try:
        stored_spec, _ = payloads.externalize_payload(item.id, spec_json)
        stored_spec, _ = payloads.externalize_about(item.id, stored_spec)
        item = replace(item, spec=json.dumps(stored_spec, separators=(",", ":")))
        trigger_writes.insert_trigger(item, state=state)
    except Exception:
        quotas.release(item.tenant, triggers=1, runs=capacity)
        raise
    return item, split_about(spec_json)[1]


def create_trigger(
    principal: Principal,
    body: Any,
    *,
    now: datetime,
    trigger_id: str | None = None,
    key: str | None = None,
    managed_by: str | None = None,
) -> dict:
    """Validate and store a new trigger; 201 body (with the webhook secret, once).

    ``trigger_id``, ``key`` and ``managed_by``: a trigger declared as code
    (``by_key.put_trigger``), whose id was chosen when its key was reserved.
    """
    data = parse_body(body, now=now)
    trigger_id = trigger_id or new_trigger_id()
    registered = get_workflow(data.workflow)
    # create only: backfill through the workflow's initial_state
    state = state_contract.seed_state(registered, data, data.state)
    state = state_contract.validate_state(registered, data, state)
    spec_json = spec_to_store(data, exclude={"state"})
    item = replace(
        _new_item(principal, data, trigger_id, to_ms(now)), key=key, managed_by=managed_by
    )
    item, shown_once = _place(item, data, now=now)
    item, about = _store(item, spec_json, state)
    enqueue_if_sent(item, now=now)
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
    return trigger_view(item, state=state or {}, extra=shown_once, about=about)
