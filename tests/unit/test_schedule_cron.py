"""Cron syntax beyond Debian's: the Vixie day rule, L, LW, NW, NL, N#K and ?; and any text a
client may send is a schedule or a ValidationError. Pinned to UTC unless a zone is named."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chalicelib.domain.errors import ValidationError
from chalicelib.domain.schedule import (
    ScheduleSpec,
    describe,
    preview,
    translate_pasted,
    validate_schedule,
)
from chalicelib.domain.schedule.cron import parse_cron

START = datetime(2026, 1, 1, tzinfo=UTC)  # a Thursday


def days(cron: str, count: int = 4, start: datetime = START) -> list[str]:
    """The next fires as "YYYY-MM-DD Www HH:MM" (UTC)."""
    fires = preview(ScheduleSpec(cron=cron), start=start, count=count)
    return [fire.strftime("%Y-%m-%d %a %H:%M") for fire in fires]


# --- the day rule -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cron", "expected"),
    [
        # Either day field starts with "*": a day must match both (Mondays on odd days).
        ("0 0 */2 * 1", ["2026-01-05 Mon 00:00", "2026-01-19 Mon 00:00", "2026-02-09 Mon 00:00"]),
        ("0 0 1-7 * */6", ["2026-01-03 Sat 00:00", "2026-01-04 Sun 00:00", "2026-02-01 Sun 00:00"]),
        # Both restricted: matching either is enough (the 1st and 15th, and every Friday).
        ("0 0 1,15 * 5", ["2026-01-02 Fri 00:00", "2026-01-09 Fri 00:00", "2026-01-15 Thu 00:00"]),
        # A plain "*" in one field leaves the other alone.
        ("0 0 13 * *", ["2026-01-13 Tue 00:00", "2026-02-13 Fri 00:00", "2026-03-13 Fri 00:00"]),
        ("0 0 * * 5", ["2026-01-02 Fri 00:00", "2026-01-09 Fri 00:00", "2026-01-16 Fri 00:00"]),
        # "?" is "*" in a day field, so the rule reads it as a star.
        (
            "0 8 ? * MON-FRI",
            ["2026-01-01 Thu 08:00", "2026-01-02 Fri 08:00", "2026-01-05 Mon 08:00"],
        ),
        ("0 8 15 * ?", ["2026-01-15 Thu 08:00", "2026-02-15 Sun 08:00", "2026-03-15 Sun 08:00"]),
    ],
)
def test_day_fields_follow_the_vixie_rule(cron, expected):
    assert days(cron, 3) == expected


# --- L, LW, NW, NL, N#K -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("cron", "expected"),
    [
        ("0 0 L * *", ["2026-01-31 Sat", "2026-02-28 Sat", "2026-03-31 Tue", "2026-04-30 Thu"]),
        ("0 0 L 2 *", ["2026-02-28 Sat", "2027-02-28 Sun", "2028-02-29 Tue", "2029-02-28 Wed"]),
        ("0 0 LW * *", ["2026-01-30 Fri", "2026-02-27 Fri", "2026-03-31 Tue", "2026-04-30 Thu"]),
        ("0 0 1,L * *", ["2026-01-31 Sat", "2026-02-01 Sun", "2026-02-28 Sat", "2026-03-01 Sun"]),
        # NW: the weekday nearest day N, never leaving the month (Quartz).
        ("0 0 15W * *", ["2026-01-15 Thu", "2026-02-16 Mon", "2026-03-16 Mon", "2026-04-15 Wed"]),
        # 2026-02-01 is a Sunday (-> Mon 2nd); 2026-08-01 a Saturday (-> Mon 3rd, not July).
        ("0 0 1W 2,8 *", ["2026-02-02 Mon", "2026-08-03 Mon", "2027-02-01 Mon", "2027-08-02 Mon"]),
        # 2026-05-31 is a Sunday (-> Fri 29th, not June); no 31st in April or June.
        ("0 0 31W 4-7 *", ["2026-05-29 Fri", "2026-07-31 Fri", "2027-05-31 Mon", "2027-07-30 Fri"]),
        ("0 0 * * 5L", ["2026-01-30 Fri", "2026-02-27 Fri", "2026-03-27 Fri", "2026-04-24 Fri"]),
        ("0 0 * * FRIL", ["2026-01-30 Fri", "2026-02-27 Fri", "2026-03-27 Fri", "2026-04-24 Fri"]),
        ("0 0 * * 7L", ["2026-01-25 Sun", "2026-02-22 Sun", "2026-03-29 Sun", "2026-04-26 Sun"]),
        ("0 0 * * 1#2", ["2026-01-12 Mon", "2026-02-09 Mon", "2026-03-09 Mon", "2026-04-13 Mon"]),
        (
            "0 0 * * MON#1,FRI#3",
            ["2026-01-05 Mon", "2026-01-16 Fri", "2026-02-02 Mon", "2026-02-20 Fri"],
        ),
        ("0 0 * * 0#5", ["2026-03-29 Sun", "2026-05-31 Sun", "2026-08-30 Sun", "2026-11-29 Sun"]),
        # A fifth Monday in February: 2044, 2072, then 2112 (2100 is no leap year).
        ("0 0 * 2 MON#5", ["2044-02-29 Mon", "2072-02-29 Mon", "2112-02-29 Mon", "2140-02-29 Mon"]),
        # Both restricted, so OR: the last day, or the second Tuesday.
        ("0 0 L * 2#2", ["2026-01-13 Tue", "2026-01-31 Sat", "2026-02-10 Tue", "2026-02-28 Sat"]),
    ],
)
def test_special_day_values_fire_on_the_days_they_name(cron, expected):
    assert [day[:14] for day in days(cron)] == expected


@pytest.mark.parametrize(
    ("cron", "message"),
    [
        ("0 0 L/2 * *", "'L/2' is not a valid day-of-month"),
        ("0 0 W * *", "'W' is not a valid day-of-month"),
        ("0 0 32W * *", "'32' is not a valid day-of-month (1-31)"),
        ("0 0 0W * *", "'0' is not a valid day-of-month (1-31)"),
        ("0 0 * * 1#6", "'1#6' is not a valid day-of-week: '#' takes 1-5"),
        ("0 0 * * 1#0", "'1#0' is not a valid day-of-week: '#' takes 1-5"),
        ("0 0 * * #2", "'#2' is not a valid day-of-week"),
        ("0 0 * * 8L", "'8' is not a valid day-of-week (0-7)"),
        ("0 0 * * L", "'L' is not a valid day-of-week"),
        ("0 0 * * 1-5#2", "'1-5' is not a valid day-of-week"),
        ("0 0 LW * LW", "'LW' is not a valid day-of-week"),
        ("? 0 * * *", "'?' is not a valid minute: '?' is only for the day fields"),
        ("0 ? * * *", "'?' is not a valid hour: '?' is only for the day fields"),
        ("0 0 * ? *", "'?' is not a valid month: '?' is only for the day fields"),
        ("0 0 ?,1 * *", "'?' is not a valid day-of-month"),
        ("0 0 30 2 *", "'0 0 30 2 *' never fires (no such date)"),
        # The 1st or the 31st of February, if it is the fifth Monday: never.
        ("0 0 */30 2 1#5", "'0 0 */30 2 1#5' never fires (no such date)"),
        ("\u00b2 * * * *", "'\u00b2' is not a valid minute"),
        ("0 0 * * 1#\u00b2", "'1#\u00b2' is not a valid day-of-week: '#' takes 1-5"),
    ],
)
def test_bad_special_values_are_refused_naming_schedule_cron(cron, message):
    with pytest.raises(ValidationError) as raised:
        validate_schedule(ScheduleSpec(cron=cron), min_interval_s=60)
    assert (raised.value.field, raised.value.message) == ("schedule.cron", message)


def test_a_one_value_range_with_a_step_is_that_one_value_as_in_debian():
    assert days("0 13-13/5 * * *", 2) == ["2026-01-01 Thu 13:00", "2026-01-02 Fri 13:00"]


def test_a_start_with_a_step_runs_to_the_end_of_the_field():
    assert days("50/5 23 * * *", 3) == [
        "2026-01-01 Thu 23:50",
        "2026-01-01 Thu 23:55",
        "2026-01-02 Fri 23:50",
    ]


@pytest.mark.parametrize(
    ("cron", "words"),
    [
        ("0 0 */2 * 1", "At 00:00, every 2 days, if it is also Monday"),
        ("0 0 1,15 * 5", "At 00:00, on day 1 and 15 of the month, or on Friday"),
        ("0 0 L * *", "At 00:00, on the last day of the month"),
        ("0 0 15W * *", "At 00:00, on the weekday nearest day 15 of the month"),
        ("0 9 * * 1#2", "At 09:00, on the second Monday of the month"),
    ],
)
def test_describe_says_and_or_or_as_the_day_rule_decides(cron, words):
    assert describe(ScheduleSpec(cron=cron)) == words


# --- anything a client may send -------------------------------------------------------------

_CRON_ALPHABET = st.sampled_from(list("0123456789*/,-?LW# ") + ["MON", "jan", "\u00b2", "()"])


@settings(max_examples=200, derandomize=True, deadline=None)
@given(
    text=st.one_of(
        st.lists(_CRON_ALPHABET, max_size=30).map("".join),
        st.lists(_CRON_ALPHABET, max_size=30).map(lambda parts: f"cron({''.join(parts)})"),
        st.text(max_size=40).map(lambda inner: f"rate({inner})"),
        st.text(max_size=40).map(lambda inner: f"at({inner})"),
        st.text(max_size=40),
    ),
    zone=st.sampled_from(["UTC", "Europe/Berlin", "Pacific/Kiritimati", "America/New_York"]),
)
def test_any_cron_text_is_a_schedule_or_a_validation_error_never_a_crash(text, zone):
    try:
        if text.lower().startswith(("cron(", "rate(", "at(")):
            pasted = translate_pasted(text, timezone=zone)
            spec = ScheduleSpec(cron=pasted.cron, interval_s=pasted.interval_s, at=pasted.at)
        else:
            spec = ScheduleSpec(cron=text, timezone=zone)
        validate_schedule(spec, min_interval_s=60)
    except ValidationError as error:
        assert error.field == "schedule.cron" and error.message
        return
    preview(spec, start=datetime(9999, 12, 30, tzinfo=UTC), count=3)
    preview(spec, start=datetime(1, 1, 1, tzinfo=UTC), count=3)


# --- how a parsed cron is classified --------------------------------------------------------


@pytest.mark.parametrize(
    ("cron", "expression", "fixed_time", "day_and"),
    [
        ("@daily", "0 0 * * *", True, True),
        ("@HOURLY", "0 * * * *", False, True),  # "*" in the hour: a wildcard job
        ("*/5 * * * *", "*/5 * * * *", False, True),
        ("30 2 * * *", "30 2 * * *", True, True),
        ("0 9 * * 1", "0 9 * * 1", True, True),  # the day of month starts with "*": and
        ("0 9 1 * 1", "0 9 1 * 1", True, False),  # both days restricted: or
        ("0 9 ? * 1", "0 9 ? * 1", True, True),  # "?" is "*"
        ("  0  9  *  *  1 ", "0 9 * * 1", True, True),
    ],
)
def test_a_parsed_cron_knows_its_form_and_its_dst_and_day_rules(
    cron, expression, fixed_time, day_and
):
    parsed = parse_cron(cron)
    assert (parsed.expression, parsed.fixed_time, parsed.day_and) == (
        expression,
        fixed_time,
        day_and,
    )


@pytest.mark.parametrize(
    ("cron", "minutes", "hours", "months", "weekdays"),
    [
        ("0,30 8-10 * jan-mar mon-fri", (0, 30), (8, 9, 10), {1, 2, 3}, {1, 2, 3, 4, 5}),
        ("*/20 */8 * */6 7", (0, 20, 40), (0, 8, 16), {1, 7}, {0}),  # 7 is Sunday, 0
        ("5/20 22/1 * 11/1 0,7", (5, 25, 45), (22, 23), {11, 12}, {0}),  # "a/step": to the end
    ],
)
def test_a_parsed_cron_expands_its_fields(cron, minutes, hours, months, weekdays):
    parsed = parse_cron(cron)
    assert parsed.minutes == minutes
    assert parsed.hours == hours
    assert parsed.months == months
    assert parsed.weekdays == weekdays


def test_a_cron_is_parsed_once_and_then_served_from_the_cache():
    assert parse_cron("17 4 * * *") is parse_cron("17 4 * * *")
