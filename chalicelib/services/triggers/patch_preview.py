"""``PATCH /v1/triggers/{id}?dry_run=true``: the trigger as the edit would make it, and the
slots it adds and removes over the next 30 days; nothing is stored.

The edit goes through the same merge, validation and next-slot rule as a real PATCH
(``patch_write.planned_patch``, ``trigger_patch.next_slot``): a slot that already ran or
is running is never fired again, and an edit never resumes a paused trigger (only
``enabled`` does), so the dry run shows exactly what the PATCH would do.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timedelta
from typing import Any

from chalicelib.domain import schedule
from chalicelib.domain.due import sched_json, to_ms
from chalicelib.domain.errors import ValidationError
from chalicelib.domain.records import Trigger
from chalicelib.domain.spec import TriggerIn, TriggerPatch, encode_schedule, parse_model
from chalicelib.domain.trigger_patch import next_slot, status_after, version_conflict
from chalicelib.services.auth import Principal
from chalicelib.services.lookup import load_owned
from chalicelib.services.runs import iso_ms
from chalicelib.services.triggers.patch_write import planned_patch
from chalicelib.services.triggers.shared import last_claimed_slot_ms, spec_to_store
from chalicelib.services.triggers.views import trigger_view
from chalicelib.store import state as state_store

__all__ = ["SLOTS_DIFF_DAYS", "dry_run_patch"]

SLOTS_DIFF_DAYS = 30
# Slots listed per side; the counts are always whole up to the scan.
_SHOWN = 500


def _diff_view(
    old: schedule.ScheduleSpec | None,
    new: schedule.ScheduleSpec,
    *,
    bound: datetime,
    now: datetime,
) -> dict[str, Any]:
    added, removed, cut = schedule.slots_diff(
        old, new, bound, now + timedelta(days=SLOTS_DIFF_DAYS)
    )
    return {
        "added": [iso_ms(to_ms(s)) for s in added[:_SHOWN]],
        "removed": [iso_ms(to_ms(s)) for s in removed[:_SHOWN]],
        "added_count": len(added),
        "removed_count": len(removed),
        "days": SLOTS_DIFF_DAYS,
        "truncated": cut or len(added) > _SHOWN or len(removed) > _SHOWN,
    }


def _as_patched(
    principal: Principal,
    item: Trigger,
    full: TriggerIn,
    new: schedule.ScheduleSpec | None,
    *,
    status: str,
    next_ms: int | None,
    now: datetime,
) -> Trigger:
    """The trigger item as ``write_patch`` would leave it (``trigger_writes._edit_actions``),
    so the dry run's view derives ``display_name``, ``cadence``, warnings and the rest
    exactly as the real PATCH's answer does. ``updated_at`` and ``version`` stay: nothing
    is stored."""
    spec = spec_to_store(full, exclude={"state", "enabled"})
    changes: dict[str, Any] = {
        "spec": json.dumps(spec, separators=(",", ":")),
        "workflow": full.workflow,
        "status": status,
    }
    if status != item.status and status == "active":
        changes.update(disabled_reason=None, disabled_note=None, disabled_by=None)
        changes.update(disabled_ms=None)
    elif status != item.status:
        changes.update(disabled_reason="manual", disabled_by=principal.key_id)
        changes.update(disabled_ms=to_ms(now))
    if new is not None:
        sched = sched_json(
            new, overlap=full.overlap, concurrency=full.concurrency, tenant=item.tenant
        )
        changes.update(sched=sched, kind=new.kind)
    if next_ms is not None:
        changes.update(next_fire_at=next_ms, next_slot=None)
    return dataclasses.replace(item, **changes)


def dry_run_patch(principal: Principal, trigger_id: str, body: Any, *, now: datetime) -> dict:
    """The trigger as the PATCH would leave it, with ``slots_diff``; nothing is written."""
    data = parse_model(TriggerPatch, body)
    sent = set(data.model_fields_set) - {"version"}
    if not sent:
        raise ValidationError("the patch changes nothing: send at least one field", field=None)
    item = load_owned(principal, trigger_id)
    conflict = version_conflict(data.version, int(item.version or 1))
    if conflict is not None:
        raise conflict
    full, state, old, new = planned_patch(item, data, sent, now=now)
    status = status_after(item.status, sent, data.enabled)
    if state is None:
        state = state_store.get_state(item.id)[0]
    diff: dict[str, Any] = {"added": [], "removed": [], "days": SLOTS_DIFF_DAYS}
    next_ms = None
    if new is not None:
        last = last_claimed_slot_ms(item)
        changed = old is None or encode_schedule(old) != encode_schedule(new)
        bound = max(now, datetime.fromtimestamp(last / 1000, now.tzinfo)) if last else now
        if changed or (status == "active" and item.status != "active"):
            # The slot a real PATCH would write (``patch_write._moved_slot``).
            first = next_slot(new, last_slot_ms=last, now=now, cadence_changed=changed)
            next_ms = to_ms(first)
        diff = _diff_view(old, new, bound=bound, now=now)
    after = _as_patched(principal, item, full, new, status=status, next_ms=next_ms, now=now)
    return trigger_view(after, state=state, extra={"dry_run": True, "slots_diff": diff})
