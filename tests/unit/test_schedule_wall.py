"""Which wall times a cron matches (``wall.next_wall``), on a naive wall clock, no zone.

The expected days are read off the calendar (``cal 1 2026``...), not computed.
"""

from __future__ import annotations

from datetime import datetime

import pytest

from chalicelib.domain.schedule.cron import parse_cron
from chalicelib.domain.schedule.wall import next_wall


@pytest.mark.parametrize(
    ("cron", "after", "expected"),
    [
        ("0 0 L * *", datetime(2024, 2, 10), datetime(2024, 2, 29)),  # a leap February
        ("0 0 L * *", datetime(2026, 2, 10), datetime(2026, 2, 28)),
        ("0 9 LW * *", datetime(2026, 1, 1), datetime(2026, 1, 30, 9)),  # the 31st is a Saturday
        ("0 9 LW * *", datetime(2026, 5, 1), datetime(2026, 5, 29, 9)),  # the 31st is a Sunday
        ("0 9 1W * *", datetime(2026, 7, 31, 12), datetime(2026, 8, 3, 9)),  # Sat 1st: Monday
        ("0 9 1W * *", datetime(2026, 1, 31), datetime(2026, 2, 2, 9)),  # Sun 1st: Monday
        ("0 9 31W * *", datetime(2026, 8, 1), datetime(2026, 8, 31, 9)),  # a Monday already
        ("0 9 30W * *", datetime(2026, 2, 1), datetime(2026, 3, 30, 9)),  # no 30th in February
        ("0 9 * * 5L", datetime(2026, 1, 1), datetime(2026, 1, 30, 9)),  # the last Friday
        ("0 9 * * 1#2", datetime(2026, 2, 1), datetime(2026, 2, 9, 9)),  # the second Monday
        ("0 9 * * 1#5", datetime(2026, 1, 1), datetime(2026, 3, 30, 9)),  # the next 5th Monday
        ("0 0 13 * 5", datetime(2026, 2, 1), datetime(2026, 2, 6)),  # the 13th or a Friday
        ("0 0 */2 * 5", datetime(2026, 2, 1), datetime(2026, 2, 13)),  # an odd day and a Friday
        ("0 0 29 2 *", datetime(2097, 3, 1), datetime(2104, 2, 29)),  # 2100 is not a leap year
        ("*/15 9-10 * * *", datetime(2026, 1, 1, 10, 50), datetime(2026, 1, 2, 9)),
        ("*/15 9-10 * * *", datetime(2026, 1, 1, 10, 44, 59), datetime(2026, 1, 1, 10, 45)),
        ("30 23 31 12 *", datetime(2026, 12, 31, 23, 30), datetime(2027, 12, 31, 23, 30)),
    ],
)
def test_next_wall_is_the_first_matching_minute_strictly_after(cron, after, expected):
    assert next_wall(parse_cron(cron), after) == expected


@pytest.mark.parametrize(
    ("after", "expected"),
    [
        (datetime(2026, 1, 1, 10, 45), datetime(2026, 1, 1, 10, 45)),  # a whole minute: itself
        (datetime(2026, 1, 1, 10, 45, 0, 1), datetime(2026, 1, 1, 11, 0)),  # not whole: later
        (datetime(2026, 1, 1, 10, 46), datetime(2026, 1, 1, 11, 0)),
    ],
)
def test_inclusive_next_wall_counts_a_whole_minute_itself(after, expected):
    assert next_wall(parse_cron("*/15 * * * *"), after, inclusive=True) == expected


@pytest.mark.parametrize(
    ("cron", "after"),
    [
        ("* * * * *", datetime(9999, 12, 31, 23, 59)),
        ("0 0 1 1 *", datetime(9999, 1, 1, 0, 0)),
        ("0 0 29 2 *", datetime(9996, 3, 1)),  # no leap day left before year 10000
    ],
)
def test_next_wall_is_none_past_the_end_of_year_9999(cron, after):
    assert next_wall(parse_cron(cron), after) is None
