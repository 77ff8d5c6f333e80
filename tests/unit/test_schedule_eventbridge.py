"""EventBridge Scheduler expressions pasted whole: ``cron(...)``, ``rate(...)``, ``at(...)``."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from chalicelib.domain.errors import ValidationError
from chalicelib.domain.schedule import PastedSchedule, ScheduleSpec, preview, translate_pasted

START = datetime(2026, 1, 1, tzinfo=UTC)  # a Thursday


def days(cron: str, count: int = 4, start: datetime = START) -> list[str]:
    """The next fires as "YYYY-MM-DD Www HH:MM" (UTC)."""
    fires = preview(ScheduleSpec(cron=cron), start=start, count=count)
    return [fire.strftime("%Y-%m-%d %a %H:%M") for fire in fires]


# --- EventBridge Scheduler expressions --------------------------------------------------


@pytest.mark.parametrize(
    ("text", "timezone", "expected"),
    [
        ("cron(0 8 ? * MON-FRI *)", "UTC", PastedSchedule(cron="0 8 * * MON-FRI")),
        # EventBridge numbers weekdays 1-7 from Sunday; cron 0-6.
        ("cron(0 8 ? * 2-6 *)", "UTC", PastedSchedule(cron="0 8 * * 1-5")),
        ("cron(15 10 ? * 6L *)", "UTC", PastedSchedule(cron="15 10 * * 5L")),
        ("cron(0 9 ? * 2#1 *)", "UTC", PastedSchedule(cron="0 9 * * 1#1")),
        ("cron(0 9 ? * 1,7 *)", "UTC", PastedSchedule(cron="0 9 * * 0,6")),
        ("cron(0 9 ? * 2/2 *)", "UTC", PastedSchedule(cron="0 9 * * 1/2")),
        ("cron(0 9 ? * L *)", "UTC", PastedSchedule(cron="0 9 * * 6")),
        ("cron(0/15 * * * ? *)", "UTC", PastedSchedule(cron="0/15 * * * *")),
        ("cron(0 18 L * ? *)", "UTC", PastedSchedule(cron="0 18 L * *")),
        ("cron(0 18 15W * ? *)", "UTC", PastedSchedule(cron="0 18 15W * *")),
        ("CRON( 0 8 ? * MON-FRI * )", "UTC", PastedSchedule(cron="0 8 * * MON-FRI")),
        ("rate(5 minutes)", "UTC", PastedSchedule(interval_s=300)),
        ("rate(1 minute)", "UTC", PastedSchedule(interval_s=60)),
        ("rate(2 hours)", "UTC", PastedSchedule(interval_s=7200)),
        ("rate(1 day)", "UTC", PastedSchedule(interval_s=86400)),
        (
            "at(2027-01-01T09:00:00)",
            "Europe/Berlin",
            PastedSchedule(at=datetime(2027, 1, 1, 8, tzinfo=UTC)),
        ),
        (
            "at(2027-07-01T09:00:00)",
            "America/New_York",
            PastedSchedule(at=datetime(2027, 7, 1, 13, tzinfo=UTC)),
        ),
    ],
)
def test_eventbridge_expressions_become_cronhook_schedules(text, timezone, expected):
    assert translate_pasted(text, timezone=timezone) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "cron(0 8 ? * MON-FRI 2027)",
            "the year field '2027' is not supported: cronhook runs a cron every year, "
            "so give '*' (and end the trigger with limits.expires_at)",
        ),
        (
            "cron(0 8 * * ?)",
            "cron(...) takes 6 fields (minutes hours day-of-month month day-of-week year), got 5",
        ),
        ("cron(0 8 ? * 0 *)", "'0' is not a valid EventBridge day-of-week (1-7, Sunday is 1)"),
        ("cron(0 8 ? * 8 *)", "'8' is not a valid EventBridge day-of-week (1-7, Sunday is 1)"),
        (
            "rate(5 weeks)",
            "'rate(5 weeks)' is not valid: use rate(N minutes|hours|days) with N a positive number",
        ),
        (
            "rate(0 minutes)",
            "'rate(0 minutes)' is not valid: use rate(N minutes|hours|days) with N a positive number",
        ),
        ("at(2027-01-01)", "'at(2027-01-01)' is not valid: use at(YYYY-MM-DDThh:mm:ss)"),
        ("rate(367 days)", "'rate(367 days)' is longer than 366 days"),
        ("at(0001-01-01T00:30:00)", "'at(0001-01-01T00:30:00)' is outside years 1-9999 in UTC"),
        (
            "at(2026-03-29T02:30:00)",
            "'at(2026-03-29T02:30:00)' never happens in Europe/Berlin: the clock jumps over it",
        ),
    ],
)
def test_eventbridge_parts_cronhook_cannot_honour_are_refused_naming_schedule_cron(text, message):
    with pytest.raises(ValidationError) as raised:
        translate_pasted(text, timezone="Europe/Berlin")
    assert (raised.value.field, raised.value.message) == ("schedule.cron", message)
