"""The stored form of a schedule: compact JSON, small enough to project into the due index.

Pydantic-free on purpose: the heartbeat and the runner decode a schedule on every fire
and import this module, not the request models (``spec``), on a cold start.
"""

from __future__ import annotations

import json
from datetime import date
from typing import Any

from chalicelib.domain.epoch_ms import dt, ms, opt_dt
from chalicelib.domain.schedule import Calendar, ScheduleSpec

__all__ = ["schedule_fields", "encode_schedule", "decode_schedule"]


def schedule_fields(spec: ScheduleSpec) -> dict[str, Any]:
    """The fields of ``encode_schedule``'s JSON (defaults and unset fields left out)."""
    data = {
        "c": spec.cron,
        "tz": spec.timezone if spec.timezone != "UTC" else None,
        "i": spec.interval_s,
        "a": ms(spec.at) if spec.at is not None else None,
        "ds": spec.dst_skipped if spec.dst_skipped != "shift" else None,
        "dr": spec.dst_repeated if spec.dst_repeated != "once" else None,
        "an": ms(spec.anchor_at) if spec.anchor_at is not None else None,
        "al": list(spec.also) or None,
        "cal": _calendar_fields(spec.calendar) if spec.calendar is not None else None,
        "bd": spec.business_day,
        "t": spec.time,
        "j": spec.jitter_s or None,
        "cu": spec.catchup_mode[0] if spec.catchup_mode != "latest" else None,
        "cw": spec.catchup_window_s if spec.catchup_window_s != 86400 else None,
        "sk": sorted(ms(at) for at in spec.skips) or None,
        "xa": sorted(ms(at) for at in spec.extras) or None,
    }
    return {k: v for k, v in data.items() if v is not None}


_MOVES = {"next_business_day": "n", "previous_business_day": "p"}


def _calendar_fields(cal: Calendar) -> dict[str, Any]:
    data = {
        "h": list(cal.holidays) or None,
        "x": sorted(day.isoformat() for day in cal.exclude_dates) or None,
        "b": "".join(str(d) for d in sorted(cal.business_days))
        if cal.business_days != Calendar().business_days
        else None,
        "o": _MOVES.get(cal.on_holiday),
    }
    return {k: v for k, v in data.items() if v is not None}


def _calendar_of(data: dict[str, Any] | None) -> Calendar | None:
    if data is None:
        return None
    moves = {short: name for name, short in _MOVES.items()}
    return Calendar(
        holidays=tuple(data.get("h") or ()),
        exclude_dates=frozenset(date.fromisoformat(d) for d in data.get("x") or ()),
        business_days=frozenset(int(d) for d in data["b"])
        if data.get("b")
        else Calendar().business_days,
        on_holiday=moves.get(data.get("o") or "", "skip"),  # type: ignore[arg-type]
    )


def encode_schedule(spec: ScheduleSpec) -> str:
    """A compact JSON encoding, small enough to project into the due index."""
    return json.dumps(schedule_fields(spec), separators=(",", ":"))


def decode_schedule(text: str) -> ScheduleSpec:
    """The inverse of ``encode_schedule``."""
    data = json.loads(text)
    return ScheduleSpec(
        cron=data.get("c"),
        timezone=data.get("tz") or "UTC",
        interval_s=data.get("i"),
        at=opt_dt(data.get("a")),
        dst_skipped=data.get("ds") or "shift",
        dst_repeated=data.get("dr") or "once",
        anchor_at=opt_dt(data.get("an")),
        also=tuple(data.get("al") or ()),
        calendar=_calendar_of(data.get("cal")),
        business_day=data.get("bd"),
        time=data.get("t"),
        jitter_s=int(data.get("j") or 0),
        catchup_mode={"a": "all", "n": "none"}.get(data.get("cu") or "", "latest"),  # type: ignore[arg-type]
        catchup_window_s=int(data.get("cw") or 86400),
        skips=frozenset(dt(at) for at in data.get("sk") or ()),
        extras=tuple(dt(at) for at in data.get("xa") or ()),
    )
