"""A schedule's cadence in words, for people ("Every 15 minutes", "At 08:00 on Monday")."""

from __future__ import annotations

from datetime import UTC

from chalicelib.domain.schedule.cron import parse_cron
from chalicelib.domain.schedule.model import ScheduleSpec, one_kind
from chalicelib.domain.schedule.zones import zone

__all__ = ["describe"]


def _describe_interval(interval_s: int) -> str:
    for unit_s, unit in ((86400, "day"), (3600, "hour"), (60, "minute"), (1, "second")):
        if interval_s % unit_s == 0:
            units = interval_s // unit_s
            return f"Every {unit}" if units == 1 else f"Every {units} {unit}s"
    raise AssertionError("unreachable: every whole number of seconds divides by 1")


def _describe_at(spec: ScheduleSpec) -> str:
    assert spec.at is not None
    timezone = spec.timezone
    try:
        at = spec.at.astimezone(zone(timezone))
    except OverflowError:  # 9999-12-31 late in UTC is year 10000 east of it: say UTC
        at, timezone = spec.at.astimezone(UTC), "UTC"
    # isoformat, not strftime: glibc's %Y prints year 1 as "1", not "0001".
    shown = at.replace(tzinfo=None, microsecond=0).isoformat(
        sep=" ", timespec="seconds" if at.second else "minutes"
    )
    return f"Once at {shown}" + (_zone_suffix(timezone) or " UTC")


def _describe_cron(spec: ScheduleSpec) -> str:
    # cron_descriptor is for words only: imported here so that the heartbeat and the
    # runner, which never describe a schedule, do not load it on a cold start.
    from cron_descriptor import ExpressionDescriptor, Options

    assert spec.cron is not None
    options = Options()
    options.use_24hour_time_format = True
    cron = parse_cron(spec.cron)
    text = ExpressionDescriptor(cron.expression, options).get_description()
    if cron.day_and:
        # cron_descriptor reads "*/2 * 1" as "every 2 days, or on Monday"; in Vixie cron a
        # day field starting with "*" makes it "and".
        text = text.replace(", or on ", ", if it is also ")
    # cron_descriptor says "At 08:00, only on Monday"; we say "At 08:00 on Monday".
    return text.replace(", only on ", " on ") + _zone_suffix(spec.timezone)


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _describe_business_day(spec: ScheduleSpec) -> str:
    assert spec.business_day is not None
    n = spec.business_day
    which = (
        f"the {_ordinal(n)} business day"
        if n > 0
        else "the last business day"
        if n == -1
        else f"the {_ordinal(-n)} last business day"
    )
    return f"At {spec.time} on {which} of the month" + _zone_suffix(spec.timezone)


def _describe_calendar(spec: ScheduleSpec) -> str:
    cal = spec.calendar
    if cal is None:
        return ""
    parts = []
    if cal.holidays:
        move = {
            "skip": "skipped",
            "next_business_day": "moved to the next business day",
            "previous_business_day": "moved to the previous business day",
        }[cal.on_holiday]
        parts.append(f"{', '.join(cal.holidays)} holidays {move}")
    if cal.exclude_dates:
        parts.append(f"{len(cal.exclude_dates)} excluded dates")
    return f"; {'; '.join(parts)}" if parts else ""


def describe(spec: ScheduleSpec) -> str:
    """The cadence in words, e.g. "Every 15 minutes" or "At 08:00 on Monday (Europe/Berlin)"."""
    kind = one_kind(spec)
    if spec.interval_s is not None:
        text = _describe_interval(spec.interval_s)
    elif spec.at is not None:
        text = _describe_at(spec)
    elif kind == "business_day":
        text = _describe_business_day(spec)
    else:
        text = " and ".join(_describe_cron(ScheduleSpec(cron=cron)) for cron in spec.crons)
        text += _zone_suffix(spec.timezone)
    jitter = f"; jitter up to {spec.jitter_s} s" if spec.jitter_s else ""
    return text + _describe_calendar(spec) + jitter


def _zone_suffix(timezone: str) -> str:
    return "" if timezone == "UTC" else f" ({timezone})"
