"""Enable and pause: one trigger (``/enable``, ``/disable``), or many by tag or workflow."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from chalicelib.domain import schedule
from chalicelib.domain.due import to_ms
from chalicelib.domain.epoch_ms import parse_iso
from chalicelib.domain.errors import Conflict, ValidationError
from chalicelib.domain.records import Trigger
from chalicelib.domain.rules import due_with_slot
from chalicelib.domain.settle import Limits, limit_reached
from chalicelib.domain.spec import DisableIn, SwitchManyIn, decode_schedule, parse_model
from chalicelib.observability import record_metric
from chalicelib.services import audit
from chalicelib.services.alerts import detect as alerts
from chalicelib.services.auth import Principal
from chalicelib.services.lookup import load_owned
from chalicelib.services.triggers.shared import described_spec, enqueue_if_sent, leases
from chalicelib.services.triggers.views import trigger_view
from chalicelib.settings import get_settings
from chalicelib.store import payloads, trigger_reads, trigger_writes
from chalicelib.store import state as state_store
from chalicelib.store import triggers as triggers_store
from chalicelib.store.trigger_writes import Slot

__all__ = ["set_enabled", "set_enabled_many", "switch_one"]


def _resume_slot(item: Trigger, *, now: datetime) -> Slot | None:
    """The next slot from now (no burst), keyed into the due index; None for an event."""
    if not item.sched:
        return None
    first = schedule.next_fire_after(decode_schedule(item.sched), now)
    if first is None:
        raise Conflict("this trigger's schedule has no future fire; edit it first")
    next_ms = to_ms(first)
    return Slot(
        next_fire_at=next_ms,
        due_at=due_with_slot(leases(item), next_slot_ms=next_ms),
        due_shard=triggers_store.shard_of(item.id, get_settings().due_shards),
    )


def _within_limits(item: Trigger, *, now: datetime) -> None:
    """409 if the trigger's limits already stop it: it would run once more, then stop."""
    limits = (json.loads(item.spec or "{}") or {}).get("limits") or {}
    reached = limit_reached(
        run_count=int(item.run_count or 0),
        limits=Limits(
            max_runs=limits.get("max_runs"), expires_at=parse_iso(limits.get("expires_at"))
        ),
        now=now,
    )
    if reached == "max_runs":
        raise Conflict(
            f"this trigger has run {item.run_count} times, its limits.max_runs: "
            "raise or remove limits.max_runs (PATCH) first"
        )
    if reached == "expired":
        raise Conflict(
            f"this trigger expired at {limits.get('expires_at')}: move or remove "
            "limits.expires_at (PATCH) first"
        )


def switch_one(
    principal: Principal,
    item: Trigger,
    *,
    enabled: bool,
    note: str | None,
    now: datetime,
    via: str | None = None,
) -> Trigger:
    """Write one enable or pause and audit it; the trigger as written.

    A pause records who and when, and the note if one was given; pausing a trigger that
    is already disabled keeps its reason (``failures`` stays visible) and updates the
    note. An enable clears all of it, and a backfill that waited for it goes on.
    """
    if enabled:
        _within_limits(item, now=now)
        item = trigger_writes.enable_trigger(
            item.id,
            now_ms=to_ms(now),
            slot=_resume_slot(item, now=now),
            failures=int(item.consecutive_failures or 0),
        )
        enqueue_if_sent(item, now=now)
    else:
        was_active = item.status == "active"
        item = trigger_writes.pause_trigger(
            item.id, by=principal.key_id, now_ms=to_ms(now), note=note, manual=was_active
        )
        if was_active:  # a person's pause is a transition too (bus, and ``disabled``)
            alerts.note_disabled(item, reason="manual", now=now, note=note)
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
        from chalicelib.services import ondemand  # the backfill path, loaded when used

        ondemand.dispatch_backfill(item.id, now=now)
    return item


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
    item = switch_one(principal, item, enabled=enabled, note=data.note, now=now)
    state, _ = state_store.get_state(item.id)
    return trigger_view(item, state=state)


def _chosen(item: Trigger, about: dict, tenant: str, data: SwitchManyIn, wanted: str) -> bool:
    """Whether a bulk switch changes ``item``: the tenant's, not yet ``wanted``, matching
    (``about``: its title and tags, see ``payloads.load_abouts``)."""
    if item.tenant != tenant or item.status == wanted:
        return False
    if data.workflow is not None and item.workflow != data.workflow:
        return False
    return data.tag is None or described_spec(item, about).has_tag(data.tag)


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
    ids = trigger_reads.tenant_trigger_ids(principal.tenant)
    changed: list[str] = []
    skipped: list[dict] = []
    wanted = "active" if enabled else "disabled"
    items = sorted(trigger_reads.get_triggers(ids), key=lambda i: i.id)
    abouts = payloads.load_abouts(items) if data.tag is not None else {}
    for item in items:
        if not _chosen(item, abouts.get(item.id, {}), principal.tenant, data, wanted):
            continue
        try:
            switch_one(principal, item, enabled=enabled, note=data.note, now=now, via="bulk")
        except Conflict as exc:
            skipped.append({"id": item.id, "reason": exc.message})
            continue
        changed.append(item.id)
    if enabled:
        record_metric("TriggersEnabled", len(changed))
    else:
        record_metric("TriggersDisabled", len(changed))
    return {"changed": len(changed), "ids": changed, "skipped": skipped}
