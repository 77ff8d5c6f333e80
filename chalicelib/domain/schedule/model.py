"""A trigger's schedule as the domain sees it, and the check that it can run.

Exactly one of four kinds: a cron (or several, ``also``) read on an IANA zone's wall
clock, the Nth business day of each month at a wall time, a fixed interval from an
anchor, or one instant. A calendar may leave dates out of a cron or move them. Every
instant is aware UTC.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from chalicelib.domain.errors import ValidationError
from chalicelib.domain.schedule.calendars import Calendar, check_holiday_code
from chalicelib.domain.schedule.cron import parse_cron
from chalicelib.domain.schedule.zones import zone

__all__ = [
    "MAX_INTERVAL_S",
    "MAX_CRONS",
    "MAX_JITTER_S",
    "MAX_EXCEPTIONS",
    "ScheduleSpec",
    "one_kind",
    "parse_time",
    "require_aware",
    "validate_schedule",
]

MAX_INTERVAL_S = 366 * 86400
# A list of crons is a union: at most this many cadences in one trigger.
MAX_CRONS = 10
MAX_JITTER_S = 3600
# One-off exceptions kept on a trigger (passed ones are pruned as new ones come).
MAX_EXCEPTIONS = 50


@dataclass(frozen=True)
class ScheduleSpec:
    """A trigger's schedule: exactly one of ``cron``, ``business_day``, ``interval_s`` or ``at``.

    ``also`` holds the crons after the first of a list (the union fires once per instant);
    ``time`` ("HH:MM") goes with ``business_day``; ``calendar`` with either.
    """

    cron: str | None = None
    timezone: str = "UTC"
    interval_s: int | None = None
    at: datetime | None = None
    dst_skipped: Literal["shift", "skip"] = "shift"
    dst_repeated: Literal["once", "both"] = "once"
    anchor_at: datetime | None = None
    also: tuple[str, ...] = ()
    calendar: Calendar | None = None
    business_day: int | None = None
    time: str | None = None
    jitter_s: int = 0
    catchup_mode: Literal["latest", "all", "none"] = "latest"
    catchup_window_s: int = 86400
    # One-off exceptions: slots recorded ``skipped`` instead of run, and extra instants.
    skips: frozenset[datetime] = frozenset()
    extras: tuple[datetime, ...] = ()

    @property
    def crons(self) -> tuple[str, ...]:
        """Every cron of the schedule, the first one first (empty for another kind)."""
        return (self.cron, *self.also) if self.cron is not None else ()

    @property
    def kind(self) -> str:
        """The kind of schedule: "cron", "interval" or "at"."""
        return one_kind(self)


def one_kind(spec: ScheduleSpec) -> str:
    """The kind of `spec` ("cron", "business_day", "interval" or "at"); a ``ValidationError``
    unless exactly one."""
    values = (
        ("cron", spec.cron),
        ("business_day", spec.business_day),
        ("interval", spec.interval_s),
        ("at", spec.at),
    )
    given = [kind for kind, value in values if value is not None]
    if len(given) != 1:
        got = " and ".join(given) if given else "none"
        raise ValidationError(
            f"exactly one of cron, business_day, interval_s or at is required (got {got})",
            field="schedule",
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
    for index, cron in enumerate(spec.crons):
        try:
            parse_cron(cron)
        except ValidationError as exc:
            if not spec.also:
                raise
            # A list of crons: the error names the one at fault (``schedule.cron.1``).
            raise ValidationError(exc.message, field=f"schedule.cron.{index}") from None
    if len(spec.crons) > MAX_CRONS:
        raise ValidationError(f"at most {MAX_CRONS} crons", field="schedule.cron")
    _validate_calendar_fields(spec)
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


def _validate_calendar_fields(spec: ScheduleSpec) -> None:
    """The business day, its time, the calendar (only with a cron) and the jitter."""
    if spec.business_day is not None:
        if not 1 <= abs(spec.business_day) <= 23:
            raise ValidationError(
                "must be 1 to 23 (the Nth business day) or -1 to -23 (from the month's end)",
                field="schedule.business_day",
            )
        if spec.time is None:
            raise ValidationError(
                "is required with business_day (e.g. '09:00')", field="schedule.time"
            )
    elif spec.time is not None:
        raise ValidationError("goes with business_day only", field="schedule.time")
    if spec.time is not None:
        parse_time(spec.time)
    if spec.calendar is not None:
        for code in spec.calendar.holidays:
            check_holiday_code(code, field="schedule.calendar.holidays")
    if spec.calendar is not None and spec.cron is None and spec.business_day is None:
        raise ValidationError(
            "a calendar goes with cron or business_day (an interval or an instant has no "
            "dates to leave out)",
            field="schedule.calendar",
        )
    if spec.catchup_mode not in ("latest", "all", "none"):
        raise ValidationError("must be latest, all or none", field="schedule.catchup.mode")
    if not 60 <= spec.catchup_window_s <= MAX_INTERVAL_S:
        raise ValidationError("must be 60 s to 366 days", field="schedule.catchup.window_s")
    if len(spec.skips) > MAX_EXCEPTIONS or len(spec.extras) > MAX_EXCEPTIONS:
        raise ValidationError(
            f"at most {MAX_EXCEPTIONS} skips and {MAX_EXCEPTIONS} extras", field="schedule"
        )
    if not 0 <= spec.jitter_s <= MAX_JITTER_S:
        raise ValidationError(f"must be 0 to {MAX_JITTER_S}", field="schedule.jitter_s")


def parse_time(text: str) -> tuple[int, int]:
    """``"HH:MM"`` as (hour, minute); a ``ValidationError`` naming ``schedule.time``."""
    hour, sep, minute = text.partition(":")
    if (
        sep != ":"
        or len(hour) != 2
        or len(minute) != 2
        or not (hour + minute).isascii()
        or not (hour + minute).isdigit()
        or int(hour) > 23
        or int(minute) > 59
    ):
        raise ValidationError("must be a wall time 'HH:MM' (00:00-23:59)", field="schedule.time")
    return int(hour), int(minute)
