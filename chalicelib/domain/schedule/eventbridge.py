"""EventBridge Scheduler expressions, pasted whole, in cronhook's own schedule fields."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from chalicelib.domain.errors import ValidationError
from chalicelib.domain.schedule.cron import is_number
from chalicelib.domain.schedule.model import MAX_INTERVAL_S
from chalicelib.domain.schedule.zones import wall_of, zone

__all__ = ["PastedSchedule", "is_pasted_expression", "translate_pasted"]


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
    if not is_number(value) or int(value) == 0 or unit_s is None:
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
    tz = zone(timezone)
    try:
        instant = wall.replace(tzinfo=tz).astimezone(UTC)
    except OverflowError:  # e.g. at(0001-01-01T00:00:00) in Berlin: year 0 in UTC
        raise ValidationError(
            f"'at({inner})' is outside years 1-9999 in UTC", field=field
        ) from None
    if wall_of(instant, tz) != wall:
        raise ValidationError(
            f"'at({inner})' never happens in {timezone}: the clock jumps over it", field=field
        )
    return instant


def _aws_weekdays(text: str, field: str) -> str:
    """EventBridge's day of week (1-7 from Sunday, "L" alone is Saturday) in cron's 0-6."""

    def shift(token: str) -> str:
        if not is_number(token):
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
