"""One-off exceptions to a schedule: skip one slot with a reason (and undo it), or add one
extra run at an instant.

They are kept on the trigger's schedule (``schedule.skips``, ``schedule.extras``) and
written through the PATCH path: the same version fence, the same next-slot rule (a slot
that ran is never run again), the same audit. The fire path reads them from the stored
schedule like any other part of it: a skipped slot's claim records it ``skipped`` with
its reason (``domain/catchup``), an extra instant is one more slot (``fires.next_step``).
A passed exception is pruned when the next one is written.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from chalicelib.domain import schedule
from chalicelib.domain.codec import decode_schedule
from chalicelib.domain.due import from_ms
from chalicelib.domain.errors import Conflict, NotFound, ValidationError
from chalicelib.domain.records import Trigger
from chalicelib.domain.schedule import MAX_INTERVAL_S
from chalicelib.domain.spec import ExtraIn, SkipIn, parse_model
from chalicelib.services.auth import Principal
from chalicelib.services.lookup import load_owned
from chalicelib.services.triggers.patch import patch_trigger
from chalicelib.services.triggers.shared import last_claimed_slot_ms
from chalicelib.store import payloads, triggers

__all__ = ["skip_slot", "unskip_slot", "add_extra"]


def _scheduled(principal: Principal, trigger_id: str) -> tuple[Trigger, dict]:
    item = load_owned(principal, trigger_id)
    if item.kind == "event" or not item.sched:
        raise ValidationError("an event trigger has no slots to skip or add", field="schedule")
    return item, dict(payloads.load_spec(item).get("schedule") or {})


def _parse(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValidationError("must be an ISO-8601 instant", field="slot") from None


def _pending(entries: list, key: str, item: Trigger) -> list:
    """The stored exceptions not yet passed (a slot before the trigger's next one ran)."""
    current = triggers.next_slot_of(item)
    floor = from_ms(current) if current is not None else None
    return [e for e in entries if floor is None or _parse(str(e[key])) >= floor]


def skip_slot(principal: Principal, trigger_id: str, body: Any, *, now: datetime) -> dict:
    """Skip one future slot of the schedule with a reason; 200 with the trigger."""
    data = parse_model(SkipIn, body)
    item, stored = _scheduled(principal, trigger_id)
    spec = decode_schedule(item.sched or "{}")
    last = last_claimed_slot_ms(item)
    bound = max(now, from_ms(last)) if last is not None else now
    is_slot = schedule.next_fire_after(spec, data.slot - timedelta(microseconds=1)) == data.slot
    if not is_slot or data.slot <= bound:
        raise ValidationError(
            "must be a future slot of this trigger's schedule (see its preview)", field="slot"
        )
    skips = [s for s in _pending(stored.get("skips") or [], "slot", item)]
    skips = [s for s in skips if _parse(str(s["slot"])) != data.slot]
    skips.append(data.model_dump(mode="json"))
    return patch_trigger(principal, trigger_id, {"schedule": {"skips": skips}}, now=now)


def unskip_slot(principal: Principal, trigger_id: str, slot_text: str, *, now: datetime) -> dict:
    """Undo a skip that has not passed; 200 with the trigger."""
    slot = _parse(slot_text)
    item, stored = _scheduled(principal, trigger_id)
    skips = stored.get("skips") or []
    kept = [s for s in skips if _parse(str(s["slot"])) != slot]
    if len(kept) == len(skips):
        raise NotFound("no skip at that slot")
    if slot <= now:
        raise Conflict("that slot has passed: its skip stands")
    pending = _pending(kept, "slot", item)
    return patch_trigger(principal, trigger_id, {"schedule": {"skips": pending}}, now=now)


def add_extra(principal: Principal, trigger_id: str, body: Any, *, now: datetime) -> dict:
    """One extra run at an instant (with its own payload, if given); 200 with the trigger."""
    data = parse_model(ExtraIn, body)
    item, stored = _scheduled(principal, trigger_id)
    if data.at <= now + timedelta(seconds=1):
        raise ValidationError("must be in the future", field="at")
    if data.at > now + timedelta(seconds=MAX_INTERVAL_S):
        raise ValidationError("must be at most 366 days ahead", field="at")
    extras = [e for e in _pending(stored.get("extras") or [], "at", item)]
    extras = [e for e in extras if _parse(str(e["at"])) != data.at]
    extras.append(data.model_dump(mode="json", exclude_none=True))
    return patch_trigger(principal, trigger_id, {"schedule": {"extras": extras}}, now=now)
