"""Schedules at the ends of time: near 9999-12-31 and from 0001-01-01 a preview is shorter,
never an OverflowError."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from chalicelib.domain.schedule import Calendar, ScheduleSpec, describe, fires_between, preview

END = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)


@pytest.mark.parametrize(
    ("spec", "start", "expected"),
    [
        (ScheduleSpec(cron="* * * * *"), "9999-12-31T23:59:00+00:00", []),
        (
            ScheduleSpec(cron="* * * * *"),
            "9999-12-31T23:57:00+00:00",
            ["9999-12-31T23:58:00+00:00", "9999-12-31T23:59:00+00:00"],
        ),
        (
            ScheduleSpec(interval_s=60, anchor_at=datetime(9999, 12, 31, 23, 50, tzinfo=UTC)),
            "9999-12-31T23:57:30+00:00",
            ["9999-12-31T23:58:00+00:00", "9999-12-31T23:59:00+00:00"],
        ),
        (
            ScheduleSpec(cron="0 0 29 2 *"),
            "9996-01-01T00:00:00+00:00",
            ["9996-02-29T00:00:00+00:00"],
        ),
        (ScheduleSpec(cron="0 0 29 2 *"), "9996-03-01T00:00:00+00:00", []),
        # Kiritimati is UTC+14: its 9999-12-31 ends at 09:59:59Z; later there is no wall clock.
        (
            ScheduleSpec(cron="0 * * * *", timezone="Pacific/Kiritimati"),
            "9999-12-31T07:30:00+00:00",
            ["9999-12-31T08:00:00+00:00", "9999-12-31T09:00:00+00:00"],
        ),
        (
            ScheduleSpec(cron="0 * * * *", timezone="Pacific/Kiritimati"),
            "9999-12-31T12:00:00+00:00",
            [],
        ),
    ],
)
def test_previews_near_the_ends_of_time_are_shorter_not_an_error(spec, start, expected):
    fires = preview(spec, start=datetime.fromisoformat(start), count=len(expected) + 1)
    assert [fire.isoformat() for fire in fires] == expected


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        # New York's year 1 started at 04:56:02Z (local mean time): fires from its 01:00.
        (
            ScheduleSpec(cron="0 1 * * *", timezone="America/New_York"),
            ["0001-01-01T05:56:02+00:00", "0001-01-02T05:56:02+00:00"],
        ),
        (
            ScheduleSpec(cron="0 0 1 1 *"),
            ["0002-01-01T00:00:00+00:00", "0003-01-01T00:00:00+00:00"],
        ),
        # Kiritimati's year 1 (local mean time, -10:29:20) starts at 10:29:20Z: its first
        # midnight is that very instant.
        (
            ScheduleSpec(cron="0 0 * * *", timezone="Pacific/Kiritimati"),
            ["0001-01-01T10:29:20+00:00", "0001-01-02T10:29:20+00:00"],
        ),
        (
            ScheduleSpec(interval_s=3600, anchor_at=datetime(1, 1, 1, tzinfo=UTC)),
            ["0001-01-01T01:00:00+00:00", "0001-01-01T02:00:00+00:00"],
        ),
    ],
)
def test_previews_from_year_1_start_at_its_first_fire(spec, expected):
    fires = preview(spec, start=datetime(1, 1, 1, tzinfo=UTC), count=2)
    assert [fire.isoformat() for fire in fires] == expected


def test_a_window_to_the_end_of_time_ends_with_year_9999():
    fires = fires_between(
        ScheduleSpec(cron="0 0 * * *"), datetime(9999, 12, 29, tzinfo=UTC), END, limit=10
    )
    assert [fire.isoformat() for fire in fires] == [
        "9999-12-29T00:00:00+00:00",
        "9999-12-30T00:00:00+00:00",
        "9999-12-31T00:00:00+00:00",
    ]


def test_a_one_time_schedule_past_the_end_of_its_zones_calendar_is_described_in_utc():
    spec = ScheduleSpec(at=datetime(9999, 12, 31, 23, tzinfo=UTC), timezone="Pacific/Kiritimati")
    assert describe(spec) == "Once at 9999-12-31 23:00 UTC"


def test_a_one_time_schedule_in_year_1_is_described_with_a_four_digit_year():
    assert (
        describe(ScheduleSpec(at=datetime(1, 1, 1, 9, tzinfo=UTC)))
        == "Once at 0001-01-01 09:00 UTC"
    )


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (-62135596800000, "0001-01-01T00:00:00.000Z"),
        (253402300799999, "9999-12-31T23:59:59.999Z"),
        (1796083200123, "2026-12-01T00:00:00.123Z"),
    ],
)
def test_instants_are_shown_with_four_digit_years_and_exact_milliseconds(ms, text):
    from chalicelib.services.runs import iso_ms
    from chalicelib.workflows import _iso

    assert iso_ms(ms) == text
    assert _iso(datetime.fromisoformat(text)) == text


NEXT_BUSINESS_DAY = Calendar(holidays=("US",), on_holiday="next_business_day")


@pytest.mark.parametrize(
    ("spec", "start", "expected"),
    [
        # Etc/GMT+12 is UTC-12: the last business day of December 9999 at 23:59 would be
        # 10000-01-01T11:59Z; November's is the last slot there is.
        (
            ScheduleSpec(business_day=-1, time="23:59", timezone="Etc/GMT+12"),
            "9999-11-01T00:00:00+00:00",
            ["9999-12-01T11:59:00+00:00"],
        ),
        (
            ScheduleSpec(business_day=1, time="00:00", timezone="Etc/GMT+12"),
            "9999-11-01T00:00:00+00:00",
            ["9999-11-01T12:00:00+00:00", "9999-12-01T12:00:00+00:00"],
        ),
        # A calendar that moves slots looks for business days after the last one there is.
        (
            ScheduleSpec(cron="0 0 31 12 *", timezone="Etc/GMT+12", calendar=NEXT_BUSINESS_DAY),
            "9999-12-01T00:00:00+00:00",
            ["9999-12-31T12:00:00+00:00"],
        ),
        (
            ScheduleSpec(
                cron="0 0 * * *",
                timezone="Etc/GMT+12",
                calendar=Calendar(
                    exclude_dates=frozenset({date(9999, 12, 30), date(9999, 12, 31)}),
                    on_holiday="next_business_day",
                ),
            ),
            "9999-12-28T00:00:00+00:00",
            ["9999-12-28T12:00:00+00:00", "9999-12-29T12:00:00+00:00"],
        ),
        # And before the first day there is, for one that moves slots from days before.
        (
            ScheduleSpec(
                cron="0 12 * * *",
                calendar=Calendar(
                    exclude_dates=frozenset({date(1, 1, 1)}), on_holiday="next_business_day"
                ),
            ),
            "0001-01-01T00:00:00+00:00",
            ["0001-01-02T12:00:00+00:00", "0001-01-03T12:00:00+00:00"],
        ),
    ],
)
def test_business_days_and_moving_calendars_near_the_ends_of_time_are_shorter_not_an_error(
    spec, start, expected
):
    fires = preview(spec, start=datetime.fromisoformat(start), count=len(expected))
    assert [fire.isoformat() for fire in fires] == expected
    if expected[-1].startswith("9999"):
        assert preview(spec, start=fires[-1], count=1) == []
