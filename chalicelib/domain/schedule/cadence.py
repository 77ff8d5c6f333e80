"""Several crons as one cadence, calendars over them, and the Nth business day of a month.

The single-cron walk (``fires._next_cron_fire``) is handed in as ``RawNext``: this module
composes it, never reimplements it. Every instant in and out is aware UTC; the time is
always an argument.

- A list of crons is a union: the next fire is the earliest of each cron's, so an instant
  two crons share fires once.
- A calendar removes the slots on its holidays and excluded dates (``CalendarMark``
  "holiday" / "excluded"), or moves each to the same wall time on the next or previous
  business day ("moved"). A moved slot that lands on an instant the schedule already has
  is that one slot: the union fires once per instant.
- ``business_day``: N (1 = the first) or -N (-1 = the last) business day of each month, at
  ``time`` on the zone's wall clock, with the fixed-time DST policy of a cron.
"""

from __future__ import annotations

import zoneinfo
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Literal

from chalicelib.domain.schedule.calendars import (
    MAX_MOVE_DAYS,
    Calendar,
    is_business_day,
    next_business_day,
    nth_business_day,
    previous_business_day,
    removal,
)
from chalicelib.domain.schedule.cron import parse_cron
from chalicelib.domain.schedule.dst import Candidate, DstMark, candidates
from chalicelib.domain.schedule.model import ScheduleSpec, parse_time
from chalicelib.domain.schedule.zones import wall_of, zone

__all__ = ["CalendarMark", "Step", "RawNext", "union_next", "calendar_next", "business_day_next"]

RawNext = Callable[[ScheduleSpec, str, datetime], tuple[datetime | None, list[DstMark]]]

# A fixed-time cron: what a moved slot or a business day's time is for the DST policy.
_FIXED = parse_cron("0 0 * * *")
_MICRO = timedelta(microseconds=1)
_FIRST = datetime.min.replace(tzinfo=UTC)
_LAST = datetime.max.replace(tzinfo=UTC)
# Removed days walked past in one search before giving up (a calendar that removes more
# than a year of a cron's dates has, for this purpose, no next fire).
_MAX_REMOVED_DAYS = 400
# The slots of one removed day that are marked one by one (a minutely cron's holiday).
_MAX_MARKED_PER_DAY = 1500
# Months searched for the Nth business day (23 business days exist in few months).
_MAX_MONTHS = 240


@dataclass(frozen=True)
class CalendarMark:
    """A slot a calendar removed ("holiday", "excluded") or moved ("moved", to ``moved_to``),
    or a one-off exception: a slot skipped ("skipped"), an extra run ("extra")."""

    at: datetime
    change: Literal["holiday", "excluded", "moved", "skipped", "extra"]
    name: str | None
    moved_to: datetime | None = None


@dataclass(frozen=True)
class Step:
    """The next fire after an instant, and what decided it or was passed on the way."""

    fire: datetime | None
    dst: list[DstMark]
    calendar: list[CalendarMark]


def union_next(
    spec: ScheduleSpec, after: datetime, raw: RawNext
) -> tuple[datetime | None, list[DstMark]]:
    """The earliest next fire of any of the crons, and every DST mark up to it."""
    found = [raw(spec, cron, after) for cron in spec.crons]
    fires = [fire for fire, _ in found if fire is not None]
    if not fires:
        return None, []
    first = min(fires)
    marks = {mark for _, ms in found for mark in ms if mark.at <= first}
    return first, sorted(marks, key=lambda mark: (mark.at, mark.change))


def _day_of(instant: datetime, tz: zoneinfo.ZoneInfo) -> date | None:
    wall = wall_of(instant, tz)
    return wall.date() if wall is not None else None


def _day_start(day: date, tz: zoneinfo.ZoneInfo) -> datetime:
    """When `day` starts on the zone's clock; clamped to the ends of time (year 1's first
    day starts before 0001-01-01Z east of UTC, there is no day after 9999-12-31)."""
    try:
        return datetime.combine(day, time()).replace(tzinfo=tz).astimezone(UTC)
    except OverflowError:
        return _FIRST if day.year == 1 else _LAST


def _day_after_start(day: date, tz: zoneinfo.ZoneInfo) -> datetime:
    """When the day after `day` starts (the end of time after 9999-12-31)."""
    return _LAST if day == date.max else _day_start(day + timedelta(days=1), tz)


def _just_before(instant: datetime) -> datetime:
    return instant - _MICRO if instant > _FIRST else instant


def _at_wall(wall: datetime, tz: zoneinfo.ZoneInfo, spec: ScheduleSpec) -> Step | None:
    """The first instant a fixed-time wall time fires at under the DST policy, else None
    (also for a wall time past the end of year 9999 in UTC: no slot, not an error)."""
    try:
        found = candidates(wall, tz, _FIXED, spec)
    except OverflowError:
        return None
    for candidate in found:
        if candidate.fires:
            marks = [candidate.mark] if candidate.mark is not None else []
            return Step(candidate.instant, marks, [])
    return None


def _target_day(cal: Calendar, day: date) -> date | None:
    if cal.on_holiday == "next_business_day":
        return next_business_day(cal, day)
    if cal.on_holiday == "previous_business_day":
        return previous_business_day(cal, day)
    return None


def _mark(spec: ScheduleSpec, fire: datetime, day: date, tz: zoneinfo.ZoneInfo) -> CalendarMark:
    assert spec.calendar is not None
    why = removal(spec.calendar, day)
    assert why is not None
    change, name = why
    target = _target_day(spec.calendar, day)
    wall = wall_of(fire, tz)
    if target is None or wall is None:
        return CalendarMark(fire, change, name)
    moved = _at_wall(datetime.combine(target, wall.time()), tz, spec)
    if moved is None or moved.fire is None:
        return CalendarMark(fire, change, name)
    return CalendarMark(fire, "moved", name, moved_to=moved.fire)


def _first_kept(
    spec: ScheduleSpec, after: datetime, union: Callable[[datetime], tuple], *, marks: bool
) -> Step:
    """The first union fire after `after` on a date the calendar keeps, and (with `marks`)
    the slots it removed on the way."""
    assert spec.calendar is not None
    tz = zone(spec.timezone)
    removed: list[CalendarMark] = []
    cursor, days, marked_today, last_day = after, 0, 0, None
    while days <= _MAX_REMOVED_DAYS:
        fire, dst = union(cursor)
        day = _day_of(fire, tz) if fire is not None else None
        if fire is None or day is None:
            return Step(None, [], removed)
        if removal(spec.calendar, day) is None:
            return Step(fire, dst, removed)
        marked_today = marked_today + 1 if day == last_day else 1
        days += day != last_day
        last_day = day
        if marks and marked_today <= _MAX_MARKED_PER_DAY:
            removed.append(_mark(spec, fire, day, tz))
            cursor = fire
        else:  # the rest of this removed day: jump to its end
            cursor = max(fire, _just_before(_day_after_start(day, tz)))
    return Step(None, [], removed)


def _sources(cal: Calendar, day: date) -> list[date]:
    """The removed days whose slots move to `day` (a business day), nearest first."""
    step = -1 if cal.on_holiday == "next_business_day" else 1
    out = []
    for days in range(1, MAX_MOVE_DAYS + 1):
        try:
            source = day + timedelta(days=step * days)
        except OverflowError:  # before year 1 or after year 9999: no day to move from
            break
        if is_business_day(cal, source):
            break
        if removal(cal, source) is not None:
            out.append(source)
    return out


def _walls_on(day: date, tz: zoneinfo.ZoneInfo, union: Callable[[datetime], tuple]) -> list:
    """The wall times of the union's fires on one local date."""
    walls: list[datetime] = []
    cursor = _just_before(_day_start(day, tz))
    while len(walls) < _MAX_MARKED_PER_DAY:
        fire, _ = union(cursor)
        wall = wall_of(fire, tz) if fire is not None else None
        if fire is None or wall is None or wall.date() > day:
            break
        if wall.date() == day:
            walls.append(wall)
        cursor = fire
    return walls


def _first_moved(
    spec: ScheduleSpec, after: datetime, until: datetime | None, union: Callable
) -> Step | None:
    """The first moved slot after `after` (and not after `until`), if any."""
    cal = spec.calendar
    assert cal is not None
    tz = zone(spec.timezone)
    start = _day_of(after, tz)
    if cal.on_holiday == "skip" or start is None:
        return None
    end = _day_of(until, tz) if until is not None else None
    end = end or start + min(timedelta(days=_MAX_REMOVED_DAYS), date.max - start)
    day = start
    while day <= end:
        if is_business_day(cal, day):
            moved = [
                _at_wall(datetime.combine(day, wall.time()), tz, spec)
                for source in _sources(cal, day)
                for wall in _walls_on(source, tz, union)
            ]
            later = [m for m in moved if m is not None and m.fire is not None and m.fire > after]
            if later:
                return min(later, key=lambda m: m.fire or after)
        if day == date.max:  # the calendar ends with 9999-12-31
            break
        day += timedelta(days=1)
    return None


def calendar_next(spec: ScheduleSpec, after: datetime, raw: RawNext, *, marks: bool) -> Step:
    """The next fire of a cron (or crons) under its calendar: a kept slot or a moved one.

    1. Walk the union's fires from `after`, passing those on removed dates (marked with
       `marks`: skipped, or moved and where to), to the first on a kept date.
    2. Look for a moved slot landing after `after`, on the business days up to that date.
    3. The earlier of the two fires; an instant both give is one fire.
    """

    def union(at: datetime) -> tuple[datetime | None, list[DstMark]]:
        return union_next(spec, at, raw)

    kept = _first_kept(spec, after, union, marks=marks)
    moved = _first_moved(spec, after, kept.fire, union)
    if moved is None or moved.fire is None:
        return kept
    if kept.fire is not None and kept.fire <= moved.fire:
        return kept
    passed = [mark for mark in kept.calendar if mark.at < moved.fire]
    return Step(moved.fire, moved.dst, passed)


def business_day_next(spec: ScheduleSpec, after: datetime) -> Step:
    """The next fire of ``business_day`` N at ``time``: month by month from `after`'s.

    Under the DST policy as a fixed-time cron: a repeated wall time fires twice with
    ``repeated: both`` (the second after the first), a skipped one is a ``skipped`` mark
    with ``skipped: skip``, carried to the next fire.
    """
    assert spec.business_day is not None and spec.time is not None
    tz = zone(spec.timezone)
    cal = spec.calendar or Calendar()
    hour, minute = parse_time(spec.time)
    start = _day_of(after, tz) or after.date()
    year, month = start.year, start.month
    earliest = start - timedelta(days=1) if start > date.min else start  # no day before year 1
    passed: list[DstMark] = []
    for _ in range(_MAX_MONTHS):
        day = nth_business_day(cal, year, month, spec.business_day)
        if day is not None and day >= earliest:
            for candidate in _wall_candidates(datetime.combine(day, time(hour, minute)), tz, spec):
                if candidate.instant <= after:
                    continue
                mark = [candidate.mark] if candidate.mark is not None else []
                if candidate.fires:
                    return Step(candidate.instant, [*passed, *mark], [])
                passed += mark
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
        if year > 9999:
            break
    return Step(None, passed, [])


def _wall_candidates(wall: datetime, tz: zoneinfo.ZoneInfo, spec: ScheduleSpec) -> list[Candidate]:
    """``candidates`` of a fixed-time wall time; none past the end of year 9999."""
    try:
        return list(candidates(wall, tz, _FIXED, spec))
    except OverflowError:
        return []
