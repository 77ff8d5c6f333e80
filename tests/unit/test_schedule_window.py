"""The slots of a window (``fires_between``), as backfill enumerates them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from chalicelib.domain.schedule import ScheduleSpec, fires_between

START = datetime(2026, 1, 1, tzinfo=UTC)


def iso(instants: list[datetime]) -> list[str]:
    return [instant.isoformat() for instant in instants]


def test_window_is_half_open_a_slot_at_start_counts_and_one_at_end_does_not():
    spec = ScheduleSpec(cron="0 * * * *")
    fires = fires_between(spec, START, datetime(2026, 1, 1, 3, tzinfo=UTC), limit=10)
    assert iso(fires) == [
        "2026-01-01T00:00:00+00:00",
        "2026-01-01T01:00:00+00:00",
        "2026-01-01T02:00:00+00:00",
    ]


def test_window_stops_at_limit_so_a_caller_can_detect_too_many_slots():
    spec = ScheduleSpec(cron="* * * * *")
    fires = fires_between(spec, START, datetime(2026, 1, 2, tzinfo=UTC), limit=1001)
    assert len(fires) == 1001
    assert fires[-1].isoformat() == "2026-01-01T16:40:00+00:00"


def test_interval_window_keeps_the_anchor_phase():
    spec = ScheduleSpec(interval_s=3600, anchor_at=datetime(2025, 12, 31, 22, 30, tzinfo=UTC))
    fires = fires_between(spec, START, datetime(2026, 1, 1, 3, tzinfo=UTC), limit=10)
    assert iso(fires) == [
        "2026-01-01T00:30:00+00:00",
        "2026-01-01T01:30:00+00:00",
        "2026-01-01T02:30:00+00:00",
    ]


def test_window_applies_the_dst_policy_of_the_schedule():
    # Europe/Berlin falls back at 2026-10-25 01:00 UTC; 02:30 local happens twice.
    spec = ScheduleSpec(cron="30 2 * * *", timezone="Europe/Berlin", dst_repeated="both")
    start, end = datetime(2026, 10, 25, tzinfo=UTC), datetime(2026, 10, 26, tzinfo=UTC)
    assert iso(fires_between(spec, start, end, limit=10)) == [
        "2026-10-25T00:30:00+00:00",
        "2026-10-25T01:30:00+00:00",
    ]


def test_one_time_schedule_outside_the_window_gives_no_slot():
    spec = ScheduleSpec(at=datetime(2026, 2, 1, tzinfo=UTC))
    assert fires_between(spec, START, datetime(2026, 1, 31, tzinfo=UTC), limit=10) == []


def test_window_refuses_naive_bounds():
    with pytest.raises(ValueError):
        fires_between(ScheduleSpec(cron="0 * * * *"), datetime(2026, 1, 1), START, limit=1)
