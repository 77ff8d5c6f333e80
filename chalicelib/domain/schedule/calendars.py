"""Holiday and business-day calendars: which local dates a schedule leaves out or moves to.

Public holidays come from the maintained ``holidays`` package (pinned in requirements.txt:
its data is versioned with it), by country and subdivision code as it names them ("DE",
"DE-BY", "US-NY"). Everything here is a function of the calendar and a date: no clock.

A calendar *removes* a date that is a holiday or one of its ``exclude_dates``; a *business
day* is a date whose ISO weekday is one of ``business_days`` and that is not removed. A
cron slot on a removed date is skipped, or moved to the next or previous business day at
the same wall time (``on_holiday``); a weekend that is no holiday removes nothing (say
``1-5`` in the cron for weekdays only).
"""

from __future__ import annotations

import calendar as _gregorian
import functools
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any, Literal

from chalicelib.domain.errors import ValidationError

__all__ = [
    "Calendar",
    "OnHoliday",
    "MAX_MOVE_DAYS",
    "check_holiday_code",
    "removal",
    "is_business_day",
    "next_business_day",
    "previous_business_day",
    "nth_business_day",
]

OnHoliday = Literal["skip", "next_business_day", "previous_business_day"]
# A slot moved further than this (a calendar with almost no business day) is skipped.
MAX_MOVE_DAYS = 31


@dataclass(frozen=True)
class Calendar:
    """Holiday codes, dates left out, the business weekdays (ISO, 1 = Monday), and the move."""

    holidays: tuple[str, ...] = ()
    exclude_dates: frozenset[date] = frozenset()
    business_days: frozenset[int] = frozenset({1, 2, 3, 4, 5})
    on_holiday: OnHoliday = "skip"


def _holidays_module() -> Any:
    # Imported on first use: ~0.2 s, paid only by a process that evaluates a calendar
    # with holidays (the heartbeat and runner of a plain cron never load it).
    import holidays

    return holidays


@functools.cache
def _supported() -> dict[str, frozenset[str]]:
    countries = _holidays_module().list_supported_countries()
    return {code: frozenset(subdivs) for code, subdivs in countries.items()}


def check_holiday_code(code: str, *, field: str) -> str:
    """``code`` ("DE", "DE-BY") if the holidays package knows it, else a ``ValidationError``."""
    country, _, subdiv = code.partition("-")
    known = _supported()
    if country not in known:
        raise ValidationError(
            f"'{code}' is not a country the holidays package knows (e.g. 'DE', 'US')",
            field=field,
        )
    if subdiv and subdiv not in known[country]:
        some = ", ".join(sorted(known[country])[:8])
        raise ValidationError(
            f"'{subdiv}' is not a subdivision of {country} (e.g. {some})", field=field
        )
    return code


@functools.lru_cache(maxsize=256)
def _holidays_of(code: str, year: int) -> dict[date, str]:
    """The public holidays of one country or subdivision in one year, with their names."""
    country, _, subdiv = code.partition("-")
    found = _holidays_module().country_holidays(country, subdiv=subdiv or None, years=year)
    return {day: str(name) for day, name in found.items()}


def holiday_name(cal: Calendar, day: date) -> str | None:
    """The name of the holiday `day` is in any of the calendar's codes (the first), or None."""
    for code in cal.holidays:
        name = _holidays_of(code, day.year).get(day)
        if name is not None:
            return name
    return None


def removal(cal: Calendar, day: date) -> tuple[Literal["holiday", "excluded"], str | None] | None:
    """Why the calendar removes `day`: ("excluded", name or None) or ("holiday", name); else None."""
    name = holiday_name(cal, day)
    if day in cal.exclude_dates:
        return "excluded", name
    if name is not None:
        return "holiday", name
    return None


def is_business_day(cal: Calendar, day: date) -> bool:
    """A business weekday the calendar does not remove."""
    return day.isoweekday() in cal.business_days and removal(cal, day) is None


def _step_business_day(cal: Calendar, day: date, step: int) -> date | None:
    for days in range(1, MAX_MOVE_DAYS + 1):
        try:
            candidate = day + timedelta(days=step * days)
        except OverflowError:
            return None
        if is_business_day(cal, candidate):
            return candidate
    return None


def next_business_day(cal: Calendar, day: date) -> date | None:
    """The first business day after `day` (within ``MAX_MOVE_DAYS``), or None."""
    return _step_business_day(cal, day, 1)


def previous_business_day(cal: Calendar, day: date) -> date | None:
    """The last business day before `day` (within ``MAX_MOVE_DAYS``), or None."""
    return _step_business_day(cal, day, -1)


def nth_business_day(cal: Calendar, year: int, month: int, n: int) -> date | None:
    """The `n`th business day of the month (1 the first), or from its end (-1 the last)."""
    first = date(year, month, 1)
    # The month's length from the calendar, not from the 1st of the next month: there is
    # no month after December 9999.
    days = [first + timedelta(days=k) for k in range(_gregorian.monthrange(year, month)[1])]
    business = [d for d in days if is_business_day(cal, d)]
    index = n - 1 if n > 0 else n
    if n == 0 or not -len(business) <= index < len(business):
        return None
    return business[index]
