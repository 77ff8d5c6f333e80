"""Schedule previews: the next fires of a schedule not stored, or of a stored trigger."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from chalicelib.domain import schedule
from chalicelib.domain.due import to_ms
from chalicelib.domain.errors import ValidationError
from chalicelib.domain.exceptions import exception_of
from chalicelib.domain.spec import (
    PreviewIn,
    ScheduleIn,
    decode_schedule,
    parse_model,
    schedule_spec_from,
)
from chalicelib.services.auth import Principal
from chalicelib.services.lookup import load_owned
from chalicelib.services.pages import parse_limit
from chalicelib.services.runs import iso_ms
from chalicelib.store import payloads

__all__ = ["preview_schedule", "preview_trigger", "preview_view"]


def _preview_spec(data: PreviewIn, *, anchor: datetime) -> schedule.ScheduleSpec:
    sched_in = ScheduleIn(
        cron=data.cron,
        timezone=data.timezone,
        interval_s=data.interval_s,
        at=data.at,
        dst=data.dst,
        business_day=data.business_day,
        time=data.time,
        calendar=data.calendar,
        jitter_s=data.jitter_s,
    )
    return schedule_spec_from(sched_in, anchor_at=anchor)


def _top_level(exc: ValidationError) -> None:
    """The schedule rules name a trigger's fields (``schedule.cron``); a preview body has
    the same fields at its top level."""
    if exc.field and exc.field.startswith("schedule."):
        exc.field = exc.field[len("schedule.") :]
        exc.message = exc.message.replace("schedule.", "")
    elif exc.field == "schedule":
        exc.field = None


def preview_schedule(body: Any, *, now: datetime) -> dict:
    """The next fires of a schedule that is not stored."""
    data = parse_model(PreviewIn, body)
    start = data.from_ or now
    try:
        spec = _preview_spec(data, anchor=start)
        schedule.validate_schedule(spec, min_interval_s=1)
    except ValidationError as exc:
        _top_level(exc)
        raise
    found = schedule.preview_steps(spec, start=start, count=data.count)
    return {**preview_view(*found), "cadence": schedule.describe(spec)}


def preview_trigger(principal: Principal, trigger_id: str, params: dict, *, now: datetime) -> dict:
    """The next fires of a stored trigger."""
    item = load_owned(principal, trigger_id)
    count = parse_limit(params.get("count"), default=10, maximum=100, name="count")
    if not item.sched:
        return {"fires": [], "dst": [], "calendar": []}
    if item.status != "active":
        # A paused or disabled trigger fires nothing: listing its slots would say it will.
        return {
            "fires": [],
            "dst": [],
            "calendar": [],
            "status": item.status,
            "reason": item.disabled_reason,
        }
    spec = decode_schedule(item.sched)
    view = preview_view(*schedule.preview_steps(spec, start=now, count=count))
    stored = payloads.load_spec(item)
    for entry in view["calendar"]:
        if entry["change"] == "skipped":
            skip = exception_of(stored, "skips", "slot", to_ms(_instant(entry["at"]))) or {}
            entry["name"] = skip.get("reason") or None
    return view


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def preview_view(
    fires: list[datetime],
    marks: list[schedule.DstMark],
    calendar: list[schedule.CalendarMark] | None = None,
) -> dict:
    """The fires, and next to them the fires (or missing fires) a DST transition decided
    and the slots a calendar removed or moved."""
    return {
        "fires": [iso_ms(to_ms(fire)) for fire in fires],
        "dst": [
            {"at": iso_ms(to_ms(mark.at)), "change": mark.change, "policy": mark.policy}
            for mark in marks
        ],
        "calendar": [calendar_entry(mark) for mark in calendar or []],
    }


def calendar_entry(mark: schedule.CalendarMark) -> dict:
    """One ``calendar`` entry of a preview: ``{at, change, name, moved_to?}``."""
    entry: dict[str, Any] = {
        "at": iso_ms(to_ms(mark.at)),
        "change": mark.change,
        "name": mark.name,
    }
    if mark.moved_to is not None:
        entry["moved_to"] = iso_ms(to_ms(mark.moved_to))
    return entry
