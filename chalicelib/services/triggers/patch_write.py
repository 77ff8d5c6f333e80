"""A PATCH's write, in named steps: validate the merge, the target, the slot, the commit.

Race with the heartbeat, drawn as a timeline (a claim writes in_flight, next_fire_at and
due_at, never ``version``)::

    heartbeat                         PATCH
    reads due row: slot S             reads item: version v, next_fire_at S
    claim S: if next_fire_at == S
      -> in_flight[S], next := S'
                                      write: if version == v
                                             and next_fire_at == S   -> fails
                                      re-read: S is in flight, so the new
                                      slot N is computed after max(now, S)

or the PATCH writes first: next_fire_at is no longer S, so the claim's own condition
fails and the heartbeat counts a lost race; S never fires. A settle that applies a
workflow's next_fire_at is fenced the same way, and the in_flight size fence keeps
due_at covering every live lease.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime
from typing import Any, cast

from chalicelib import sources
from chalicelib.domain import schedule
from chalicelib.domain.due import sched_json, to_ms
from chalicelib.domain.errors import Conflict, NotFound, ValidationError
from chalicelib.domain.records import Trigger
from chalicelib.domain.rules import due_at, due_with_slot
from chalicelib.domain.settle import Limits, limit_reached
from chalicelib.domain.spec import (
    EventIn,
    TriggerIn,
    TriggerPatch,
    decode_schedule,
    encode_schedule,
    parse_model,
    schedule_spec_from,
)
from chalicelib.domain.trigger_patch import interval_anchor, merged_spec, next_slot, status_after
from chalicelib.services import state as state_contract
from chalicelib.services.auth import Principal
from chalicelib.services.triggers.shared import (
    check_expiry,
    in_flight,
    last_claimed_slot_ms,
    leases,
    spec_to_store,
    stored_spec,
)
from chalicelib.settings import get_settings
from chalicelib.store import payloads, trigger_writes, triggers
from chalicelib.store import state as state_store
from chalicelib.store.trigger_writes import DueChange, EditOutcome, StateEdit, TriggerEdit
from chalicelib.workflows import get_workflow, is_known_target, remote
from chalicelib.workflows.remote import display_target

__all__ = ["Raced", "write_patch", "planned_patch"]


class Raced(Exception):
    """The item changed between our read and our write (a claim, a settle or an edit)."""


def _validated(
    item: Trigger, data: TriggerPatch, sent: set[str], *, now: datetime
) -> tuple[TriggerIn, dict | None]:
    """The merged settings, validated as a whole, and the new state (None: unchanged)."""
    merged = merged_spec(
        payloads.load_spec(item, about=True),
        data,
        sent,
        kind=item.kind,
        trigger_id=item.id,
        workflow=item.workflow,
        shown_workflow=display_target(item.workflow),
    )
    full = parse_model(TriggerIn, {**merged, "state": {}})
    if data.limits is not None and "expires_at" in data.limits.model_fields_set:
        check_expiry(full.limits, now=now)
    if "workflow" in sent and not is_known_target(full.workflow):
        raise ValidationError(f"unknown workflow {full.workflow!r}", field="workflow")
    if data.event is not None and full.event is not None:
        # The same checks as create (sources.validate_event), before anything is written:
        # a bad filter is a 422 naming event.filter.<key>, and the trigger keeps its
        # version. Both the event as sent (the merge goes through JSON, where 1e999 would
        # quietly become null) and the merged result; the source is the stored one when
        # the patch does not name it.
        # (validate_event takes a patch's partial event too: it checks what it has.)
        as_sent = data.event.model_copy(update={"source": full.event.source})
        sources.validate_event(cast(EventIn, as_sent))
        sources.validate_event(full.event)
    if "state" not in sent:
        return full, None
    state = state_contract.validate_state(get_workflow(full.workflow), full, data.state or {})
    return full, state


def _new_target(item: Trigger, workflow: str, *, now: datetime) -> tuple[dict, str | None]:
    """A new ``http:`` or ``lambda:`` target is checked: what is shown once, and the
    outbound secret to store (an http target gets one, shown once, if it has none)."""
    if workflow == item.workflow or not workflow.startswith(remote.TARGET_PREFIXES):
        return {}, None
    if item.outbound_secret_sealed is not None:
        # Keep the secret the receiver already verifies with; only check the new URL.
        remote.prepare_target(item, workflow, now=now)  # its new secret is not kept
        return {}, None
    prepared, shown_once = remote.prepare_target(item, workflow, now=now)
    return shown_once, prepared.outbound_secret_sealed if shown_once else None


def _new_schedule(
    item: Trigger, full: TriggerIn, *, now: datetime
) -> tuple[schedule.ScheduleSpec | None, schedule.ScheduleSpec]:
    """The stored schedule and the patched one (anchored, validated)."""
    assert full.schedule is not None
    old = decode_schedule(item.sched) if item.sched else None
    anchor = interval_anchor(old, full.schedule, last_slot_ms=last_claimed_slot_ms(item), now=now)
    new = schedule_spec_from(full.schedule, anchor_at=anchor)
    schedule.validate_schedule(new, min_interval_s=get_settings().min_interval_s)
    return old, new


def _moved_slot(
    item: Trigger, new: schedule.ScheduleSpec, status: str, *, now: datetime, changed: bool
) -> dict[str, Any]:
    """The edit's fields when the next slot is recomputed, fenced on what a claim changes."""
    first = next_slot(
        new, last_slot_ms=last_claimed_slot_ms(item), now=now, cadence_changed=changed
    )
    next_ms = to_ms(first)
    live = leases(item)
    if status == "active":
        shard = triggers.shard_of(item.id, get_settings().due_shards)
        due = DueChange(due_with_slot(live, next_slot_ms=next_ms), shard)
    else:
        due = DueChange(due_at(live, next_slot_ms=None))
    return {
        "next_fire_at": next_ms,
        "due": due,
        "fence_slot": True,
        "expected_next_fire_at": triggers.next_slot_of(item),
        "expected_in_flight": len(in_flight(item)),
    }


def _slot_fields(item: Trigger, full: TriggerIn, status: str, *, now: datetime) -> dict[str, Any]:
    """What the edit changes of the schedule, the slot and the due index key."""
    fields: dict[str, Any] = {}
    moved = False
    if item.kind != "event" and full.schedule is not None:
        old, new = _new_schedule(item, full, now=now)
        projection = sched_json(
            new, overlap=full.overlap, concurrency=full.concurrency, tenant=item.tenant
        )
        changed = old is None or encode_schedule(new) != encode_schedule(old)
        if projection != item.sched:
            fields.update(sched_kind=(projection, new.kind))
        if changed or (status == "active" and item.status != "active"):
            moved = True
            fields.update(_moved_slot(item, new, status, now=now, changed=changed))
    if not moved and status == "disabled" and item.status == "active":
        # Out of the due index at once (only a live lease keeps it there), fenced so that
        # a claim landing in between cannot lose the lease that lets it be reaped.
        fields.update(due=DueChange(due_at(leases(item), next_slot_ms=None)))
        fields.update(expected_in_flight=len(in_flight(item)))
    return fields


def _commit(item: Trigger, edit: TriggerEdit, state: dict | None) -> Trigger | None:
    """Write the edit (with the state's CAS when the state changes).

    The trigger as written; None when it must be read again (a transaction does not
    return the item).
    """
    if state is None:
        outcome, written = trigger_writes.write_edit(item.id, edit)
        if outcome == EditOutcome.RACED:
            raise Raced()
        return written
    _, state_version = state_store.get_state(item.id)
    outcome, _ = trigger_writes.write_edit(item.id, edit, StateEdit(state, state_version))
    if outcome == EditOutcome.STATE_RACED:
        raise Conflict(
            "the state changed while it was edited (a run wrote it); read it and retry",
            field="state",
        )
    if outcome == EditOutcome.RACED:
        raise Raced()
    return None


def _written(item: Trigger, written: Trigger | None, *, state: dict | None) -> tuple[Trigger, dict]:
    """The trigger and its state after the write (``state``: the one the edit wrote)."""
    if written is not None:
        return written, state_store.get_state(item.id)[0]
    fresh = triggers.get_trigger(item.id)
    if fresh is None:
        raise NotFound(f"trigger {item.id!r} not found")
    return fresh, state or {}


def _within_limits(item: Trigger, full: TriggerIn, *, now: datetime) -> None:
    """422 if the trigger stays (or becomes) active with a limit that already stops it:
    it would run once more and then stop (pause it to stop it now)."""
    limits = full.limits
    reached = limit_reached(
        run_count=int(item.run_count or 0),
        limits=Limits(max_runs=limits.max_runs, expires_at=limits.expires_at),
        now=now,
    )
    if reached == "max_runs":
        raise ValidationError(
            f"this trigger has run {item.run_count} times: an active trigger's max_runs "
            "must be above that (pause it to stop it)",
            field="limits.max_runs",
        )
    if reached == "expired":
        raise ValidationError(
            "this trigger's expires_at has passed: move it to enable the trigger",
            field="limits.expires_at",
        )


def write_patch(
    principal: Principal, item: Trigger, data: TriggerPatch, sent: set[str], *, now: datetime
) -> tuple[Trigger, dict, dict]:
    """Validate and write one patch of ``item``: the item, its state, what is shown once.

    Raises ``Raced`` when the item changed since it was read (the caller re-reads).
    """
    full, state = _validated(item, data, sent, now=now)
    shown_once, sealed = _new_target(item, full.workflow, now=now)
    status = status_after(item.status, sent, data.enabled)
    if status == "active" and sent & {"limits", "enabled"}:
        _within_limits(item, full, now=now)
    # A large payload, and the title and tags, go to items of their own (store/payloads);
    # those they replace are deleted once the new spec is written.
    old = stored_spec(item)
    spec = spec_to_store(full, exclude={"state", "enabled"})
    stored, new_ref = payloads.externalize_payload(item.id, spec, existing=old.payload_ref)
    stored, new_about = payloads.externalize_about(item.id, stored, existing=old.about_ref)
    edit = TriggerEdit(
        expected_version=int(item.version or 1),
        spec=json.dumps(stored, separators=(",", ":")),
        workflow=full.workflow,
        now_ms=to_ms(now),
        outbound_secret_sealed=sealed,
        by=principal.key_id,
        status=status if status != item.status else None,
        failures=int(item.consecutive_failures or 0),
    )
    edit = dataclasses.replace(edit, **_slot_fields(item, full, status, now=now))
    written = _commit(item, edit, state)
    if old.payload_ref != new_ref:
        payloads.delete_payload(item.id, old.payload_ref)
    if old.about_ref != new_about:
        payloads.delete_about(item.id, old.about_ref)
    after, state_after = _written(item, written, state=state)
    return after, state_after, shown_once


def planned_patch(
    item: Trigger, data: TriggerPatch, sent: set[str], *, now: datetime
) -> tuple[TriggerIn, dict | None, schedule.ScheduleSpec | None, schedule.ScheduleSpec | None]:
    """What ``write_patch`` would write, nothing written: the merged settings, the new
    state (None: unchanged), and the stored and patched schedules (None for an event
    trigger)."""
    full, state = _validated(item, data, sent, now=now)
    if status_after(item.status, sent, data.enabled) == "active" and sent & {"limits", "enabled"}:
        _within_limits(item, full, now=now)  # as write_patch: the dry run answers the same
    if item.kind == "event" or full.schedule is None:
        return full, state, None, None
    old, new = _new_schedule(item, full, now=now)
    return full, state, old, new
