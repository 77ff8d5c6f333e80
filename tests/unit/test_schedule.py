"""Schedules outside DST: validation, cron in UTC, intervals, one-time instants, words, clamp.

DST behaviour has its own file, ``test_schedule_dst.py``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from chalicelib.domain.errors import ValidationError
from chalicelib.domain.schedule import (
    ScheduleSpec,
    clamp_next_fire,
    describe,
    next_fire_after,
    preview,
    validate_schedule,
)

NOW = datetime(2026, 6, 10, 12, 0, tzinfo=UTC)  # a Wednesday
MIN_INTERVAL_S = 60


def iso(instants: list[datetime]) -> list[str]:
    return [instant.isoformat() for instant in instants]


# --- validate_schedule ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "field", "message"),
    [
        (
            ScheduleSpec(),
            "schedule",
            "exactly one of cron, interval_s or at is required (got none)",
        ),
        (
            ScheduleSpec(cron="0 8 * * *", interval_s=60),
            "schedule",
            "exactly one of cron, interval_s or at is required (got cron and interval)",
        ),
        (ScheduleSpec(cron="61 * * * *"), "schedule.cron", "'61' is not a valid minute (0-59)"),
        (ScheduleSpec(cron="0 24 * * *"), "schedule.cron", "'24' is not a valid hour (0-23)"),
        (ScheduleSpec(cron="0 0 0 * *"), "schedule.cron", "'0' is not a valid day-of-month (1-31)"),
        (ScheduleSpec(cron="0 0 * 13 *"), "schedule.cron", "'13' is not a valid month (1-12)"),
        (ScheduleSpec(cron="0 0 * * 8"), "schedule.cron", "'8' is not a valid day-of-week (0-7)"),
        (ScheduleSpec(cron="0 0 * foo *"), "schedule.cron", "'foo' is not a valid month"),
        (ScheduleSpec(cron="0 0 X * *"), "schedule.cron", "'X' is not a valid day-of-month"),
        (ScheduleSpec(cron="1,,2 * * * *"), "schedule.cron", "'1,,2' is not a valid minute"),
        (
            ScheduleSpec(cron="5-1 * * * *"),
            "schedule.cron",
            "'5-1' is not a valid minute: the range runs backwards",
        ),
        (
            ScheduleSpec(cron="*/0 * * * *"),
            "schedule.cron",
            "'*/0' is not a valid minute: the step must be a positive number",
        ),
        (
            ScheduleSpec(cron="0 0 8 * * *"),
            "schedule.cron",
            "seconds and years are not supported: a cron has 5 fields "
            "(minute hour day-of-month month day-of-week) "
            "(an EventBridge expression is pasted whole, as cron(...))",
        ),
        (
            ScheduleSpec(cron="0 0 8 * * * 2026"),
            "schedule.cron",
            "seconds and years are not supported: a cron has 5 fields "
            "(minute hour day-of-month month day-of-week) "
            "(an EventBridge expression is pasted whole, as cron(...))",
        ),
        (
            ScheduleSpec(cron="0 8 * *"),
            "schedule.cron",
            "a cron has 5 fields (minute hour day-of-month month day-of-week), got 4",
        ),
        (
            ScheduleSpec(cron="@reboot"),
            "schedule.cron",
            "'@reboot' is not supported: use 5 fields (minute hour day-of-month month "
            "day-of-week) or @hourly, @daily, @weekly, @monthly, @yearly",
        ),
        (
            ScheduleSpec(cron="0 0 30 2 *"),
            "schedule.cron",
            "'0 0 30 2 *' never fires (no such date)",
        ),
        (
            ScheduleSpec(cron="0 8 * * *", timezone="Mars/Olympus_Mons"),
            "schedule.timezone",
            "'Mars/Olympus_Mons' is not a known IANA timezone (e.g. 'Europe/Berlin')",
        ),
        (
            ScheduleSpec(interval_s=30),
            "schedule.interval_s",
            "interval must be at least 60 seconds",
        ),
        (ScheduleSpec(interval_s=0), "schedule.interval_s", "interval must be at least 60 seconds"),
        (
            ScheduleSpec(cron="0 8 * * *", dst_skipped="later"),  # type: ignore[arg-type]
            "schedule.dst.skipped",
            "must be 'shift' or 'skip'",
        ),
        (
            ScheduleSpec(cron="0 8 * * *", dst_repeated="twice"),  # type: ignore[arg-type]
            "schedule.dst.repeated",
            "must be 'once' or 'both'",
        ),
        (
            ScheduleSpec(at=datetime(2026, 12, 1, 9)),
            "schedule.at",
            "must be an aware datetime (with a UTC offset)",
        ),
    ],
)
def test_invalid_schedule_names_the_field_and_says_what_is_wrong(spec, field, message):
    with pytest.raises(ValidationError) as raised:
        validate_schedule(spec, min_interval_s=MIN_INTERVAL_S)
    assert (raised.value.field, raised.value.message) == (field, message)


@pytest.mark.parametrize(
    "spec",
    [
        ScheduleSpec(cron="0 8 * * *"),
        ScheduleSpec(cron="*/15 * * * *", timezone="Australia/Lord_Howe"),
        ScheduleSpec(cron="0 9 * * mon-fri", timezone="Europe/Berlin"),
        ScheduleSpec(cron="0 0 1 JAN *"),
        ScheduleSpec(cron="0 0 * * 7"),
        ScheduleSpec(cron="5/15 8-18/2 1,15 * *"),
        ScheduleSpec(cron="0 0 29 2 *"),
        ScheduleSpec(cron="  0   8 * * *  "),
        ScheduleSpec(cron="@hourly"),
        ScheduleSpec(cron="@daily"),
        ScheduleSpec(cron="@weekly"),
        ScheduleSpec(cron="@monthly"),
        ScheduleSpec(cron="@yearly"),
        ScheduleSpec(interval_s=MIN_INTERVAL_S),
        ScheduleSpec(interval_s=3600, anchor_at=NOW),
        ScheduleSpec(at=NOW),
    ],
)
def test_valid_schedule_passes(spec):
    validate_schedule(spec, min_interval_s=MIN_INTERVAL_S)


@pytest.mark.parametrize(
    ("spec", "kind"),
    [
        (ScheduleSpec(cron="0 8 * * *"), "cron"),
        (ScheduleSpec(interval_s=60), "interval"),
        (ScheduleSpec(at=NOW), "at"),
    ],
)
def test_kind_names_the_one_schedule_given(spec, kind):
    assert spec.kind == kind


def test_kind_of_a_spec_with_two_schedules_is_a_validation_error():
    with pytest.raises(ValidationError) as raised:
        ScheduleSpec(interval_s=60, at=NOW).kind  # noqa: B018
    assert raised.value.field == "schedule"


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


# --- preview --------------------------------------------------------------------------------


def test_preview_lists_the_next_fires_in_order():
    spec = ScheduleSpec(cron="0 */6 * * *")
    assert iso(preview(spec, start=NOW, count=3)) == [
        "2026-06-10T18:00:00+00:00",
        "2026-06-11T00:00:00+00:00",
        "2026-06-11T06:00:00+00:00",
    ]


@pytest.mark.parametrize("count", [1, 37, 100])
def test_preview_gives_exactly_count_fires_strictly_increasing(count):
    fires = preview(ScheduleSpec(cron="*/5 * * * *"), start=NOW, count=count)
    assert len(fires) == count
    assert fires[0] > NOW
    assert all(earlier < later for earlier, later in zip(fires, fires[1:], strict=False))


def test_preview_of_a_one_time_schedule_stops_after_it():
    spec = ScheduleSpec(at=NOW + timedelta(days=1))
    assert preview(spec, start=NOW, count=5) == [NOW + timedelta(days=1)]
    assert preview(spec, start=NOW + timedelta(days=2), count=5) == []


@pytest.mark.parametrize("count", [0, -1, 101, True, 2.0])
def test_preview_count_out_of_range_is_a_validation_error(count):
    with pytest.raises(ValidationError) as raised:
        preview(ScheduleSpec(cron="0 8 * * *"), start=NOW, count=count)
    assert (raised.value.field, raised.value.message) == (
        "count",
        "count must be between 1 and 100",
    )


# --- describe -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "text"),
    [
        (ScheduleSpec(interval_s=7200), "Every 2 hours"),
        (ScheduleSpec(interval_s=3600), "Every hour"),
        (ScheduleSpec(interval_s=900), "Every 15 minutes"),
        (ScheduleSpec(interval_s=5400), "Every 90 minutes"),
        (ScheduleSpec(interval_s=90), "Every 90 seconds"),
        (ScheduleSpec(interval_s=172800), "Every 2 days"),
        (
            ScheduleSpec(cron="0 8 * * 1", timezone="Europe/Berlin"),
            "At 08:00 on Monday (Europe/Berlin)",
        ),
        (ScheduleSpec(cron="*/15 * * * *"), "Every 15 minutes"),
        (ScheduleSpec(cron="0 */2 * * *"), "Every 2 hours"),
        (ScheduleSpec(cron="@hourly"), "Every hour"),
        (ScheduleSpec(cron="@daily", timezone="Asia/Tokyo"), "At 00:00 (Asia/Tokyo)"),
        (ScheduleSpec(cron="0 9 * * mon-fri"), "At 09:00, Monday through Friday"),
        (ScheduleSpec(at=datetime(2026, 12, 1, 9, 0, tzinfo=UTC)), "Once at 2026-12-01 09:00 UTC"),
        (
            ScheduleSpec(at=datetime(2026, 12, 1, 9, 0, 30, tzinfo=UTC)),
            "Once at 2026-12-01 09:00:30 UTC",
        ),
        (
            ScheduleSpec(at=datetime(2026, 12, 1, 9, 0, tzinfo=UTC), timezone="Europe/Berlin"),
            "Once at 2026-12-01 10:00 (Europe/Berlin)",
        ),
    ],
)
def test_describe_says_the_cadence_in_words(spec, text):
    assert describe(spec) == text


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
