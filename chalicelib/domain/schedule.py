"""When a trigger fires: cron, fixed interval, or one instant.

This module alone imports the cron libraries (``croniter`` for matching wall times,
``cron_descriptor`` for words). Every instant in and out is aware UTC and the time is
always an argument, never read here. A cron is evaluated on the wall clock of its IANA
timezone with the DST policy of the reference cron (cronie / Debian), which croniter
alone gets wrong; see ``next_fire_after``.
"""

from __future__ import annotations

import functools
import zoneinfo
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from cron_descriptor import ExpressionDescriptor, Options
from croniter import CroniterBadDateError, croniter

from chalicelib.domain.errors import ValidationError

__all__ = [
    "ScheduleSpec",
    "validate_schedule",
    "next_fire_after",
    "preview",
    "fires_between",
    "describe",
    "clamp_next_fire",
]

MAX_PREVIEW = 100

# Debian cron's aliases; @reboot has no meaning for a hosted trigger.
_ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_FIVE_FIELDS = "5 fields (minute hour day-of-month month day-of-week)"
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")

# In tzdb no zone changes its UTC offset twice within a day, so comparing the offsets a
# day apart finds any set-back between them (the largest since 1970 was 7 hours).
_ONE_DAY = timedelta(days=1)
# A cron whose every match is skipped (dst_skipped="skip") would otherwise search forever.
_HORIZON = timedelta(days=366 * 30)


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
        return _one_kind(self)


def _one_kind(spec: ScheduleSpec) -> str:
    values = (("cron", spec.cron), ("interval", spec.interval_s), ("at", spec.at))
    given = [kind for kind, value in values if value is not None]
    if len(given) != 1:
        got = " and ".join(given) if given else "none"
        raise ValidationError(
            f"exactly one of cron, interval_s or at is required (got {got})", field="schedule"
        )
    return given[0]


# --- cron syntax ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Field:
    name: str
    low: int
    high: int
    names: tuple[str, ...] = ()
    first_named: int = 0  # the value of names[0]

    def value(self, token: str, item: str) -> int:
        if token.isdigit():
            number = int(token)
        elif token.lower() in self.names:
            number = self.names.index(token.lower()) + self.first_named
        else:
            raise _bad_cron(f"'{token or item}' is not a valid {self.name}")
        if not self.low <= number <= self.high:
            raise _bad_cron(f"'{token}' is not a valid {self.name} ({self.low}-{self.high})")
        return number

    def check(self, text: str) -> None:
        for item in text.split(","):
            if not item:
                raise _bad_cron(f"'{text}' is not a valid {self.name}")
            base, slash, step = item.partition("/")
            if slash and (not step.isdigit() or int(step) == 0):
                raise _bad_cron(
                    f"'{item}' is not a valid {self.name}: the step must be a positive number"
                )
            if base == "*":
                continue
            start, dash, end = base.partition("-")
            first = self.value(start, item)
            if dash and self.value(end, item) < first:
                raise _bad_cron(f"'{item}' is not a valid {self.name}: the range runs backwards")


_FIELDS = (
    _Field("minute", 0, 59),
    _Field("hour", 0, 23),
    _Field("day-of-month", 1, 31),
    _Field("month", 1, 12, _MONTHS, first_named=1),
    _Field("day-of-week", 0, 7, _WEEKDAYS),  # 0 and 7 are both Sunday
)


@dataclass(frozen=True)
class _Cron:
    expression: str  # five fields, alias expanded
    fixed_time: bool


def _bad_cron(message: str) -> ValidationError:
    return ValidationError(message, field="schedule.cron")


@functools.lru_cache(maxsize=1024)
def _parse_cron(text: str) -> _Cron:
    """Check a cron and classify it; cached because the heartbeat evaluates it on every fire."""
    expression = text.strip()
    if expression.startswith("@"):
        if expression.lower() not in _ALIASES:
            raise _bad_cron(
                f"'{expression}' is not supported: use {_FIVE_FIELDS} "
                "or @hourly, @daily, @weekly, @monthly, @yearly"
            )
        expression = _ALIASES[expression.lower()]
    fields = expression.split()
    if len(fields) in (6, 7):
        raise _bad_cron(f"seconds and years are not supported: a cron has {_FIVE_FIELDS}")
    if len(fields) != 5:
        raise _bad_cron(f"a cron has {_FIVE_FIELDS}, got {len(fields)}")
    for field, field_text in zip(_FIELDS, fields, strict=True):
        field.check(field_text)
    expression = " ".join(fields)
    try:
        croniter(expression, datetime(2000, 1, 1)).get_next(datetime)
    except CroniterBadDateError:
        raise _bad_cron(f"'{text}' never fires (no such date)") from None
    # In Debian cron a job is "wildcard" when its minute or hour field starts with "*";
    # only the others ("fixed-time") are moved or deduplicated around DST changes.
    fixed_time = not fields[0].startswith("*") and not fields[1].startswith("*")
    return _Cron(expression, fixed_time)


@functools.cache
def _known_timezones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def _zone(name: str) -> zoneinfo.ZoneInfo:
    if name not in _known_timezones():
        raise ValidationError(
            f"'{name}' is not a known IANA timezone (e.g. 'Europe/Berlin')",
            field="schedule.timezone",
        )
    return zoneinfo.ZoneInfo(name)


def _require_aware(instant: datetime | None, field: str) -> None:
    if instant is not None and instant.utcoffset() is None:
        raise ValidationError("must be an aware datetime (with a UTC offset)", field=field)


def validate_schedule(spec: ScheduleSpec, *, min_interval_s: int) -> None:
    """Raise ``ValidationError`` naming the dotted field at fault, or return."""
    _one_kind(spec)
    if spec.dst_skipped not in ("shift", "skip"):
        raise ValidationError("must be 'shift' or 'skip'", field="schedule.dst.skipped")
    if spec.dst_repeated not in ("once", "both"):
        raise ValidationError("must be 'once' or 'both'", field="schedule.dst.repeated")
    _zone(spec.timezone)
    if spec.cron is not None:
        _parse_cron(spec.cron)
    if spec.interval_s is not None:
        minimum = max(min_interval_s, 1)
        if isinstance(spec.interval_s, bool) or not isinstance(spec.interval_s, int):
            raise ValidationError("must be a whole number of seconds", field="schedule.interval_s")
        if spec.interval_s < minimum:
            raise ValidationError(
                f"interval must be at least {minimum} seconds", field="schedule.interval_s"
            )
    _require_aware(spec.at, "schedule.at")
    _require_aware(spec.anchor_at, "schedule.anchor_at")


# --- evaluation -------------------------------------------------------------------------


def _wall(instant: datetime, tz: zoneinfo.ZoneInfo) -> datetime:
    return instant.astimezone(tz).replace(tzinfo=None)


def _offset(instant: datetime, tz: zoneinfo.ZoneInfo) -> timedelta:
    offset = instant.astimezone(tz).utcoffset()
    assert offset is not None
    return offset


def _setback_soon_after(instant: datetime, tz: zoneinfo.ZoneInfo) -> timedelta:
    """A set-back of the clock coming sooner after `instant` than its own size, else zero."""
    within_a_day = max(timedelta(0), _offset(instant, tz) - _offset(instant + _ONE_DAY, tz))
    return max(timedelta(0), _offset(instant, tz) - _offset(instant + within_a_day, tz))


def _setback_shortly_before(instant: datetime, tz: zoneinfo.ZoneInfo) -> timedelta:
    """A set-back of the clock coming sooner before `instant` than its own size, else zero."""
    within_a_day = max(timedelta(0), _offset(instant - _ONE_DAY, tz) - _offset(instant, tz))
    return max(timedelta(0), _offset(instant - within_a_day, tz) - _offset(instant, tz))


def _jump_instant(before: datetime, after: datetime, tz: zoneinfo.ZoneInfo) -> datetime:
    """The instant the clock jumped forward, bisected between an instant before and after it."""
    new_offset = after.astimezone(tz).utcoffset()
    while after - before > timedelta(microseconds=1):
        middle = before + (after - before) // 2
        if middle.astimezone(tz).utcoffset() == new_offset:
            after = middle
        else:
            before = middle
    return after


def _instants_at(
    wall: datetime, tz: zoneinfo.ZoneInfo, cron: _Cron, spec: ScheduleSpec
) -> list[datetime]:
    """The UTC instants at which a matching wall time fires under the DST policy."""
    # zoneinfo (PEP 495): fold=0 reads a wall time with the offset in force before a
    # transition, fold=1 with the one after; they differ only around a transition.
    first = wall.replace(tzinfo=tz, fold=0).astimezone(UTC)
    second = wall.replace(tzinfo=tz, fold=1).astimezone(UTC)
    if first == second:
        return [first]
    if _wall(first, tz) == wall:
        # The wall time happens twice: the clock was set back over it. In Debian cron a
        # fixed-time job does not run again ("it has probably already run"); a wildcard job
        # follows the wall clock and matches both times.
        if cron.fixed_time and spec.dst_repeated == "once":
            return [first]
        return [first, second]
    # The wall time never happens: the clock jumped forward over it. In Debian cron a
    # fixed-time job whose time was skipped runs right after the jump (once, however many
    # of its times were skipped); a wildcard job just waits for its next wall-clock match.
    if cron.fixed_time and spec.dst_skipped == "shift":
        return [_jump_instant(second, first, tz)]
    return []


def _next_cron_fire(spec: ScheduleSpec, cron_text: str, after: datetime) -> datetime | None:
    """The first cron fire after `after`, walking matching wall times with croniter.

    1. Start at the wall time of `after`, moved back by a set-back coming soon after it:
       the clock then shows earlier wall times again, as later instants.
    2. Map each matching wall time to its instants under the DST policy (``_instants_at``).
    3. Keep the earliest instant after `after`. A later wall time can still be an earlier
       instant when the clock is set back shortly before that instant, so go on until the
       wall time passes the earliest's wall time plus that set-back (usually at once).
    """
    cron = _parse_cron(cron_text)
    tz = _zone(spec.timezone)
    start = _wall(after, tz) - _setback_soon_after(after, tz)
    walls = croniter(cron.expression, start)
    earliest: datetime | None = None
    stop_after = start + _HORIZON
    while True:
        try:
            wall: datetime = walls.get_next(datetime)
        except CroniterBadDateError:
            return earliest
        if wall > stop_after:
            return earliest
        for instant in _instants_at(wall, tz, cron, spec):
            if instant > after and (earliest is None or instant < earliest):
                earliest = instant
                stop_after = _wall(earliest, tz) + _setback_shortly_before(earliest, tz)
        if wall >= stop_after:
            return earliest


def _next_interval_fire(spec: ScheduleSpec, interval_s: int, after: datetime) -> datetime:
    # The slots are anchor + k*interval for k >= 1 (the anchor is the creation, not a
    # fire). Only the first slot after `after` counts: slots missed while down are skipped.
    anchor = spec.anchor_at if spec.anchor_at is not None else after
    interval = timedelta(seconds=interval_s)
    slots_passed = max(0, (after - anchor) // interval)
    return (anchor + (slots_passed + 1) * interval).astimezone(UTC)


def next_fire_after(spec: ScheduleSpec, after: datetime) -> datetime | None:
    """The first fire instant strictly after `after` (aware UTC), or None if there is none."""
    if after.utcoffset() is None:
        raise ValueError("after must be an aware datetime")
    _one_kind(spec)
    if spec.cron is not None:
        return _next_cron_fire(spec, spec.cron, after)
    if spec.interval_s is not None:
        return _next_interval_fire(spec, spec.interval_s, after)
    assert spec.at is not None
    return spec.at.astimezone(UTC) if spec.at > after else None


def preview(spec: ScheduleSpec, *, start: datetime, count: int) -> list[datetime]:
    """The next `count` fires strictly after `start` (fewer if the schedule ends)."""
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_PREVIEW:
        raise ValidationError(f"count must be between 1 and {MAX_PREVIEW}", field="count")
    fires: list[datetime] = []
    after: datetime | None = start
    while len(fires) < count and after is not None:
        after = next_fire_after(spec, after)
        if after is not None:
            fires.append(after)
    return fires


def fires_between(
    spec: ScheduleSpec, start: datetime, end: datetime, *, limit: int
) -> list[datetime]:
    """The fires at or after `start` and before `end` (aware UTC), in order, at most `limit`.

    The window is half-open, so consecutive windows never share a slot. A caller that must
    refuse a window with more than N slots asks for ``limit=N + 1`` and counts.
    """
    if start.utcoffset() is None or end.utcoffset() is None:
        raise ValueError("start and end must be aware datetimes")
    fires: list[datetime] = []
    after: datetime | None = start - timedelta(microseconds=1)
    while len(fires) < limit and after is not None:
        after = next_fire_after(spec, after)
        if after is None or after >= end:
            break
        fires.append(after)
    return fires


def _describe_interval(interval_s: int) -> str:
    for unit_s, unit in ((86400, "day"), (3600, "hour"), (60, "minute"), (1, "second")):
        if interval_s % unit_s == 0:
            units = interval_s // unit_s
            return f"Every {unit}" if units == 1 else f"Every {units} {unit}s"
    raise AssertionError("unreachable: every whole number of seconds divides by 1")


def describe(spec: ScheduleSpec) -> str:
    """The cadence in words, e.g. "Every 15 minutes" or "At 08:00 on Monday (Europe/Berlin)"."""
    _one_kind(spec)
    if spec.interval_s is not None:
        return _describe_interval(spec.interval_s)
    if spec.at is not None:
        at = spec.at.astimezone(_zone(spec.timezone))
        shown = at.strftime("%Y-%m-%d %H:%M:%S" if at.second else "%Y-%m-%d %H:%M")
        return f"Once at {shown}" + (_zone_suffix(spec.timezone) or " UTC")
    assert spec.cron is not None
    options = Options()
    options.use_24hour_time_format = True
    text = ExpressionDescriptor(_parse_cron(spec.cron).expression, options).get_description()
    # cron_descriptor says "At 08:00, only on Monday"; we say "At 08:00 on Monday".
    return text.replace(", only on ", " on ") + _zone_suffix(spec.timezone)


def _zone_suffix(timezone: str) -> str:
    return "" if timezone == "UTC" else f" ({timezone})"


def clamp_next_fire(
    requested: datetime, *, now: datetime, min_ahead_s: float = 1.0
) -> tuple[datetime, bool]:
    """Clamp a workflow-returned next_fire_at to at least now + min_ahead_s; (instant, clamped)."""
    _require_aware(requested, "next_fire_at")
    earliest = now + timedelta(seconds=min_ahead_s)
    if requested < earliest:
        return earliest.astimezone(UTC), True
    return requested.astimezone(UTC), False
