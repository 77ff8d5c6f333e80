"""A trigger's schedule as the domain sees it, and the check that it can run.

Exactly one of three kinds: a cron read on an IANA zone's wall clock, a fixed interval
from an anchor, or one instant. Every instant is aware UTC.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from chalicelib.domain.errors import ValidationError
from chalicelib.domain.schedule.cron import parse_cron
from chalicelib.domain.schedule.zones import zone

__all__ = [
    "MAX_INTERVAL_S",
    "ScheduleSpec",
    "one_kind",
    "require_aware",
    "validate_schedule",
]

MAX_INTERVAL_S = 366 * 86400


@dataclass(frozen=True)
class ScheduleSpec:
    """A trigger's schedule: exactly one of ``cron``, ``interval_s`` or ``at``."""

    cron: str | None = None
    timezone: str = "UTC"
    interval_s: int | None = None
    at: datetime | None = None
    dst_skipped: Literal["shift", "skip"] = "shift"
    dst_repeated: Literal["once", "both"] = "once"
    anchor_at: datetime | None = None

    @property
    def kind(self) -> str:
        """The kind of schedule: "cron", "interval" or "at"."""
        return one_kind(self)


def one_kind(spec: ScheduleSpec) -> str:
    """The kind of `spec` ("cron", "interval" or "at"); a ``ValidationError`` unless exactly one."""
    values = (("cron", spec.cron), ("interval", spec.interval_s), ("at", spec.at))
    given = [kind for kind, value in values if value is not None]
    if len(given) != 1:
        got = " and ".join(given) if given else "none"
        raise ValidationError(
            f"exactly one of cron, interval_s or at is required (got {got})", field="schedule"
        )
    return given[0]


def require_aware(instant: datetime | None, field: str) -> None:
    """A ``ValidationError`` naming `field` if `instant` has no UTC offset."""
    if instant is not None and instant.utcoffset() is None:
        raise ValidationError("must be an aware datetime (with a UTC offset)", field=field)


def validate_schedule(spec: ScheduleSpec, *, min_interval_s: int) -> None:
    """Raise ``ValidationError`` naming the dotted field at fault, or return."""
    one_kind(spec)
    if spec.dst_skipped not in ("shift", "skip"):
        raise ValidationError("must be 'shift' or 'skip'", field="schedule.dst.skipped")
    if spec.dst_repeated not in ("once", "both"):
        raise ValidationError("must be 'once' or 'both'", field="schedule.dst.repeated")
    zone(spec.timezone)
    if spec.cron is not None:
        parse_cron(spec.cron)
    if spec.interval_s is not None:
        minimum = max(min_interval_s, 1)
        if isinstance(spec.interval_s, bool) or not isinstance(spec.interval_s, int):
            raise ValidationError("must be a whole number of seconds", field="schedule.interval_s")
        if spec.interval_s < minimum:
            raise ValidationError(
                f"interval must be at least {minimum} seconds", field="schedule.interval_s"
            )
        if spec.interval_s > MAX_INTERVAL_S:
            raise ValidationError("interval must be at most 366 days", field="schedule.interval_s")
    require_aware(spec.at, "schedule.at")
    require_aware(spec.anchor_at, "schedule.anchor_at")
