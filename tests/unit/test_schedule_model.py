"""The schedule model: ``validate_schedule`` names the field at fault; ``kind`` is the one schedule given."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from chalicelib.domain.errors import ValidationError
from chalicelib.domain.schedule import ScheduleSpec, validate_schedule

NOW = datetime(2026, 6, 10, 12, 0, tzinfo=UTC)  # a Wednesday
MIN_INTERVAL_S = 60


# --- validate_schedule ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "field", "message"),
    [
        (
            ScheduleSpec(),
            "schedule",
            "exactly one of cron, business_day, interval_s or at is required (got none)",
        ),
        (
            ScheduleSpec(cron="0 8 * * *", interval_s=60),
            "schedule",
            "exactly one of cron, business_day, interval_s or at is required (got cron and interval)",
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
