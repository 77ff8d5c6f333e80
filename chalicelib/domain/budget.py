"""Budget math: which period a run is charged to, how much to reserve, when it is used up.

Pure: the instant and the timezone are arguments. A trigger's budget is ``limits.max_usd``
per ``budget_period``; periods follow the wall clock of the trigger's timezone (a cron
trigger's ``schedule.timezone``, UTC for every other kind), so a "day" for a trigger in
Europe/Berlin starts at midnight in Berlin, and an ISO week starts on Monday.

Money is rounded to whole micro-dollars before it is written: DynamoDB adds and compares
the decimal strings exactly, so ``0.1 + 0.2`` reserved is exactly ``0.3`` there, and the
room left (``max - estimate``) is the same number on both sides of the comparison.
"""

from __future__ import annotations

import math
import zoneinfo
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

__all__ = [
    "PERIODS",
    "DEFAULT_ESTIMATE_USD",
    "Period",
    "usd",
    "period_of",
    "budget_timezone",
    "estimate_usd",
    "reservation_room",
    "budget_used_up",
]

PeriodName = Literal["day", "week", "month", "total"]
PERIODS: tuple[str, ...] = ("day", "week", "month", "total")
# What a run with no known cost reserves: small, so the first run of a period is not
# refused for a cost nobody knows yet, but not zero, so two first runs still share it.
DEFAULT_ESTIMATE_USD = 0.01
_MICRO = 1_000_000


@dataclass(frozen=True)
class Period:
    """One budget period: its ledger key and where it ends (None for ``total``)."""

    key: str
    ends_at: datetime | None


def usd(value: object) -> float:
    """A money amount rounded to micro-dollars; anything not a finite number >= 0 is 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    if not math.isfinite(value) or value <= 0:
        return 0.0
    return round(round(float(value) * _MICRO) / _MICRO, 6)


def budget_timezone(kind: str, schedule: dict | None) -> str:
    """The timezone a trigger's periods follow: a cron's own zone, else UTC."""
    if kind in ("cron", "business_day") and schedule and isinstance(schedule.get("timezone"), str):
        return schedule["timezone"] or "UTC"
    return "UTC"


def period_of(period: str, *, at: datetime, timezone: str) -> Period:
    """The period containing the aware instant ``at``, on the wall clock of ``timezone``."""
    if at.tzinfo is None:
        raise ValueError("at must be timezone-aware")
    if period == "total":
        return Period("total", None)
    zone = zoneinfo.ZoneInfo(timezone)
    wall = at.astimezone(zone)
    day = wall.date()
    if period == "day":
        key, end = f"day:{day.isoformat()}", day + timedelta(days=1)
    elif period == "week":
        year, week, _ = day.isocalendar()
        key = f"week:{year:04d}-W{week:02d}"
        end = day + timedelta(days=7 - day.weekday())  # the next Monday
    elif period == "month":
        key = f"month:{day.year:04d}-{day.month:02d}"
        end = (day.replace(day=1) + timedelta(days=32)).replace(day=1)
    else:
        raise ValueError(f"unknown budget period {period!r}")
    # Midnight local time of the next period; a zone whose DST jump skips midnight
    # resolves it forward (fold=0), which is still after every instant of the period.
    ends_at = datetime(end.year, end.month, end.day, tzinfo=zone).astimezone(UTC)
    return Period(key, ends_at)


def estimate_usd(last_cost_usd: object, *, default: float = DEFAULT_ESTIMATE_USD) -> float:
    """What to reserve before a run: the last run's cost if known, else a small default."""
    last = usd(last_cost_usd)
    return last if last > 0 else usd(default)


def reservation_room(max_usd: float, estimate: float) -> float:
    """The most that may already be committed (spent + reserved) for ``estimate`` to fit.

    A run may start when ``committed + estimate <= max``, i.e. ``committed <= room``.
    DynamoDB cannot add two attributes in a condition, so the sum is moved to this side.
    """
    return round(usd(max_usd) - usd(estimate), 6)


def budget_used_up(spent_usd: float, max_usd: float) -> bool:
    """True once the period's spend reached the budget: the trigger stops here."""
    return usd(spent_usd) >= usd(max_usd)
