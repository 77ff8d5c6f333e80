"""When a trigger fires: cron, fixed interval, or one instant.

This module alone knows cron. It matches wall times itself (``_next_wall``: the Vixie
day rule and cronsim's extensions, which croniter lacks) and imports only
``cron_descriptor``, for words. Every instant in and out is aware UTC and the time is
always an argument, never read here. A cron is evaluated on the wall clock of its IANA
timezone with the DST policy of the reference cron (cronie / Debian); see
``_next_cron_fire``.
"""

from __future__ import annotations

import calendar
import functools
import re
import zoneinfo
from bisect import bisect_left
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from cron_descriptor import ExpressionDescriptor, Options

from chalicelib.domain.errors import ValidationError

__all__ = [
    "ScheduleSpec",
    "DstMark",
    "PastedSchedule",
    "canonical_timezone",
    "is_pasted_expression",
    "translate_pasted",
    "validate_schedule",
    "next_fire_after",
    "preview",
    "preview_marked",
    "fires_between",
    "describe",
    "clamp_next_fire",
]

MAX_PREVIEW = 100
MAX_INTERVAL_S = 366 * 86400

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
# A cron whose every match is skipped ("30 2 * 3 0L" in Berlin with dst_skipped="skip")
# would otherwise search forever. The rarest day a cron can name, Feb 29 on a given
# weekday, comes at most 40 years apart (28, or 40 across 2100); a century is ample.
_HORIZON = timedelta(days=36_525)
_MINUTE = timedelta(minutes=1)


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
#
# The five fields follow Debian cron, with the extensions cronsim (the evaluator behind
# healthchecks.io) and Quartz accept: "L" (last day), "LW" (last weekday) and "15W" (the
# weekday nearest the 15th) in the day of month; "5L" (the last Friday) and "1#2" (the
# second Monday) in the day of week; and "?" (no specific value) in either day field.


def _is_number(text: str) -> bool:
    # str.isdigit() is also true for "²" and other digits int() refuses.
    return text.isascii() and text.isdigit()


@dataclass(frozen=True)
class _Field:
    name: str
    low: int
    high: int
    names: tuple[str, ...] = ()
    first_named: int = 0  # the value of names[0]

    def value(self, token: str, item: str) -> int:
        if _is_number(token):
            number = int(token)
        elif token.lower() in self.names:
            number = self.names.index(token.lower()) + self.first_named
        else:
            raise _bad_cron(f"'{token or item}' is not a valid {self.name}")
        if not self.low <= number <= self.high:
            raise _bad_cron(f"'{token}' is not a valid {self.name} ({self.low}-{self.high})")
        return number

    def values(self, item: str) -> set[int]:
        """The numbers one comma-separated item stands for: ``*``, ``a``, ``a-b``, each ``/step``."""
        base, slash, step = item.partition("/")
        if slash and (not _is_number(step) or int(step) == 0):
            raise _bad_cron(
                f"'{item}' is not a valid {self.name}: the step must be a positive number"
            )
        if base == "*":
            first, last = self.low, self.high
        else:
            start, dash, end = base.partition("-")
            first = self.value(start, item)
            # In Debian cron "a/step" runs from a to the end of the field's range.
            last = self.value(end, item) if dash else (self.high if slash else first)
            if last < first:
                raise _bad_cron(f"'{item}' is not a valid {self.name}: the range runs backwards")
        return set(range(first, last + 1, int(step) if slash else 1))

    def items(self, text: str) -> list[str]:
        items = text.split(",")
        if not all(items):
            raise _bad_cron(f"'{text}' is not a valid {self.name}")
        return items


_MINUTE_FIELD = _Field("minute", 0, 59)
_HOUR_FIELD = _Field("hour", 0, 23)
_DOM_FIELD = _Field("day-of-month", 1, 31)
_MONTH_FIELD = _Field("month", 1, 12, _MONTHS, first_named=1)
_DOW_FIELD = _Field("day-of-week", 0, 7, _WEEKDAYS)  # 0 and 7 are both Sunday


# eq=False: hashed by identity, cheaply, as the key of the per-month day cache.
@dataclass(frozen=True, eq=False)
class _Cron:
    """A parsed cron: the wall times it matches, and how DST treats it."""

    expression: str  # five fields, alias expanded
    fixed_time: bool
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    months: frozenset[int]
    days: frozenset[int]  # plain days of the month
    last_day: bool  # L
    last_weekday: bool  # LW
    nearest_weekday: frozenset[int]  # NW
    weekdays: frozenset[int]  # 0 = Sunday .. 6 = Saturday
    last_of_weekday: frozenset[int]  # NL
    nth_weekday: frozenset[tuple[int, int]]  # N#K as (N, K)
    day_and: bool


def _bad_cron(message: str) -> ValidationError:
    return ValidationError(message, field="schedule.cron")


def _parse_dom(text: str) -> tuple[set[int], bool, bool, set[int]]:
    days: set[int] = set()
    last_day = last_weekday = False
    nearest: set[int] = set()
    for item in _DOM_FIELD.items(text):
        upper = item.upper()
        if upper == "L":
            last_day = True
        elif upper == "LW":
            last_weekday = True
        elif upper.endswith("W") and _is_number(upper[:-1]):
            nearest.add(_DOM_FIELD.value(upper[:-1], item))
        elif "L" in upper or "W" in upper:  # "L/2", "1-LW": L and W take no range or step
            raise _bad_cron(f"'{item}' is not a valid day-of-month")
        else:
            days |= _DOM_FIELD.values(item)
    return days, last_day, last_weekday, nearest


def _parse_dow(text: str) -> tuple[set[int], set[int], set[tuple[int, int]]]:
    weekdays: set[int] = set()
    last_of: set[int] = set()
    nth: set[tuple[int, int]] = set()
    for item in _DOW_FIELD.items(text):
        base, hash_, which = item.partition("#")
        if hash_:
            if not _is_number(which) or not 1 <= int(which) <= 5:
                raise _bad_cron(f"'{item}' is not a valid day-of-week: '#' takes 1-5")
            nth.add((_DOW_FIELD.value(base, item) % 7, int(which)))
        elif len(item) > 1 and item.upper().endswith("L"):
            last_of.add(_DOW_FIELD.value(item[:-1], item) % 7)
        else:
            weekdays |= {day % 7 for day in _DOW_FIELD.values(item)}
    return weekdays, last_of, nth


def _expand_alias(expression: str) -> str:
    if not expression.startswith("@"):
        return expression
    if expression.lower() not in _ALIASES:
        raise _bad_cron(
            f"'{expression}' is not supported: use {_FIVE_FIELDS} "
            "or @hourly, @daily, @weekly, @monthly, @yearly"
        )
    return _ALIASES[expression.lower()]


@functools.lru_cache(maxsize=1024)
def _parse_cron(text: str) -> _Cron:
    """Check a cron and classify it; cached because the heartbeat evaluates it on every fire."""
    fields = _expand_alias(text.strip()).split()
    if len(fields) in (6, 7):
        raise _bad_cron(
            f"seconds and years are not supported: a cron has {_FIVE_FIELDS} "
            "(an EventBridge expression is pasted whole, as cron(...))"
        )
    if len(fields) != 5:
        raise _bad_cron(f"a cron has {_FIVE_FIELDS}, got {len(fields)}")
    minute, hour, dom, month, dow = fields
    for name, value in (("minute", minute), ("hour", hour), ("month", month)):
        if "?" in value:
            raise _bad_cron(f"'{value}' is not a valid {name}: '?' is only for the day fields")
    # "?" (Quartz, EventBridge) says "no specific value": in either day field it is "*".
    dom = "*" if dom == "?" else dom
    dow = "*" if dow == "?" else dow
    days, last_day, last_weekday, nearest = _parse_dom(dom)
    weekdays, last_of, nth = _parse_dow(dow)
    cron = _Cron(
        expression=" ".join(fields),
        # In Debian cron a job is "wildcard" when its minute or hour field starts with "*";
        # only the others ("fixed-time") are moved or deduplicated around DST changes.
        fixed_time=not minute.startswith("*") and not hour.startswith("*"),
        minutes=tuple(sorted(set().union(*map(_MINUTE_FIELD.values, _MINUTE_FIELD.items(minute))))),
        hours=tuple(sorted(set().union(*map(_HOUR_FIELD.values, _HOUR_FIELD.items(hour))))),
        months=frozenset(set().union(*map(_MONTH_FIELD.values, _MONTH_FIELD.items(month)))),
        days=frozenset(days),
        last_day=last_day,
        last_weekday=last_weekday,
        nearest_weekday=frozenset(nearest),
        weekdays=frozenset(weekdays),
        last_of_weekday=frozenset(last_of),
        nth_weekday=frozenset(nth),
        # Vixie cron (and so Debian's and cronie's): when either day field starts with "*"
        # a day must match both; when both are restricted, matching either is enough.
        day_and=dom.startswith("*") or dow.startswith("*"),
    )
    # The Gregorian calendar repeats every 400 years (146,097 days, a whole number of
    # weeks): a cron with no day in 400 years has none ever.
    if _next_wall(cron, datetime(2000, 1, 1)) is None:
        raise _bad_cron(f"'{text}' never fires (no such date)")
    return cron


# --- matching wall times ------------------------------------------------------------------


def _last_weekday_of(year: int, month: int) -> int:
    first_weekday, length = calendar.monthrange(year, month)  # Monday is 0
    last = (first_weekday + length - 1) % 7
    return length - 2 if last == 6 else length - 1 if last == 5 else length


def _nearest_weekday(day: int, year: int, month: int) -> int | None:
    """Quartz's "NW": the weekday nearest day N, never leaving the month; None past its end."""
    first_weekday, length = calendar.monthrange(year, month)
    if day > length:
        return None
    weekday = (first_weekday + day - 1) % 7  # Monday is 0
    if weekday == 5:  # Saturday: the Friday before, or the Monday after on the 1st
        return day - 1 if day > 1 else day + 2
    if weekday == 6:  # Sunday: the Monday after, or the Friday before on the last day
        return day + 1 if day < length else day - 2
    return day


@functools.lru_cache(maxsize=4096)
def _month_days(cron: _Cron, year: int, month: int) -> tuple[int, ...]:
    """The days of a month the two day fields select, in order."""
    first_weekday, length = calendar.monthrange(year, month)  # Monday is 0
    special = set()
    if cron.last_day:
        special.add(length)
    if cron.last_weekday:
        special.add(_last_weekday_of(year, month))
    for day in cron.nearest_weekday:
        nearest = _nearest_weekday(day, year, month)
        if nearest is not None:
            special.add(nearest)
    selected = []
    for day in range(1, length + 1):
        weekday = (first_weekday + day) % 7  # Sunday is 0
        dom = day in cron.days or day in special
        dow = (
            weekday in cron.weekdays
            or (weekday in cron.last_of_weekday and day + 7 > length)
            or (weekday, (day + 6) // 7) in cron.nth_weekday
        )
        if (dom and dow) if cron.day_and else (dom or dow):
            selected.append(day)
    return tuple(selected)


def _next_wall(cron: _Cron, after: datetime, *, inclusive: bool = False) -> datetime | None:
    """The first wall time (naive, whole minute) after `after` (or at it, if `inclusive`)
    that the cron matches.

    None when there is none before the end of year 9999, or within 400 years (the
    calendar's cycle, so none ever).
    """
    if inclusive and after.second == after.microsecond == 0:
        start = after
    elif after >= datetime(9999, 12, 31, 23, 59):
        return None
    else:
        start = after.replace(second=0, microsecond=0) + _MINUTE
    year, month = start.year, start.month
    for _ in range(12 * 400 + 1):
        if month in cron.months:
            for day in _month_days(cron, year, month):
                if (year, month, day) < (start.year, start.month, start.day):
                    continue
                same_day = (year, month, day) == (start.year, start.month, start.day)
                for hour in cron.hours[bisect_left(cron.hours, start.hour) if same_day else 0 :]:
                    same_hour = same_day and hour == start.hour
                    at = bisect_left(cron.minutes, start.minute) if same_hour else 0
                    if at < len(cron.minutes):
                        return datetime(year, month, day, hour, cron.minutes[at])
        month, year = (1, year + 1) if month == 12 else (month + 1, year)
        if year > 9999:
            return None
    return None


@functools.cache
def _known_timezones() -> dict[str, str]:
    """Every IANA zone name, keyed by its casefolded form (no two names differ only in case)."""
    return {name.casefold(): name for name in zoneinfo.available_timezones()}


def canonical_timezone(name: str, *, field: str = "schedule.timezone") -> str:
    """The IANA spelling of a zone name given in any case ("europe/berlin" → "Europe/Berlin")."""
    canonical = _known_timezones().get(name.casefold()) if name else None
    if canonical is None:
        shown = f"'{name}'" if name else "an empty name"
        raise ValidationError(
            f"{shown} is not a known IANA timezone (e.g. 'Europe/Berlin')", field=field
        )
    return canonical


def _zone(name: str) -> zoneinfo.ZoneInfo:
    return zoneinfo.ZoneInfo(canonical_timezone(name))


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
        if spec.interval_s > MAX_INTERVAL_S:
            raise ValidationError("interval must be at most 366 days", field="schedule.interval_s")
    _require_aware(spec.at, "schedule.at")
    _require_aware(spec.anchor_at, "schedule.anchor_at")


# --- evaluation -------------------------------------------------------------------------


@dataclass(frozen=True)
class DstMark:
    """A fire (or a missing fire) that a DST transition decided, and the policy that did.

    ``change`` is "shifted" (its wall time was skipped; it fires right after the jump),
    "skipped" (its wall time was skipped and it does not fire; ``at`` is the jump) or
    "repeated" (its wall time happened twice). ``policy`` is the rule that applied: the
    trigger's ``dst.skipped``/``dst.repeated`` for a fixed-time cron; for a wildcard cron,
    which follows the wall clock, "skip" and "both".
    """

    at: datetime
    change: Literal["shifted", "repeated", "skipped"]
    policy: Literal["shift", "skip", "once", "both"]


@dataclass(frozen=True)
class _Candidate:
    instant: datetime
    fires: bool
    mark: DstMark | None = None


def _wall(instant: datetime, tz: zoneinfo.ZoneInfo) -> datetime | None:
    """The wall time of `instant` in `tz`; None if it falls outside years 1-9999."""
    try:
        return instant.astimezone(tz).replace(tzinfo=None)
    except OverflowError:
        return None


def _offset(instant: datetime, tz: zoneinfo.ZoneInfo) -> timedelta:
    offset = instant.astimezone(tz).utcoffset()
    assert offset is not None
    return offset


def _setback_soon_after(instant: datetime, tz: zoneinfo.ZoneInfo) -> timedelta:
    """A set-back of the clock coming sooner after `instant` than its own size, else zero."""
    try:
        within_a_day = max(timedelta(0), _offset(instant, tz) - _offset(instant + _ONE_DAY, tz))
        return max(timedelta(0), _offset(instant, tz) - _offset(instant + within_a_day, tz))
    except OverflowError:  # at the end of year 9999: no transition left to find
        return timedelta(0)


def _setback_shortly_before(instant: datetime, tz: zoneinfo.ZoneInfo) -> timedelta:
    """A set-back of the clock coming sooner before `instant` than its own size, else zero."""
    try:
        within_a_day = max(timedelta(0), _offset(instant - _ONE_DAY, tz) - _offset(instant, tz))
        return max(timedelta(0), _offset(instant - within_a_day, tz) - _offset(instant, tz))
    except OverflowError:  # at the start of year 1
        return timedelta(0)


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


def _candidates(
    wall: datetime, tz: zoneinfo.ZoneInfo, cron: _Cron, spec: ScheduleSpec
) -> list[_Candidate]:
    """What a matching wall time becomes under the DST policy: fires, and missing fires."""
    # zoneinfo (PEP 495): fold=0 reads a wall time with the offset in force before a
    # transition, fold=1 with the one after; they differ only around a transition.
    first = wall.replace(tzinfo=tz, fold=0).astimezone(UTC)
    second = wall.replace(tzinfo=tz, fold=1).astimezone(UTC)
    if first == second:
        return [_Candidate(first, True)]
    if _wall(first, tz) == wall:
        # The wall time happens twice: the clock was set back over it. In Debian cron a
        # fixed-time job does not run again ("it has probably already run"); a wildcard job
        # follows the wall clock and matches both times.
        if cron.fixed_time and spec.dst_repeated == "once":
            return [_Candidate(first, True, DstMark(first, "repeated", "once"))]
        return [_Candidate(at, True, DstMark(at, "repeated", "both")) for at in (first, second)]
    # The wall time never happens: the clock jumped forward over it. In Debian cron a
    # fixed-time job whose time was skipped runs right after the jump (once, however many
    # of its times were skipped); a wildcard job just waits for its next wall-clock match.
    jump = _jump_instant(second, first, tz)
    if cron.fixed_time and spec.dst_skipped == "shift":
        return [_Candidate(jump, True, DstMark(jump, "shifted", "shift"))]
    return [_Candidate(jump, False, DstMark(jump, "skipped", "skip"))]


def _next_cron_fire(
    spec: ScheduleSpec, cron_text: str, after: datetime
) -> tuple[datetime | None, list[DstMark]]:
    """The first cron fire after `after`, and the DST marks up to it, walking wall times.

    1. Start at the wall time of `after`, moved back by a set-back coming soon after it:
       the clock then shows earlier wall times again, as later instants.
    2. Map each matching wall time to its instants under the DST policy (``_candidates``).
    3. Keep the earliest fire after `after`. A later wall time can still be an earlier
       instant when the clock is set back shortly before that instant, so go on until the
       wall time passes the earliest's wall time plus that set-back (usually at once).
    4. Mark the fire if a transition decided it, and every missing fire (skipped) between
       `after` and it, once per jump.
    """
    cron = _parse_cron(cron_text)
    tz = _zone(spec.timezone)
    wall = _wall(after, tz)
    from_first_minute = wall is None
    if wall is None:
        if after.year > 1:
            return None, []  # past the end of year 9999 on this zone's clock
        wall = datetime.min  # before year 1 on this zone's clock: start at its first minute
    wall -= min(_setback_soon_after(after, tz), wall - datetime.min)
    earliest: _Candidate | None = None
    skipped: dict[datetime, DstMark] = {}
    stop_after = _add_capped(wall, _HORIZON)
    while (found := _next_wall(cron, wall, inclusive=from_first_minute)) is not None:
        if found > stop_after:
            break
        wall, from_first_minute = found, False
        try:
            candidates = _candidates(wall, tz, cron, spec)
        except OverflowError:  # this wall time has no instant inside years 1-9999
            if wall.year > 1:
                break
            continue
        for candidate in candidates:
            if candidate.instant <= after:
                continue
            if not candidate.fires:
                assert candidate.mark is not None
                skipped.setdefault(candidate.instant, candidate.mark)
                # Every later wall time in this gap is skipped too: go on from its end.
                after_gap = _wall(candidate.instant, tz)
                if after_gap is not None:
                    wall = max(wall, after_gap - _MINUTE)
            elif earliest is None or candidate.instant < earliest.instant:
                earliest = candidate
                earliest_wall = _wall(candidate.instant, tz) or wall
                stop_after = earliest_wall + _setback_shortly_before(candidate.instant, tz)
        if wall >= stop_after:
            break
    if earliest is None:
        return None, []
    marks = [mark for at, mark in skipped.items() if at <= earliest.instant]
    if earliest.mark is not None:
        marks.append(earliest.mark)
    return earliest.instant, sorted(marks, key=lambda mark: mark.at)


def _add_capped(wall: datetime, delta: timedelta) -> datetime:
    try:
        return wall + delta
    except OverflowError:
        return datetime.max


def _next_interval_fire(spec: ScheduleSpec, interval_s: int, after: datetime) -> datetime | None:
    # The slots are anchor + k*interval for k >= 1 (the anchor is the creation, not a
    # fire). Only the first slot after `after` counts: slots missed while down are skipped.
    anchor = spec.anchor_at if spec.anchor_at is not None else after
    interval = timedelta(seconds=interval_s)
    slots_passed = max(0, (after - anchor) // interval)
    try:
        return (anchor + (slots_passed + 1) * interval).astimezone(UTC)
    except OverflowError:  # the next slot would be after year 9999
        return None


def _next_fire_marked(spec: ScheduleSpec, after: datetime) -> tuple[datetime | None, list[DstMark]]:
    if after.utcoffset() is None:
        raise ValueError("after must be an aware datetime")
    _one_kind(spec)
    if spec.cron is not None:
        return _next_cron_fire(spec, spec.cron, after)
    if spec.interval_s is not None:
        return _next_interval_fire(spec, spec.interval_s, after), []
    assert spec.at is not None
    return (spec.at.astimezone(UTC) if spec.at > after else None), []


def next_fire_after(spec: ScheduleSpec, after: datetime) -> datetime | None:
    """The first fire instant strictly after `after` (aware UTC), or None if there is none."""
    return _next_fire_marked(spec, after)[0]


def _check_count(count: int) -> None:
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_PREVIEW:
        raise ValidationError(f"count must be between 1 and {MAX_PREVIEW}", field="count")


def preview_marked(
    spec: ScheduleSpec, *, start: datetime, count: int
) -> tuple[list[datetime], list[DstMark]]:
    """The next `count` fires strictly after `start` (fewer if the schedule ends before
    year 10000), and the DST marks of those fires and of the fires missing between them."""
    _check_count(count)
    fires: list[datetime] = []
    marks: list[DstMark] = []
    after = start
    while len(fires) < count:
        fire, found = _next_fire_marked(spec, after)
        if fire is None:
            break
        fires.append(fire)
        marks.extend(found)
        after = fire
    return fires, marks


def preview(spec: ScheduleSpec, *, start: datetime, count: int) -> list[datetime]:
    """The next `count` fires strictly after `start` (fewer if the schedule ends)."""
    return preview_marked(spec, start=start, count=count)[0]


# --- EventBridge Scheduler expressions ------------------------------------------------------


@dataclass(frozen=True)
class PastedSchedule:
    """An EventBridge Scheduler expression in cronhook's form: one of the three is set."""

    cron: str | None = None
    interval_s: int | None = None
    at: datetime | None = None


_RATE_UNITS_S = {
    "minute": 60,
    "minutes": 60,
    "hour": 3600,
    "hours": 3600,
    "day": 86400,
    "days": 86400,
}
_AWS_FORM = re.compile(r"^\s*(cron|rate|at)\s*\((.*)\)\s*$", re.IGNORECASE | re.DOTALL)


def is_pasted_expression(text: str) -> bool:
    """True for ``cron(...)``, ``rate(...)`` or ``at(...)``, EventBridge Scheduler's forms."""
    return _AWS_FORM.match(text) is not None


def translate_pasted(text: str, *, timezone: str, field: str = "schedule.cron") -> PastedSchedule:
    """Translate an EventBridge Scheduler expression into cronhook's schedule fields.

    ``cron(min hour dom month dow year)`` becomes a five-field cron (EventBridge numbers
    weekdays 1-7 from Sunday, cron 0-6; the year must be ``*``), ``rate(N unit)`` an
    interval and ``at(YYYY-MM-DDThh:mm:ss)`` an instant read on `timezone`'s clock.
    """
    match = _AWS_FORM.match(text)
    if match is None:
        raise ValidationError(f"'{text}' is not an EventBridge expression", field=field)
    form, inner = match.group(1).lower(), match.group(2).strip()
    if form == "rate":
        return PastedSchedule(interval_s=_rate_s(inner, field))
    if form == "at":
        return PastedSchedule(at=_at_instant(inner, timezone, field))
    fields = inner.split()
    if len(fields) != 6:
        raise ValidationError(
            "cron(...) takes 6 fields (minutes hours day-of-month month day-of-week year), "
            f"got {len(fields)}",
            field=field,
        )
    minute, hour, dom, month, dow, year = fields
    if year not in ("*", "?"):
        raise ValidationError(
            f"the year field '{year}' is not supported: cronhook runs a cron every year, "
            "so give '*' (and end the trigger with limits.expires_at)",
            field=field,
        )
    # "?" means "*" in cron's day fields: show the plain five-field form back.
    dom, dow = ("*" if day == "?" else day for day in (dom, _aws_weekdays(dow, field)))
    return PastedSchedule(cron=" ".join((minute, hour, dom, month, dow)))


def _rate_s(inner: str, field: str) -> int:
    value, _, unit = inner.partition(" ")
    unit_s = _RATE_UNITS_S.get(unit.strip().lower())
    if not _is_number(value) or int(value) == 0 or unit_s is None:
        raise ValidationError(
            f"'rate({inner})' is not valid: use rate(N minutes|hours|days) with N a positive number",
            field=field,
        )
    interval_s = int(value) * unit_s
    if interval_s > MAX_INTERVAL_S:
        raise ValidationError(f"'rate({inner})' is longer than 366 days", field=field)
    return interval_s


def _at_instant(inner: str, timezone: str, field: str) -> datetime:
    try:
        wall = datetime.strptime(inner, "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        raise ValidationError(
            f"'at({inner})' is not valid: use at(YYYY-MM-DDThh:mm:ss)", field=field
        ) from None
    tz = _zone(timezone)
    try:
        instant = wall.replace(tzinfo=tz).astimezone(UTC)
    except OverflowError:  # e.g. at(0001-01-01T00:00:00) in Berlin: year 0 in UTC
        raise ValidationError(
            f"'at({inner})' is outside years 1-9999 in UTC", field=field
        ) from None
    if _wall(instant, tz) != wall:
        raise ValidationError(
            f"'at({inner})' never happens in {timezone}: the clock jumps over it", field=field
        )
    return instant


def _aws_weekdays(text: str, field: str) -> str:
    """EventBridge's day of week (1-7 from Sunday, "L" alone is Saturday) in cron's 0-6."""

    def shift(token: str) -> str:
        if not _is_number(token):
            return token  # a name, or "*", or "?": the same in both
        if not 1 <= int(token) <= 7:
            raise ValidationError(
                f"'{text}' is not a valid EventBridge day-of-week (1-7, Sunday is 1)", field=field
            )
        return str(int(token) - 1)

    if text.upper() == "L":
        return "6"
    # Number tokens sit before "-", "#", "L" and after "-"; a "/" step is a count, not a day.
    return re.sub(
        r"(?<![/#\w])(\d+)",
        lambda number: shift(number.group(1)),
        text,
    )


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
        timezone = spec.timezone
        try:
            at = spec.at.astimezone(_zone(timezone))
        except OverflowError:  # 9999-12-31 late in UTC is year 10000 east of it: say UTC
            at, timezone = spec.at.astimezone(UTC), "UTC"
        # isoformat, not strftime: glibc's %Y prints year 1 as "1", not "0001".
        shown = at.replace(tzinfo=None, microsecond=0).isoformat(
            sep=" ", timespec="seconds" if at.second else "minutes"
        )
        return f"Once at {shown}" + (_zone_suffix(timezone) or " UTC")
    assert spec.cron is not None
    options = Options()
    options.use_24hour_time_format = True
    cron = _parse_cron(spec.cron)
    text = ExpressionDescriptor(cron.expression, options).get_description()
    if cron.day_and:
        # cron_descriptor reads "*/2 * 1" as "every 2 days, or on Monday"; in Vixie cron a
        # day field starting with "*" makes it "and".
        text = text.replace(", or on ", ", if it is also ")
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
