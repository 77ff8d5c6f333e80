"""The stored form of a schedule: compact JSON, small enough to project into the due index.

Pydantic-free on purpose: the heartbeat and the runner decode a schedule on every fire
and import this module, not the request models (``spec``), on a cold start.
"""

from __future__ import annotations

import json
from typing import Any

from chalicelib.domain.epoch_ms import ms, opt_dt
from chalicelib.domain.schedule import ScheduleSpec

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
    }
    return {k: v for k, v in data.items() if v is not None}


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
    )
