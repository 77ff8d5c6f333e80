"""The next fire of a schedule after an instant: cron (on the wall clock), interval, at.

The time is always an argument, never read here; every instant in and out is aware UTC.
"""

from __future__ import annotations

import zoneinfo
from datetime import UTC, datetime, timedelta

from chalicelib.domain.schedule.cadence import (
    Step,
    business_day_next,
    calendar_next,
    union_next,
)
from chalicelib.domain.schedule.cron import parse_cron
from chalicelib.domain.schedule.dst import (
    Candidate,
    DstMark,
    candidates,
    setback_shortly_before,
    setback_soon_after,
)
from chalicelib.domain.schedule.model import ScheduleSpec, one_kind, require_aware
from chalicelib.domain.schedule.wall import next_wall
from chalicelib.domain.schedule.zones import wall_of, zone

__all__ = ["next_fire_after", "next_fire_marked", "next_step", "clamp_next_fire"]

# A cron whose every match is skipped ("30 2 * 3 0L" in Berlin with dst_skipped="skip")
# would otherwise search forever. The rarest day a cron can name, Feb 29 on a given
# weekday, comes at most 40 years apart (28, or 40 across 2100); a century is ample.
_HORIZON = timedelta(days=36_525)
_MINUTE = timedelta(minutes=1)


def _start_wall(after: datetime, tz: zoneinfo.ZoneInfo) -> tuple[datetime, bool] | None:
    """Where the walk over wall times starts, and whether that first minute counts itself.

    The wall time of `after`, moved back by a set-back coming soon after it; None past
    the end of year 9999 on this zone's clock.
    """
    wall = wall_of(after, tz)
    from_first_minute = wall is None
    if wall is None:
        if after.year > 1:
            return None  # past the end of year 9999 on this zone's clock
        wall = datetime.min  # before year 1 on this zone's clock: start at its first minute
    wall -= min(setback_soon_after(after, tz), wall - datetime.min)
    return wall, from_first_minute


def _next_cron_fire(
    spec: ScheduleSpec, cron_text: str, after: datetime
) -> tuple[datetime | None, list[DstMark]]:
    """The first cron fire after `after`, and the DST marks up to it, walking wall times.

    1. Start at the wall time of `after`, moved back by a set-back coming soon after it:
       the clock then shows earlier wall times again, as later instants.
    2. Map each matching wall time to its instants under the DST policy (``candidates``).
    3. Keep the earliest fire after `after`. A later wall time can still be an earlier
       instant when the clock is set back shortly before that instant, so go on until the
       wall time passes the earliest's wall time plus that set-back (usually at once).
    4. Mark the fire if a transition decided it, and every missing fire (skipped) between
       `after` and it, once per jump.
    """
    cron = parse_cron(cron_text)
    tz = zone(spec.timezone)
    start = _start_wall(after, tz)
    if start is None:
        return None, []
    wall, from_first_minute = start
    earliest: Candidate | None = None
    skipped: dict[datetime, DstMark] = {}
    stop_after = _add_capped(wall, _HORIZON)
    while (found := next_wall(cron, wall, inclusive=from_first_minute)) is not None:
        if found > stop_after:
            break
        wall, from_first_minute = found, False
        try:
            found_candidates = candidates(wall, tz, cron, spec)
        except OverflowError:  # this wall time has no instant inside years 1-9999
            if wall.year > 1:
                break
            continue
        for candidate in found_candidates:
            if candidate.instant <= after:
                continue
            if not candidate.fires:
                assert candidate.mark is not None
                skipped.setdefault(candidate.instant, candidate.mark)
                # Every later wall time in this gap is skipped too: go on from its end.
                after_gap = wall_of(candidate.instant, tz)
                if after_gap is not None:
                    wall = max(wall, after_gap - _MINUTE)
            elif earliest is None or candidate.instant < earliest.instant:
                earliest = candidate
                earliest_wall = wall_of(candidate.instant, tz) or wall
                stop_after = earliest_wall + setback_shortly_before(candidate.instant, tz)
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


def next_step(spec: ScheduleSpec, after: datetime, *, marks: bool = False) -> Step:
    """The first fire strictly after `after`, the DST marks that decided it or lie before,
    and (with `marks`) the slots a calendar removed or moved on the way.

    The one function every caller of the schedule goes through: the heartbeat, the claim,
    previews, backfill and the simulator.
    """
    if after.utcoffset() is None:
        raise ValueError("after must be an aware datetime")
    step = _cadence_step(spec, after, marks=marks)
    extra = min((at for at in spec.extras if at > after), default=None)
    if extra is not None and (step.fire is None or extra < step.fire):
        # A one-off extra instant before the cadence's next fire.
        passed = [mark for mark in step.calendar if mark.at < extra]
        return Step(extra.astimezone(UTC), [], passed)
    return step


def _cadence_step(spec: ScheduleSpec, after: datetime, *, marks: bool) -> Step:
    kind = one_kind(spec)
    if kind == "cron" and spec.calendar is not None:
        return calendar_next(spec, after, _next_cron_fire, marks=marks)
    if kind == "cron" and spec.also:
        return Step(*union_next(spec, after, _next_cron_fire), [])
    if kind == "cron":
        assert spec.cron is not None
        return Step(*_next_cron_fire(spec, spec.cron, after), [])
    if kind == "business_day":
        return business_day_next(spec, after)
    if spec.interval_s is not None:
        return Step(_next_interval_fire(spec, spec.interval_s, after), [], [])
    assert spec.at is not None
    return Step(spec.at.astimezone(UTC) if spec.at > after else None, [], [])


def next_fire_marked(spec: ScheduleSpec, after: datetime) -> tuple[datetime | None, list[DstMark]]:
    """The first fire strictly after `after`, and the DST marks that decided it or lie before."""
    step = next_step(spec, after)
    return step.fire, step.dst


def next_fire_after(spec: ScheduleSpec, after: datetime) -> datetime | None:
    """The first fire instant strictly after `after` (aware UTC), or None if there is none."""
    return next_fire_marked(spec, after)[0]


def clamp_next_fire(
    requested: datetime, *, now: datetime, min_ahead_s: float = 1.0
) -> tuple[datetime, bool]:
    """Clamp a workflow-returned next_fire_at to at least now + min_ahead_s; (instant, clamped)."""
    require_aware(requested, "next_fire_at")
    earliest = now + timedelta(seconds=min_ahead_s)
    if requested < earliest:
        return earliest.astimezone(UTC), True
    return requested.astimezone(UTC), False
