"""Cron syntax: five fields, checked and parsed into the wall times they match.

The five fields follow Debian cron, with the extensions cronsim (the evaluator behind
healthchecks.io) and Quartz accept: "L" (last day), "LW" (last weekday) and "15W" (the
weekday nearest the 15th) in the day of month; "5L" (the last Friday) and "1#2" (the
second Monday) in the day of week; and "?" (no specific value) in either day field.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime

from chalicelib.domain.errors import ValidationError
from chalicelib.domain.schedule.wall import Cron, next_wall

__all__ = ["FIVE_FIELDS", "is_number", "parse_cron"]

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
FIVE_FIELDS = "5 fields (minute hour day-of-month month day-of-week)"
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


def is_number(text: str) -> bool:
    """Only ASCII digits: ``str.isdigit()`` is also true for "²" and other digits int() refuses."""
    return text.isascii() and text.isdigit()


def _bad_cron(message: str) -> ValidationError:
    return ValidationError(message, field="schedule.cron")


@dataclass(frozen=True)
class _Field:
    name: str
    low: int
    high: int
    names: tuple[str, ...] = ()
    first_named: int = 0  # the value of names[0]

    def value(self, token: str, item: str) -> int:
        if is_number(token):
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
        if slash and (not is_number(step) or int(step) == 0):
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

    def all_values(self, text: str) -> set[int]:
        """The numbers a whole field (its comma-separated items) stands for."""
        return set().union(*map(self.values, self.items(text)))


_MINUTE_FIELD = _Field("minute", 0, 59)
_HOUR_FIELD = _Field("hour", 0, 23)
_DOM_FIELD = _Field("day-of-month", 1, 31)
_MONTH_FIELD = _Field("month", 1, 12, _MONTHS, first_named=1)
_DOW_FIELD = _Field("day-of-week", 0, 7, _WEEKDAYS)  # 0 and 7 are both Sunday


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
        elif upper.endswith("W") and is_number(upper[:-1]):
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
            if not is_number(which) or not 1 <= int(which) <= 5:
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
            f"'{expression}' is not supported: use {FIVE_FIELDS} "
            "or @hourly, @daily, @weekly, @monthly, @yearly"
        )
    return _ALIASES[expression.lower()]


def _five_fields(text: str) -> list[str]:
    fields = _expand_alias(text.strip()).split()
    if len(fields) in (6, 7):
        raise _bad_cron(
            f"seconds and years are not supported: a cron has {FIVE_FIELDS} "
            "(an EventBridge expression is pasted whole, as cron(...))"
        )
    if len(fields) != 5:
        raise _bad_cron(f"a cron has {FIVE_FIELDS}, got {len(fields)}")
    for name, value in (("minute", fields[0]), ("hour", fields[1]), ("month", fields[3])):
        if "?" in value:
            raise _bad_cron(f"'{value}' is not a valid {name}: '?' is only for the day fields")
    return fields


@functools.lru_cache(maxsize=1024)
def parse_cron(text: str) -> Cron:
    """Check a cron and classify it; cached because the heartbeat evaluates it on every fire."""
    fields = _five_fields(text)
    minute, hour, dom, month, dow = fields
    # "?" (Quartz, EventBridge) says "no specific value": in either day field it is "*".
    dom = "*" if dom == "?" else dom
    dow = "*" if dow == "?" else dow
    days, last_day, last_weekday, nearest = _parse_dom(dom)
    weekdays, last_of, nth = _parse_dow(dow)
    cron = Cron(
        expression=" ".join(fields),
        # In Debian cron a job is "wildcard" when its minute or hour field starts with "*";
        # only the others ("fixed-time") are moved or deduplicated around DST changes.
        fixed_time=not minute.startswith("*") and not hour.startswith("*"),
        minutes=tuple(sorted(_MINUTE_FIELD.all_values(minute))),
        hours=tuple(sorted(_HOUR_FIELD.all_values(hour))),
        months=frozenset(_MONTH_FIELD.all_values(month)),
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
    if next_wall(cron, datetime(2000, 1, 1)) is None:
        raise _bad_cron(f"'{text}' never fires (no such date)")
    return cron
