"""Budget math: periods on the trigger's wall clock, estimates, room, the stop rule."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from chalicelib.domain import budget


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


@pytest.mark.parametrize(
    ("period", "at", "timezone", "key", "ends_at"),
    [
        # 23:30 UTC on Nov 30 is already Dec 1 in Berlin (UTC+1): a new day and month there.
        ("day", "2026-11-30T23:30:00Z", "UTC", "day:2026-11-30", "2026-12-01T00:00:00+00:00"),
        (
            "day",
            "2026-11-30T23:30:00Z",
            "Europe/Berlin",
            "day:2026-12-01",
            "2026-12-01T23:00:00+00:00",
        ),
        (
            "month",
            "2026-11-30T23:30:00Z",
            "Europe/Berlin",
            "month:2026-12",
            "2026-12-31T23:00:00+00:00",
        ),
        ("month", "2026-11-30T23:30:00Z", "UTC", "month:2026-11", "2026-12-01T00:00:00+00:00"),
        ("month", "2026-12-15T08:00:00Z", "UTC", "month:2026-12", "2027-01-01T00:00:00+00:00"),
        # ISO weeks start on Monday: Sunday 2026-11-29 is in week 48, Monday 11-30 in 49.
        ("week", "2026-11-29T12:00:00Z", "UTC", "week:2026-W48", "2026-11-30T00:00:00+00:00"),
        ("week", "2026-11-30T00:00:00Z", "UTC", "week:2026-W49", "2026-12-07T00:00:00+00:00"),
        # New Year's week belongs to the ISO year of its Thursday.
        ("week", "2027-01-01T12:00:00Z", "UTC", "week:2026-W53", "2027-01-04T00:00:00+00:00"),
        # Los Angeles (UTC-8): 03:00 UTC on Dec 1 is still Nov 30 there.
        (
            "day",
            "2026-12-01T03:00:00Z",
            "America/Los_Angeles",
            "day:2026-11-30",
            "2026-12-01T08:00:00+00:00",
        ),
        ("total", "2026-12-01T03:00:00Z", "UTC", "total", None),
    ],
)
def test_period_follows_the_wall_clock_of_the_trigger_timezone(period, at, timezone, key, ends_at):
    found = budget.period_of(period, at=utc(at), timezone=timezone)
    assert found.key == key
    assert (found.ends_at.isoformat() if found.ends_at else None) == ends_at


def test_a_day_that_springs_forward_ends_at_the_next_local_midnight():
    # Europe/Berlin, 2026-03-29: 02:00 CET jumps to 03:00 CEST, so the day is 23 hours.
    found = budget.period_of("day", at=utc("2026-03-29T10:00:00Z"), timezone="Europe/Berlin")
    assert found.key == "day:2026-03-29"
    assert found.ends_at.isoformat() == "2026-03-29T22:00:00+00:00"


def test_period_needs_an_aware_instant_and_a_known_period():
    with pytest.raises(ValueError):
        budget.period_of("day", at=datetime(2026, 1, 1), timezone="UTC")
    with pytest.raises(ValueError):
        budget.period_of("year", at=utc("2026-01-01T00:00:00Z"), timezone="UTC")


@pytest.mark.parametrize(
    ("kind", "schedule", "expected"),
    [
        ("cron", {"cron": "0 8 * * 1", "timezone": "Europe/Berlin"}, "Europe/Berlin"),
        ("cron", {"cron": "0 8 * * 1"}, "UTC"),
        ("interval", {"interval_s": 60, "timezone": "Europe/Berlin"}, "UTC"),
        ("event", None, "UTC"),
    ],
)
def test_only_cron_triggers_budget_in_their_own_timezone(kind, schedule, expected):
    assert budget.budget_timezone(kind, schedule) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.1, 0.1),
        (1 / 3, 0.333333),
        (0.0000004, 0.0),
        (-1.0, 0.0),
        (float("nan"), 0.0),
        (float("inf"), 0.0),
        (True, 0.0),
        ("1.0", 0.0),
        (None, 0.0),
        (5, 5.0),
    ],
)
def test_money_is_rounded_to_micro_dollars_and_garbage_is_zero(value, expected):
    assert budget.usd(value) == expected


@pytest.mark.parametrize(
    ("last_cost", "expected"),
    [(None, budget.DEFAULT_ESTIMATE_USD), (0, budget.DEFAULT_ESTIMATE_USD), (0.4, 0.4)],
)
def test_the_estimate_is_the_last_cost_or_a_small_default(last_cost, expected):
    assert budget.estimate_usd(last_cost) == expected


@pytest.mark.parametrize(
    ("max_usd", "estimate", "room"),
    [(1.0, 0.3, 0.7), (1.0, 0.1, 0.9), (0.3, 0.1, 0.2), (1.0, 1.5, -0.5), (5, 0.01, 4.99)],
)
def test_room_is_exact_in_decimal(max_usd, estimate, room):
    # 1.0 - 0.3 is 0.7000000000000001 in floats; the ledger compares decimal strings.
    assert budget.reservation_room(max_usd, estimate) == room
    assert repr(budget.reservation_room(max_usd, estimate)) == repr(room)


@pytest.mark.parametrize(
    ("spent", "max_usd", "used_up"),
    [(0.99, 1.0, False), (1.0, 1.0, True), (1.2, 1.0, True), (0.0, 0.0, True)],
)
def test_a_budget_is_used_up_once_spend_reaches_it(spent, max_usd, used_up):
    assert budget.budget_used_up(spent, max_usd) is used_up
