"""The next fire outside DST: cron in UTC and on a zone's clock, intervals, one-time instants, clamp.

DST behaviour has its own file, ``test_schedule_dst.py``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from chalicelib.domain.errors import ValidationError
from chalicelib.domain.schedule import ScheduleSpec, clamp_next_fire, next_fire_after, preview

NOW = datetime(2026, 6, 10, 12, 0, tzinfo=UTC)  # a Wednesday


def iso(instants: list[datetime]) -> list[str]:
    return [instant.isoformat() for instant in instants]


# --- cron -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cron", "after", "expected"),
    [
        ("0 8 * * *", "2026-06-10T12:00:00+00:00", "2026-06-11T08:00:00+00:00"),
        ("*/15 * * * *", "2026-06-10T12:07:30+00:00", "2026-06-10T12:15:00+00:00"),
        ("0 9 * * mon-fri", "2026-06-12T09:00:00+00:00", "2026-06-15T09:00:00+00:00"),
        ("0 0 29 2 *", "2026-06-10T12:00:00+00:00", "2028-02-29T00:00:00+00:00"),
        ("@hourly", "2026-06-10T12:00:00+00:00", "2026-06-10T13:00:00+00:00"),
        ("@daily", "2026-06-10T12:00:00+00:00", "2026-06-11T00:00:00+00:00"),
        ("@weekly", "2026-06-10T12:00:00+00:00", "2026-06-14T00:00:00+00:00"),
        ("@monthly", "2026-06-10T12:00:00+00:00", "2026-07-01T00:00:00+00:00"),
        ("@yearly", "2026-06-10T12:00:00+00:00", "2027-01-01T00:00:00+00:00"),
    ],
)
def test_cron_next_fire_in_utc(cron, after, expected):
    fire = next_fire_after(ScheduleSpec(cron=cron), datetime.fromisoformat(after))
    assert fire is not None
    assert fire.isoformat() == expected


def test_cron_next_fire_is_strictly_after_a_fire():
    spec = ScheduleSpec(cron="0 8 * * *")
    fire = next_fire_after(spec, datetime(2026, 6, 10, 8, 0, tzinfo=UTC))
    assert fire == datetime(2026, 6, 11, 8, 0, tzinfo=UTC)


def test_cron_is_evaluated_on_the_wall_clock_of_its_timezone():
    spec = ScheduleSpec(cron="0 8 * * *", timezone="Asia/Tokyo")
    fire = next_fire_after(spec, NOW)
    assert fire is not None
    assert fire.isoformat() == "2026-06-10T23:00:00+00:00"
    assert fire.astimezone(ZoneInfo("Asia/Tokyo")).isoformat() == "2026-06-11T08:00:00+09:00"


def test_after_in_another_offset_gives_an_answer_in_utc():
    spec = ScheduleSpec(cron="0 8 * * *")
    fire = next_fire_after(spec, datetime.fromisoformat("2026-06-10T09:00:00+02:00"))  # 07:00Z
    assert fire is not None
    assert fire.tzinfo is UTC
    assert fire.isoformat() == "2026-06-10T08:00:00+00:00"


def test_next_fire_after_refuses_a_naive_instant():
    with pytest.raises(ValueError):
        next_fire_after(ScheduleSpec(cron="0 8 * * *"), datetime(2026, 6, 10, 12))


# --- interval -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("after", "expected"),
    [
        # anchor 10:00:00, every 15 minutes: 10:15, 10:30, ...
        ("2026-06-10T10:00:00+00:00", "2026-06-10T10:15:00+00:00"),
        ("2026-06-10T10:14:59+00:00", "2026-06-10T10:15:00+00:00"),
        ("2026-06-10T10:15:00+00:00", "2026-06-10T10:30:00+00:00"),
        # Down from 10:15 to 13:05: the next fire is the first slot after now, not 10:30.
        ("2026-06-10T13:05:00+00:00", "2026-06-10T13:15:00+00:00"),
        # Before the anchor: the anchor is the creation, the first slot comes after it.
        ("2026-06-10T09:00:00+00:00", "2026-06-10T10:15:00+00:00"),
    ],
)
def test_interval_fires_on_slots_counted_from_the_anchor(after, expected):
    spec = ScheduleSpec(interval_s=900, anchor_at=datetime(2026, 6, 10, 10, 0, tzinfo=UTC))
    fire = next_fire_after(spec, datetime.fromisoformat(after))
    assert fire is not None
    assert fire.isoformat() == expected


def test_interval_fires_once_after_three_hours_down_not_once_per_missed_slot():
    spec = ScheduleSpec(interval_s=900, anchor_at=datetime(2026, 6, 10, 10, 0, tzinfo=UTC))
    last_fire = datetime(2026, 6, 10, 10, 0, tzinfo=UTC)
    now = last_fire + timedelta(hours=3, minutes=5)
    due = [
        fire for fire in preview(spec, start=now, count=12) if fire <= now + timedelta(minutes=15)
    ]
    assert iso(due) == ["2026-06-10T13:15:00+00:00"]


def test_interval_without_anchor_counts_from_after():
    spec = ScheduleSpec(interval_s=90)
    fire = next_fire_after(spec, datetime(2026, 6, 10, 12, 0, 0, 500_000, tzinfo=UTC))
    assert fire == datetime(2026, 6, 10, 12, 1, 30, 500_000, tzinfo=UTC)


def test_interval_slots_keep_the_anchor_phase_to_the_microsecond():
    spec = ScheduleSpec(
        interval_s=60, anchor_at=datetime(2026, 6, 10, 0, 0, 0, 250_000, tzinfo=UTC)
    )
    assert iso(preview(spec, start=NOW, count=2)) == [
        "2026-06-10T12:00:00.250000+00:00",
        "2026-06-10T12:01:00.250000+00:00",
    ]


# --- at -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("at", "expected"),
    [
        (NOW + timedelta(hours=1), NOW + timedelta(hours=1)),
        (NOW, None),
        (NOW - timedelta(seconds=1), None),
    ],
)
def test_at_fires_only_if_it_is_still_ahead(at, expected):
    assert next_fire_after(ScheduleSpec(at=at), NOW) == expected


def test_at_given_in_another_offset_fires_in_utc():
    at = datetime.fromisoformat("2026-12-01T10:00:00+01:00")
    fire = next_fire_after(ScheduleSpec(at=at), NOW)
    assert fire is not None
    assert fire.isoformat() == "2026-12-01T09:00:00+00:00"


# --- clamp_next_fire ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requested", "min_ahead_s", "expected"),
    [
        (NOW - timedelta(hours=1), 1.0, (NOW + timedelta(seconds=1), True)),
        (NOW, 1.0, (NOW + timedelta(seconds=1), True)),
        (NOW + timedelta(milliseconds=999), 1.0, (NOW + timedelta(seconds=1), True)),
        (NOW + timedelta(seconds=1), 1.0, (NOW + timedelta(seconds=1), False)),
        (NOW + timedelta(hours=1), 1.0, (NOW + timedelta(hours=1), False)),
        (NOW + timedelta(seconds=30), 60.0, (NOW + timedelta(seconds=60), True)),
    ],
)
def test_clamp_keeps_a_returned_next_fire_at_least_min_ahead_of_now(
    requested, min_ahead_s, expected
):
    assert clamp_next_fire(requested, now=NOW, min_ahead_s=min_ahead_s) == expected


def test_clamp_returns_utc_for_a_requested_instant_in_another_offset():
    requested = datetime.fromisoformat("2026-06-10T16:00:00+02:00")
    instant, clamped = clamp_next_fire(requested, now=NOW)
    assert (instant.isoformat(), clamped) == ("2026-06-10T14:00:00+00:00", False)


def test_clamp_refuses_a_naive_requested_instant():
    with pytest.raises(ValidationError) as raised:
        clamp_next_fire(datetime(2026, 6, 10, 14), now=NOW)
    assert raised.value.field == "next_fire_at"
