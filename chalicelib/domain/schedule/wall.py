"""Which wall times a cron matches: the Vixie day rule and cronsim's day extensions.

A wall time here is a naive ``datetime`` on a zone's clock, a whole minute; what it
becomes as an instant (and around DST) is ``dst.py``'s business. croniter lacks the
extensions, so the matching is done here, month by month.
"""

from __future__ import annotations

import calendar
import functools
from bisect import bisect_left
from dataclasses import dataclass
from datetime import datetime, timedelta

__all__ = ["Cron", "next_wall"]

_MINUTE = timedelta(minutes=1)


# eq=False: hashed by identity, cheaply, as the key of the per-month day cache.
@dataclass(frozen=True, eq=False)
class Cron:
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
def _month_days(cron: Cron, year: int, month: int) -> tuple[int, ...]:
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


def next_wall(cron: Cron, after: datetime, *, inclusive: bool = False) -> datetime | None:
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
