"""The stored form of a schedule: compact JSON, small enough to project into the due index.

Pydantic-free on purpose: the heartbeat and the runner decode a schedule on every fire
and import this module, not the request models (``spec``), on a cold start.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from chalicelib.domain.schedule import ScheduleSpec

__all__ = ["encode_schedule", "decode_schedule"]


def _ms(at: datetime | None) -> int | None:
    return None if at is None else int(round(at.timestamp() * 1000))


def _from_ms(ms: Any) -> datetime | None:
    if ms is None:
        return None
    return datetime.fromtimestamp(float(ms) / 1000, tz=UTC)


def encode_schedule(spec: ScheduleSpec) -> str:
    """A compact JSON encoding, small enough to project into the due index."""
    data = {
        "c": spec.cron,
        "tz": spec.timezone if spec.timezone != "UTC" else None,
        "i": spec.interval_s,
        "a": _ms(spec.at),
        "ds": spec.dst_skipped if spec.dst_skipped != "shift" else None,
        "dr": spec.dst_repeated if spec.dst_repeated != "once" else None,
        "an": _ms(spec.anchor_at),
    }
    return json.dumps({k: v for k, v in data.items() if v is not None}, separators=(",", ":"))


def decode_schedule(text: str) -> ScheduleSpec:
    """The inverse of ``encode_schedule``."""
    data = json.loads(text)
    return ScheduleSpec(
        cron=data.get("c"),
        timezone=data.get("tz") or "UTC",
        interval_s=data.get("i"),
        at=_from_ms(data.get("a")),
        dst_skipped=data.get("ds") or "shift",
        dst_repeated=data.get("dr") or "once",
        anchor_at=_from_ms(data.get("an")),
    )
