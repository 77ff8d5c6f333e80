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


def describe(spec: ScheduleSpec) -> str:
    """The cadence in words, e.g. "Every 15 minutes" or "At 08:00 on Monday (Europe/Berlin)"."""
    one_kind(spec)
    if spec.interval_s is not None:
        return _describe_interval(spec.interval_s)
    if spec.at is not None:
        return _describe_at(spec)
    return _describe_cron(spec)


def _zone_suffix(timezone: str) -> str:
    return "" if timezone == "UTC" else f" ({timezone})"
