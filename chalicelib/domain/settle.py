"""Settle rules: what a finished run does to its trigger. Pure functions, explicit units."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

__all__ = [
    "Limits",
    "disable_reason_after_run",
    "lateness_ms",
    "retry_delay_s",
    "clip_text",
]


@dataclass(frozen=True)
class Limits:
    """The limits that can disable a trigger."""

    max_runs: int | None = None
    expires_at: datetime | None = None
    max_failures: int = 5


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
