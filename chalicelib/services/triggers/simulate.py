"""``POST /v1/schedules/simulate``: a trigger's slots over a window, through outages, with
what the engine does with each (``domain/simulate``: the fire path's own functions).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from chalicelib.domain import schedule
from chalicelib.domain.due import sched_json, to_ms
from chalicelib.domain.errors import ValidationError
from chalicelib.domain.exceptions import exception_of
from chalicelib.domain.simulate import USD_PER_MILLION_FIRES, Outage, simulate
from chalicelib.domain.spec import (
    SimulateIn,
    TriggerIn,
    decode_schedule,
    parse_model,
    schedule_spec_from,
)
from chalicelib.services.auth import Principal
from chalicelib.services.lookup import load_owned
from chalicelib.services.runs import iso_ms
from chalicelib.settings import get_settings
from chalicelib.store import payloads

__all__ = ["MAX_SIMULATED_DAYS", "simulate_schedule"]

MAX_SIMULATED_DAYS = 366
_SIMULATED_ID = "trg_simulated"


def _from_body(body: Any, *, start: datetime) -> tuple[schedule.ScheduleSpec, dict, dict, str]:
    """A create body's schedule, policy and settings (each problem names ``trigger.<field>``)."""
    try:
        data = parse_model(TriggerIn, body)
        if data.schedule is None:
            raise ValidationError("a simulation needs a schedule", field="schedule")
        spec = schedule_spec_from(data.schedule, anchor_at=start)
        schedule.validate_schedule(spec, min_interval_s=get_settings().min_interval_s)
    except ValidationError as exc:
        exc.field = f"trigger.{exc.field}" if exc.field else "trigger"
        raise
    policy = json.loads(sched_json(spec, overlap=data.overlap, concurrency=data.concurrency))
    return spec, policy, data.model_dump(mode="json"), _SIMULATED_ID


def _stored(principal: Principal, trigger_id: str) -> tuple[schedule.ScheduleSpec, dict, dict, str]:
    item = load_owned(principal, trigger_id)
    if not item.sched:
        raise ValidationError("an event trigger has no schedule to simulate", field="trigger_id")
    return decode_schedule(item.sched), json.loads(item.sched), payloads.load_spec(item), item.id


def _slot_view(slot: Any, stored: dict) -> dict:
    reason = slot.reason
    if slot.outcome == "skipped" and reason == "skipped":
        found = exception_of(stored, "skips", "slot", to_ms(slot.slot)) or {}
        reason = found.get("reason") or "skipped (a one-off skip)"
    return {
        "slot": iso_ms(to_ms(slot.slot)),
        "outcome": slot.outcome,
        "fire_at": iso_ms(to_ms(slot.fire_at)) if slot.fire_at is not None else None,
        "reason": reason,
    }


def simulate_schedule(principal: Principal, body: Any, *, now: datetime) -> dict:
    """Every slot of the window with its outcome, the run count and the estimated cost."""
    data = parse_model(SimulateIn, body)
    if (data.trigger is None) == (data.trigger_id is None):
        raise ValidationError("give one of trigger (a create body) or trigger_id", field="trigger")
    if data.to <= data.from_:
        raise ValidationError("must be after from", field="to")
    if data.to - data.from_ > timedelta(days=MAX_SIMULATED_DAYS):
        raise ValidationError(f"the window is at most {MAX_SIMULATED_DAYS} days", field="to")
    for n, outage in enumerate(data.outages):
        if outage.to <= outage.from_:
            raise ValidationError("must be after from", field=f"outages.{n}.to")
    if data.trigger is not None:
        spec, policy, stored, trigger_id = _from_body(data.trigger, start=data.from_)
    else:
        spec, policy, stored, trigger_id = _stored(principal, str(data.trigger_id))
    outages = [Outage(o.from_, o.to) for o in data.outages]
    found = simulate(
        spec,
        trigger_id=trigger_id,
        policy=policy,
        start=data.from_,
        end=data.to,
        outages=outages,
        run_s=data.run_s,
    )
    return {
        "slots": [_slot_view(slot, stored) for slot in found.slots],
        "runs": found.runs,
        "estimated_usd": round(found.runs * USD_PER_MILLION_FIRES / 1_000_000, 6),
        "truncated": found.truncated,
    }
