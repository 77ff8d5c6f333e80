"""Properties of previews under calendars and lists of crons (hypothesis).

A preview never lists an instant twice, never lists a slot on a date its calendar removes,
and lists exactly the slots a brute-force reading of the same rules gives: every fire of
the crons, each on a removed date dropped or moved to the same wall time on the next or
previous business day.
"""

from __future__ import annotations

import zoneinfo
from datetime import UTC, date, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from chalicelib.domain.schedule import Calendar, ScheduleSpec, preview
from chalicelib.domain.schedule.calendars import (
    next_business_day,
    previous_business_day,
    removal,
)

# Fixed times away from 02:00-03:00, so that no DST change decides a slot here (that is
# test_schedule_dst's business) and the brute force can read wall times plainly.
CRONS = ["0 9 * * *", "30 12 * * 1-5", "0 9 * * 5", "15 7,18 * * *", "0 10 1,15 * *", "0 9 L * *"]
ZONES = ["Europe/Berlin", "America/New_York", "UTC"]
CODES = ["DE", "DE-BY", "US", "US-NY"]

calendars = st.builds(
    Calendar,
    holidays=st.lists(st.sampled_from(CODES), max_size=2, unique=True).map(tuple),
    exclude_dates=st.frozensets(
        st.dates(min_value=date(2026, 1, 1), max_value=date(2027, 12, 31)), max_size=20
    ),
    business_days=st.frozensets(st.integers(1, 7), min_size=1).filter(lambda d: len(d) >= 3),
    on_holiday=st.sampled_from(["skip", "next_business_day", "previous_business_day"]),
)
starts = st.datetimes(
    min_value=datetime(2026, 1, 1), max_value=datetime(2027, 10, 1), timezones=st.just(UTC)
)


def brute_force(spec: ScheduleSpec, start: datetime, end: datetime) -> list[datetime]:
    """The calendar's rules read plainly over the crons' raw fires around the window."""
    assert spec.calendar is not None
    tz = zoneinfo.ZoneInfo(spec.timezone)
    raw = ScheduleSpec(cron=spec.cron, also=spec.also, timezone=spec.timezone)
    out = set()
    at = preview(raw, start=start - timedelta(days=45), count=1)[0]
    while at <= end + timedelta(days=45):
        local = at.astimezone(tz)
        day = local.date()
        target: date | None = day
        if removal(spec.calendar, day) is not None:
            target = {
                "skip": lambda d: None,
                "next_business_day": lambda d: next_business_day(spec.calendar, d),
                "previous_business_day": lambda d: previous_business_day(spec.calendar, d),
            }[spec.calendar.on_holiday](day)
        if target is not None:
            moved = datetime.combine(target, local.time().replace(tzinfo=None), tzinfo=tz)
            if start < moved.astimezone(UTC) <= end:
                out.add(moved.astimezone(UTC))
        at = preview(raw, start=at, count=1)[0]
    return sorted(out)


@settings(max_examples=120, deadline=None)
@given(
    crons=st.lists(st.sampled_from(CRONS), min_size=1, max_size=3, unique=True),
    zone=st.sampled_from(ZONES),
    calendar=calendars,
    start=starts,
    count=st.integers(1, 25),
)
def test_a_preview_lists_each_instant_once_and_never_a_removed_slot(
    crons, zone, calendar, start, count
):
    spec = ScheduleSpec(cron=crons[0], also=tuple(crons[1:]), timezone=zone, calendar=calendar)
    fires = preview(spec, start=start, count=count)
    assert fires == sorted(set(fires)), "an instant listed twice, or out of order"
    tz = zoneinfo.ZoneInfo(zone)
    assert all(removal(calendar, f.astimezone(tz).date()) is None for f in fires)
    assert all(f > start for f in fires)
    if fires:
        expected = brute_force(spec, start, fires[-1])
        assert fires == expected[: len(fires)]
