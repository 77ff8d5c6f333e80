"""A schedule's cadence in words (``describe``)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from chalicelib.domain.schedule import ScheduleSpec, describe

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
