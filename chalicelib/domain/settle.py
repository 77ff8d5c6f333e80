"""Settle rules: what a finished run does to its trigger. Pure functions, explicit units."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime, timedelta

__all__ = [
    "limit_reached",
    "Limits",
    "disable_reason_after_run",
    "lateness_ms",
    "retry_delay_s",
    "clip_text",
    "result_problem",
    "MAX_RESULT_USD",
]


@dataclass(frozen=True)
class Limits:
    """The limits that can disable a trigger."""

    max_runs: int | None = None
    expires_at: datetime | None = None
    max_failures: int = 5


def limit_reached(*, run_count: int, limits: Limits, now: datetime) -> str | None:
    """A limit that already says stop (``max_runs`` used up, ``expires_at`` passed), else
    None: an enable must not start a trigger its limits stopped, or it runs once more."""
    if limits.max_runs is not None and run_count >= limits.max_runs:
        return "max_runs"
    if limits.expires_at is not None and now >= limits.expires_at:
        return "expired"
    return None


def disable_reason_after_run(
    *,
    kind: str,
    succeeded: bool,
    consecutive_failures: int,
    run_count: int,
    limits: Limits,
    next_fire_at: datetime | None,
    now: datetime,
) -> str | None:
    """The reason to disable the trigger after a run, or None to keep it active.

    Checked in this order, so the reason shown is the most useful one:
    1. ``failures``: ``max_failures`` consecutive failed runs (poison workflow).
    2. ``max_runs``: the run budget is used up (an ``at`` trigger is done after one run).
    3. ``expired``: ``expires_at`` has passed, or the next slot would fall after it.
    """
    if not succeeded and consecutive_failures >= limits.max_failures:
        return "failures"
    if limits.max_runs is not None and run_count >= limits.max_runs:
        return "max_runs"
    if kind == "at" and next_fire_at is None:
        return "max_runs"
    if limits.expires_at is not None:
        if now >= limits.expires_at:
            return "expired"
        if next_fire_at is not None and next_fire_at > limits.expires_at:
            return "expired"
    return None


def lateness_ms(scheduled_for: datetime | None, started_at: datetime) -> int | None:
    """How late a run started relative to its slot (never negative)."""
    if scheduled_for is None:
        return None
    return max(0, int((started_at - scheduled_for) / timedelta(milliseconds=1)))


def retry_delay_s(
    attempt: int, *, base_s: float = 2.0, factor: float = 4.0, max_s: float = 300.0
) -> float:
    """Backoff before retry ``attempt`` (1-based) of a failed event run: 2 s, 8 s, 32 s ... capped."""
    return min(max_s, base_s * factor ** max(0, attempt - 1))


def clip_text(text: str, *, max_bytes: int) -> str:
    """``text`` cut to at most ``max_bytes`` of UTF-8, marked when cut."""
    raw = text.encode("utf-8")
    if len(raw) <= max_bytes:
        return text
    return raw[: max_bytes - 16].decode("utf-8", errors="ignore") + "...[clipped]"


# A single run reporting more than this is a unit mistake (cents, or micro-dollars).
MAX_RESULT_USD = 1_000_000.0


def result_problem(
    *, state: object, next_fire_at: object, cost_usd: object, output: object, max_state_bytes: int
) -> str | None:
    """Why a workflow's result cannot be settled as it is, or None if it can.

    Everything a workflow returns is checked before any of it is written: NaN or
    Infinity cannot be stored (DynamoDB numbers, JSON), and one bad value must fail the
    run with this message rather than break the settle that releases its claim, lease
    and budget hold.
    """
    if isinstance(cost_usd, bool) or not isinstance(cost_usd, int | float):
        return f"the workflow returned cost_usd {cost_usd!r}: it must be a number"
    if not math.isfinite(cost_usd) or cost_usd < 0 or cost_usd > MAX_RESULT_USD:
        return (
            f"the workflow returned cost_usd {cost_usd!r}: it must be a finite number "
            f"from 0 to {MAX_RESULT_USD:,.0f}"
        )
    if next_fire_at is not None and not isinstance(next_fire_at, datetime):
        return f"the workflow returned next_fire_at {next_fire_at!r}: it must be a datetime"
    if state is not None:
        if not isinstance(state, dict):
            return (
                f"the workflow returned a state of type {type(state).__name__}: it must be a dict"
            )
        try:
            text = json.dumps(state, allow_nan=False)
        except (TypeError, ValueError) as exc:
            return f"the workflow returned a state that is not JSON: {exc}"
        if len(text) > max_state_bytes:
            return f"the workflow returned a state larger than {max_state_bytes} bytes"
    if output is not None:
        try:
            json.dumps(output, allow_nan=False, default=str)
        except (TypeError, ValueError) as exc:
            return f"the workflow returned an output that is not JSON: {exc}"
    return None
