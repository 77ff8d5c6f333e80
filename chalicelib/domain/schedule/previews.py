"""Many fires at once: the next N after an instant, and the fires inside a window."""

from __future__ import annotations

from datetime import datetime, timedelta

from chalicelib.domain.errors import ValidationError
from chalicelib.domain.schedule.cadence import CalendarMark
from chalicelib.domain.schedule.dst import DstMark
from chalicelib.domain.schedule.fires import next_fire_after, next_step
from chalicelib.domain.schedule.model import ScheduleSpec

__all__ = [
    "MAX_PREVIEW",
    "SLOTS_DIFF_SCAN",
    "preview",
    "preview_marked",
    "preview_steps",
    "fires_between",
    "slots_diff",
]

# Slots of each schedule read for a diff; a faster schedule's diff says it was cut short.
SLOTS_DIFF_SCAN = 2000

MAX_PREVIEW = 100


def _check_count(count: int) -> None:
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_PREVIEW:
        raise ValidationError(f"count must be between 1 and {MAX_PREVIEW}", field="count")


def preview_steps(
    spec: ScheduleSpec, *, start: datetime, count: int
) -> tuple[list[datetime], list[DstMark], list[CalendarMark]]:
    """The next `count` fires strictly after `start` (fewer if the schedule ends before
    year 10000), the DST marks of those fires and of the fires missing between them, and
    the slots a calendar removed or moved before the last of them (in order)."""
    _check_count(count)
    fires: list[datetime] = []
    marks: list[DstMark] = []
    calendar: dict[datetime, CalendarMark] = {}
    after = start
    while len(fires) < count:
        step = next_step(spec, after, marks=True)
        if step.fire is None:
            break
        calendar.update((mark.at, mark) for mark in step.calendar)
        after = step.fire
        if step.fire in spec.skips:  # recorded skipped when it comes, never run
            calendar[step.fire] = CalendarMark(step.fire, "skipped", None)
            continue
        if step.fire in spec.extras:
            calendar[step.fire] = CalendarMark(step.fire, "extra", None)
        fires.append(step.fire)
        marks.extend(step.dst)
    last = fires[-1] if fires else None
    kept = [m for at, m in sorted(calendar.items()) if last is None or at <= last]
    return fires, marks, kept


def preview_marked(
    spec: ScheduleSpec, *, start: datetime, count: int
) -> tuple[list[datetime], list[DstMark]]:
    """The next `count` fires strictly after `start` (fewer if the schedule ends before
    year 10000), and the DST marks of those fires and of the fires missing between them."""
    fires, marks, _ = preview_steps(spec, start=start, count=count)
    return fires, marks


def preview(spec: ScheduleSpec, *, start: datetime, count: int) -> list[datetime]:
    """The next `count` fires strictly after `start` (fewer if the schedule ends)."""
    return preview_marked(spec, start=start, count=count)[0]


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


def slots_diff(
    old: ScheduleSpec | None, new: ScheduleSpec, start: datetime, end: datetime
) -> tuple[list[datetime], list[datetime], bool]:
    """The slots in ``(start, end)`` the new schedule adds and the old one loses, in order,
    and whether either schedule had more than ``SLOTS_DIFF_SCAN`` slots there (the lists
    then cover only the first ones)."""
    after = start + timedelta(microseconds=1)
    new_slots = fires_between(new, after, end, limit=SLOTS_DIFF_SCAN + 1)
    old_slots = fires_between(old, after, end, limit=SLOTS_DIFF_SCAN + 1) if old else []
    cut = len(new_slots) > SLOTS_DIFF_SCAN or len(old_slots) > SLOTS_DIFF_SCAN
    if cut:
        # Only a list that was cut short ends early; the other holds every slot of the
        # window (and may hold fewer than SLOTS_DIFF_SCAN: a sparse schedule).
        horizon = min(
            s[SLOTS_DIFF_SCAN - 1] for s in (new_slots, old_slots) if len(s) > SLOTS_DIFF_SCAN
        )
        new_slots = [s for s in new_slots if s <= horizon]
        old_slots = [s for s in old_slots if s <= horizon]
    kept_new, kept_old = set(new_slots), set(old_slots)
    added = [s for s in new_slots if s not in kept_old]
    removed = [s for s in old_slots if s not in kept_new]
    return added, removed, cut
