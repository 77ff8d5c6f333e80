"""Calendars, business days and lists of crons, against real 2026-2027 calendars.

The holidays are the ``holidays`` package's (pinned); the dates below were checked
against the public calendars of Germany, Bavaria and the United States.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from chalicelib.domain.errors import ValidationError
from chalicelib.domain.schedule import (
    Calendar,
    ScheduleSpec,
    next_fire_after,
    preview,
    preview_steps,
    validate_schedule,
)
from chalicelib.domain.schedule.calendars import (
    holiday_name,
    is_business_day,
    nth_business_day,
    removal,
)


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def iso(instant: datetime) -> str:
    return instant.astimezone(UTC).isoformat().replace("+00:00", "Z")


def cal(*codes: str, **kwargs) -> Calendar:
    if "exclude_dates" in kwargs:
        kwargs["exclude_dates"] = frozenset(date.fromisoformat(d) for d in kwargs["exclude_dates"])
    return Calendar(holidays=codes, **kwargs)


@pytest.mark.parametrize(
    ("code", "day", "name"),
    [
        ("DE", "2026-04-03", "Good Friday"),
        ("DE", "2026-10-03", "German Unity Day"),
        ("DE", "2026-01-06", None),  # Epiphany: Bavaria's, not the nation's
        ("DE-BY", "2026-01-06", "Epiphany"),
        ("DE-BY", "2026-06-04", "Corpus Christi"),
        ("DE-BY", "2027-05-27", "Corpus Christi"),
        ("DE-BY", "2027-11-01", "All Saints' Day"),
        ("US", "2026-07-03", "Independence Day (observed)"),  # July 4th is a Saturday
        ("US", "2026-11-26", "Thanksgiving Day"),
        ("US", "2027-05-31", "Memorial Day"),
        ("US", "2027-12-31", "New Year's Day (observed)"),
        ("US", "2026-12-24", None),
        ("US-NY", "2026-02-12", "Lincoln's Birthday"),
    ],
)
def test_public_holidays_come_from_the_holidays_package_by_country_and_subdivision(code, day, name):
    assert holiday_name(cal(code), date.fromisoformat(day)) == name


@pytest.mark.parametrize(
    ("calendar", "day", "expected"),
    [
        (cal("DE"), "2026-12-25", ("holiday", "Christmas Day")),
        (cal("DE", exclude_dates=["2026-12-24"]), "2026-12-24", ("excluded", None)),
        (cal("DE", exclude_dates=["2026-12-25"]), "2026-12-25", ("excluded", "Christmas Day")),
        (cal("DE"), "2026-12-27", None),  # a Sunday that is no holiday is not removed
        (cal(), "2026-12-25", None),  # no codes: no holidays
        (cal("US", "DE"), "2026-10-03", ("holiday", "German Unity Day")),
    ],
)
def test_a_calendar_removes_its_holidays_and_excluded_dates(calendar, day, expected):
    assert removal(calendar, date.fromisoformat(day)) == expected


@pytest.mark.parametrize(
    ("calendar", "year", "month", "n", "expected"),
    [
        # January 2026: the 1st (Thu) is New Year's Day; in Bavaria the 6th is Epiphany.
        (cal("DE"), 2026, 1, 1, "2026-01-02"),
        (cal("DE"), 2026, 1, 3, "2026-01-06"),
        (cal("DE-BY"), 2026, 1, 3, "2026-01-07"),
        (cal("DE-BY"), 2026, 1, -1, "2026-01-30"),
        # April 2026: Good Friday the 3rd and Easter Monday the 6th.
        (cal("DE"), 2026, 4, 1, "2026-04-01"),
        (cal("DE"), 2026, 4, 3, "2026-04-07"),
        # A month whose last weekday is a holiday: US Memorial Day, 2027-05-31 (Mon).
        (cal("US"), 2027, 5, -1, "2027-05-28"),
        (cal("DE"), 2027, 5, -1, "2027-05-31"),
        # New Year's Day 2028 is a Saturday: the US observes it on Friday 2027-12-31.
        (cal("US"), 2027, 12, -1, "2027-12-30"),
        (cal("US"), 2027, 12, -2, "2027-12-29"),
        # An excluded date at the month's end.
        (cal("DE", exclude_dates=["2026-12-31"]), 2026, 12, -1, "2026-12-30"),
        # Saturday as a business day.
        (cal("DE", business_days=frozenset({1, 2, 3, 4, 5, 6})), 2026, 10, 1, "2026-10-01"),
        (cal("DE", business_days=frozenset({6})), 2026, 10, 1, "2026-10-10"),  # the 3rd: Unity
        # More business days asked than the month has: none.
        (cal("DE"), 2026, 2, 21, None),
        (cal("DE"), 2026, 2, 20, "2026-02-27"),
    ],
)
def test_the_nth_business_day_of_a_month_counts_holidays_out(calendar, year, month, n, expected):
    found = nth_business_day(calendar, year, month, n)
    assert (found.isoformat() if found else None) == expected


def test_a_business_day_is_a_business_weekday_not_removed():
    bavaria = cal("DE-BY")
    assert not is_business_day(bavaria, date(2026, 1, 6))  # Epiphany, a Tuesday
    assert not is_business_day(bavaria, date(2026, 1, 10))  # a Saturday
    assert is_business_day(bavaria, date(2026, 1, 7))


BERLIN = "Europe/Berlin"


def cron_spec(cron: str, calendar: Calendar | None, *also: str, tz: str = BERLIN) -> ScheduleSpec:
    return ScheduleSpec(cron=cron, also=also, timezone=tz, calendar=calendar)


@pytest.mark.parametrize(
    ("on_holiday", "start", "expected"),
    [
        # Daily 09:00 in Berlin around Christmas 2026 (Fri 25th and Sat 26th are holidays).
        (
            "skip",
            "2026-12-23T12:00:00Z",
            ["2026-12-24T08:00:00Z", "2026-12-27T08:00:00Z", "2026-12-28T08:00:00Z"],
        ),
        # Moved to Monday the 28th, where the day's own 09:00 is: one fire for the instant.
        (
            "next_business_day",
            "2026-12-23T12:00:00Z",
            ["2026-12-24T08:00:00Z", "2026-12-27T08:00:00Z", "2026-12-28T08:00:00Z"],
        ),
        (
            "previous_business_day",
            "2026-12-23T12:00:00Z",
            ["2026-12-24T08:00:00Z", "2026-12-27T08:00:00Z", "2026-12-28T08:00:00Z"],
        ),
    ],
)
def test_a_daily_cron_skips_holidays_and_a_move_onto_its_own_slot_fires_once(
    on_holiday, start, expected
):
    spec = cron_spec("0 9 * * *", cal("DE", on_holiday=on_holiday))
    assert [iso(f) for f in preview(spec, start=utc(start), count=3)] == expected


@pytest.mark.parametrize(
    ("on_holiday", "expected"),
    [
        # Weekly Friday 09:00: Good Friday 2026-04-03 and Christmas 2026-12-25 are holidays.
        ("skip", ["2026-03-27T08:00:00Z", "2026-04-10T07:00:00Z"]),
        ("next_business_day", ["2026-03-27T08:00:00Z", "2026-04-07T07:00:00Z"]),  # Mon 6th too
        ("previous_business_day", ["2026-03-27T08:00:00Z", "2026-04-02T07:00:00Z"]),
    ],
)
def test_a_weekly_slot_on_good_friday_is_skipped_or_moved_in_its_own_wall_time(
    on_holiday, expected
):
    # Berlin moved to summer time on 2026-03-29: 09:00 is 08:00Z before and 07:00Z after.
    spec = cron_spec("0 9 * * 5", cal("DE", on_holiday=on_holiday))
    assert [iso(f) for f in preview(spec, start=utc("2026-03-26T00:00:00Z"), count=2)] == (expected)


def test_preview_marks_each_removed_or_moved_slot_with_the_holiday_name():
    spec = cron_spec("0 9 * * 5", cal("DE", on_holiday="next_business_day"))
    fires, _dst, marks = preview_steps(spec, start=utc("2026-12-20T00:00:00Z"), count=2)
    assert [iso(f) for f in fires] == ["2026-12-28T08:00:00Z", "2027-01-04T08:00:00Z"]
    assert [(iso(m.at), m.change, m.name, m.moved_to and iso(m.moved_to)) for m in marks] == [
        ("2026-12-25T08:00:00Z", "moved", "Christmas Day", "2026-12-28T08:00:00Z"),
        ("2027-01-01T08:00:00Z", "moved", "New Year's Day", "2027-01-04T08:00:00Z"),
    ]


def test_preview_marks_an_excluded_date_and_a_skipped_holiday():
    spec = cron_spec("0 9 * * *", cal("US", exclude_dates=["2026-12-24"]), tz="America/New_York")
    fires, _dst, marks = preview_steps(spec, start=utc("2026-12-23T15:00:00Z"), count=2)
    assert [iso(f) for f in fires] == ["2026-12-26T14:00:00Z", "2026-12-27T14:00:00Z"]
    assert [(iso(m.at), m.change, m.name) for m in marks] == [
        ("2026-12-24T14:00:00Z", "excluded", None),
        ("2026-12-25T14:00:00Z", "holiday", "Christmas Day"),
    ]


def test_a_moved_slot_keeps_its_wall_time_across_a_dst_change():
    # Good Friday 2027 is 03-26, before Berlin's change on 03-28; moved to Tuesday 03-30
    # (Easter Monday the 29th is a holiday too) it is still 09:00 Berlin, now 07:00Z.
    spec = cron_spec("0 9 26 3 *", cal("DE", on_holiday="next_business_day"))
    assert iso(next_fire_after(spec, utc("2027-01-01T00:00:00Z"))) == "2027-03-30T07:00:00Z"


@pytest.mark.parametrize(
    ("crons", "start", "expected"),
    [
        # Daily 09:00 and Monday 09:00: Monday's instant fires once.
        (
            ("0 9 * * *", "0 9 * * 1"),
            "2026-06-07T00:00:00Z",
            ["2026-06-07T07:00:00Z", "2026-06-08T07:00:00Z", "2026-06-09T07:00:00Z"],
        ),
        # Every quarter hour and every half hour: the half hours once.
        (
            ("*/15 * * * *", "0,30 * * * *"),
            "2026-06-07T10:00:00Z",
            ["2026-06-07T10:15:00Z", "2026-06-07T10:30:00Z", "2026-06-07T10:45:00Z"],
        ),
        # Weekdays at 09:00 and Saturdays at 12:00.
        (
            ("0 9 * * 1-5", "0 12 * * 6"),
            "2026-06-05T08:00:00Z",
            ["2026-06-06T10:00:00Z", "2026-06-08T07:00:00Z", "2026-06-09T07:00:00Z"],
        ),
    ],
)
def test_a_list_of_crons_is_a_union_firing_once_per_instant(crons, start, expected):
    spec = cron_spec(crons[0], None, *crons[1:])
    assert [iso(f) for f in preview(spec, start=utc(start), count=3)] == expected


def test_a_union_of_crons_in_the_autumn_repeats_a_shared_instant_once():
    # 2026-10-25 02:30 happens twice in Berlin; both crons name it, "once" keeps the first.
    spec = cron_spec("30 2 * * *", None, "30 2 25 10 *")
    fires = preview(spec, start=utc("2026-10-24T12:00:00Z"), count=2)
    assert [iso(f) for f in fires] == ["2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"]


@pytest.mark.parametrize(
    ("n", "calendar", "start", "expected"),
    [
        # The 3rd business day at 09:00 Berlin: Bavaria's Epiphany moves January's to the 7th.
        (3, cal("DE-BY"), "2026-01-01T00:00:00Z", ["2026-01-07T08:00:00Z", "2026-02-04T08:00:00Z"]),
        (3, cal("DE"), "2026-01-01T00:00:00Z", ["2026-01-06T08:00:00Z", "2026-02-04T08:00:00Z"]),
        # The last business day: March 2026 ends on a Tuesday in summer time (07:00Z).
        (-1, cal("DE"), "2026-02-27T09:00:00Z", ["2026-03-31T07:00:00Z", "2026-04-30T07:00:00Z"]),
        # Starting on the day itself, before its time: that day counts.
        (-1, cal("DE"), "2026-02-27T07:00:00Z", ["2026-02-27T08:00:00Z", "2026-03-31T07:00:00Z"]),
        # No calendar: Monday to Friday, no holidays.
        (1, None, "2026-12-31T12:00:00Z", ["2027-01-01T08:00:00Z", "2027-02-01T08:00:00Z"]),
    ],
)
def test_business_day_n_fires_on_the_nth_business_day_at_its_wall_time(
    n, calendar, start, expected
):
    spec = ScheduleSpec(business_day=n, time="09:00", timezone=BERLIN, calendar=calendar)
    assert [iso(f) for f in preview(spec, start=utc(start), count=2)] == expected


@pytest.mark.parametrize(
    ("repeated", "expected"),
    [
        # Cairo set its clocks back at midnight into 2026-10-30: 23:30 on the 29th (the
        # second-last business day of October) happened twice.
        ("both", ["2026-10-29T20:30:00Z", "2026-10-29T21:30:00Z", "2026-11-27T21:30:00Z"]),
        ("once", ["2026-10-29T20:30:00Z", "2026-11-27T21:30:00Z", "2026-12-30T21:30:00Z"]),
    ],
)
def test_business_day_in_a_repeated_hour_follows_the_dst_policy_as_a_cron_does(repeated, expected):
    spec = ScheduleSpec(
        business_day=-2,
        time="23:30",
        timezone="Africa/Cairo",
        dst_repeated=repeated,
    )
    assert [iso(f) for f in preview(spec, start=utc("2026-10-01T00:00:00Z"), count=3)] == expected


def test_business_day_in_a_skipped_hour_is_marked_skipped_with_the_skip_policy():
    # Cairo's clocks jumped from 00:00 to 01:00 on 2026-04-24: 00:30 never happened.
    spec = ScheduleSpec(business_day=18, time="00:30", timezone="Africa/Cairo", dst_skipped="skip")
    _, marks, _ = preview_steps(spec, start=utc("2026-04-01T00:00:00Z"), count=1)
    assert [(m.change, iso(m.at)) for m in marks] == [("skipped", "2026-04-23T22:00:00Z")]
    shifted = ScheduleSpec(business_day=18, time="00:30", timezone="Africa/Cairo")
    first = preview(shifted, start=utc("2026-04-01T00:00:00Z"), count=1)
    assert [iso(f) for f in first] == ["2026-04-23T22:00:00Z"]  # 01:00, right after the jump


def test_business_day_in_new_york_skips_memorial_day_at_the_end_of_may_2027():
    spec = ScheduleSpec(
        business_day=-1, time="17:00", timezone="America/New_York", calendar=cal("US")
    )
    assert iso(next_fire_after(spec, utc("2027-05-01T00:00:00Z"))) == "2027-05-28T21:00:00Z"


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        (ScheduleSpec(business_day=0, time="09:00"), "schedule.business_day"),
        (ScheduleSpec(business_day=24, time="09:00"), "schedule.business_day"),
        (ScheduleSpec(business_day=1), "schedule.time"),
        (ScheduleSpec(business_day=1, time="9:00"), "schedule.time"),
        (ScheduleSpec(business_day=1, time="24:00"), "schedule.time"),
        (ScheduleSpec(cron="0 9 * * *", time="09:00"), "schedule.time"),
        (ScheduleSpec(cron="0 9 * * *", calendar=cal("XX")), "schedule.calendar.holidays"),
        (ScheduleSpec(cron="0 9 * * *", calendar=cal("DE-XX")), "schedule.calendar.holidays"),
        (ScheduleSpec(interval_s=600, calendar=cal("DE")), "schedule.calendar"),
        (ScheduleSpec(cron="0 9 * * *", also=("61 * * * *",)), "schedule.cron.1"),
        (ScheduleSpec(cron="0 9 * * *", jitter_s=3601), "schedule.jitter_s"),
    ],
)
def test_a_bad_calendar_field_names_the_field(spec, field):
    with pytest.raises(ValidationError) as raised:
        validate_schedule(spec, min_interval_s=60)
    assert raised.value.field == field
