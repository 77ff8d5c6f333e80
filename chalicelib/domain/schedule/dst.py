"""DST policy: what a matching wall time becomes as instants when the clock changes.

The policy is the reference cron's (cronie / Debian), with two knobs for a fixed-time
cron: ``dst_skipped`` ("shift" runs right after a jump over its time, "skip" does not)
and ``dst_repeated`` ("once" runs the first of a wall time that happens twice, "both" both).
"""

from __future__ import annotations

import zoneinfo
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from chalicelib.domain.schedule.model import ScheduleSpec
from chalicelib.domain.schedule.wall import Cron
from chalicelib.domain.schedule.zones import wall_of

__all__ = [
    "DstMark",
    "Candidate",
    "candidates",
    "setback_soon_after",
    "setback_shortly_before",
]

# In tzdb no zone changes its UTC offset twice within a day, so comparing the offsets a
# day apart finds any set-back between them (the largest since 1970 was 7 hours).
_ONE_DAY = timedelta(days=1)


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
class Candidate:
    """One instant a matching wall time stands for: a fire, or a missing fire (``fires`` false)."""

    instant: datetime
    fires: bool
    mark: DstMark | None = None


def _offset(instant: datetime, tz: zoneinfo.ZoneInfo) -> timedelta:
    offset = instant.astimezone(tz).utcoffset()
    assert offset is not None
    return offset


def setback_soon_after(instant: datetime, tz: zoneinfo.ZoneInfo) -> timedelta:
    """A set-back of the clock coming sooner after `instant` than its own size, else zero."""
    try:
        within_a_day = max(timedelta(0), _offset(instant, tz) - _offset(instant + _ONE_DAY, tz))
        return max(timedelta(0), _offset(instant, tz) - _offset(instant + within_a_day, tz))
    except OverflowError:  # at the end of year 9999: no transition left to find
        return timedelta(0)


def setback_shortly_before(instant: datetime, tz: zoneinfo.ZoneInfo) -> timedelta:
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


def candidates(
    wall: datetime, tz: zoneinfo.ZoneInfo, cron: Cron, spec: ScheduleSpec
) -> list[Candidate]:
    """What a matching wall time becomes under the DST policy: fires, and missing fires."""
    # zoneinfo (PEP 495): fold=0 reads a wall time with the offset in force before a
    # transition, fold=1 with the one after; they differ only around a transition.
    first = wall.replace(tzinfo=tz, fold=0).astimezone(UTC)
    second = wall.replace(tzinfo=tz, fold=1).astimezone(UTC)
    if first == second:
        return [Candidate(first, True)]
    if wall_of(first, tz) == wall:
        # The wall time happens twice: the clock was set back over it. In Debian cron a
        # fixed-time job does not run again ("it has probably already run"); a wildcard job
        # follows the wall clock and matches both times.
        if cron.fixed_time and spec.dst_repeated == "once":
            return [Candidate(first, True, DstMark(first, "repeated", "once"))]
        return [Candidate(at, True, DstMark(at, "repeated", "both")) for at in (first, second)]
    # The wall time never happens: the clock jumped forward over it. In Debian cron a
    # fixed-time job whose time was skipped runs right after the jump (once, however many
    # of its times were skipped); a wildcard job just waits for its next wall-clock match.
    jump = _jump_instant(second, first, tz)
    if cron.fixed_time and spec.dst_skipped == "shift":
        return [Candidate(jump, True, DstMark(jump, "shifted", "shift"))]
    return [Candidate(jump, False, DstMark(jump, "skipped", "skip"))]
