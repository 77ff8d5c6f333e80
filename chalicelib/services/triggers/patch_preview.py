"""``PATCH /v1/triggers/{id}?dry_run=true``: the trigger as the edit would make it, and the
slots it adds and removes over the next 30 days; nothing is stored.

The edit goes through the same merge, validation and next-slot rule as a real PATCH
(``patch_write.planned_patch``, ``trigger_patch.next_slot``): a slot that already ran or
is running is never fired again, and an edit never resumes a paused trigger (only
``enabled`` does), so the dry run shows exactly what the PATCH would do.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from chalicelib.domain import schedule
from chalicelib.domain.due import to_ms
from chalicelib.domain.errors import ValidationError
from chalicelib.domain.spec import TriggerPatch, encode_schedule, parse_model
from chalicelib.domain.trigger_patch import next_slot, status_after, version_conflict
from chalicelib.services.auth import Principal
from chalicelib.services.lookup import load_owned
from chalicelib.services.runs import iso_ms
from chalicelib.services.triggers.patch_write import planned_patch
from chalicelib.services.triggers.shared import last_claimed_slot_ms
from chalicelib.services.triggers.views import trigger_view

__all__ = ["SLOTS_DIFF_DAYS", "dry_run_patch"]

SLOTS_DIFF_DAYS = 30
# Slots listed per side; the counts are always whole up to the scan.
_SHOWN = 500
_OVERLAID: tuple[str, ...] = (
    *("workflow", "title", "tags", "schedule", "payload", "serialize_key", "limits"),
    *("overlap", "concurrency", "allow_destructive", "history", "secret_scope"),
)


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
    full, old, new = planned_patch(item, data, sent, now=now)
    view = trigger_view(item)
    dumped = full.model_dump(mode="json")
    view.update({k: dumped[k] for k in _OVERLAID if k in dumped and k in view})
    status = status_after(item.status, sent, data.enabled)
    view["status"] = status
    view["dry_run"] = True
    if new is None:
        view["slots_diff"] = {"added": [], "removed": [], "days": SLOTS_DIFF_DAYS}
        return view
    last = last_claimed_slot_ms(item)
    changed = old is None or encode_schedule(old) != encode_schedule(new)
    bound = max(now, datetime.fromtimestamp(last / 1000, now.tzinfo)) if last else now
    view.update(kind=new.kind, cadence=schedule.describe(new))
    if changed or (status == "active" and item.status != "active"):
        # The slot a real PATCH would write (``patch_write._moved_slot``).
        first = next_slot(new, last_slot_ms=last, now=now, cadence_changed=changed)
        view["next_fire_at"] = iso_ms(to_ms(first))
    view["slots_diff"] = _diff_view(old, new, bound=bound, now=now)
    return view
