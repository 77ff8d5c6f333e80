"""Event rules: attempts and retries, how an attempt ended, the sweep's keys. Pure, explicit units.

The event services (``services/events``) apply these; the fenced writes are in
``store/event_writes.py``. Every instant is epoch milliseconds (``*_ms``); ``now_ms`` is
always an argument.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from chalicelib.domain.settle import retry_delay_s
from chalicelib.domain.trigger_spec import EVENT_DEFAULTS

__all__ = [
    "DEFAULT_MAX_ATTEMPTS",
    "DEFAULT_SOURCE",
    "TERMINAL",
    "EVENT_STATUSES",
    "RUN_ENDED",
    "LOST_AFTER_SETTLE",
    "RunOutcome",
    "max_attempts_of",
    "source_of",
    "will_retry",
    "attempt_status",
    "ready_ms_after",
    "pending_key",
    "parse_pending_key",
    "run_outcome",
    "lease_end_ms",
    "expired",
]

DEFAULT_MAX_ATTEMPTS: int = EVENT_DEFAULTS["max_attempts"]
DEFAULT_SOURCE = "webhook"
# How an event (and an event run) may end.
TERMINAL = ("succeeded", "failed", "skipped", "refused", "budget_exceeded")
# How a run record (or a trigger's last_run) may end: the event statuses, and lost.
RUN_ENDED = (*TERMINAL, "lost")
# Every status an event may show: waiting or running, ended, kept beyond its trigger's
# rate limit (``throttled``), or folded into a window's run (``batched``).
EVENT_STATUSES = ("pending", "running", *TERMINAL, "throttled", "batched")
LOST_AFTER_SETTLE = (
    "lost: the runner stopped after giving the run's slot back, before recording how it ended"
)


def max_attempts_of(event: dict) -> int:
    """A trigger's ``event.max_attempts``: attempts per event, the first included (default 3)."""
    return int(event.get("max_attempts") or DEFAULT_MAX_ATTEMPTS)


def source_of(event: dict, *, default: str = DEFAULT_SOURCE) -> Any:
    """A trigger's ``event.source`` (a trigger stored before sources existed is a webhook)."""
    return event.get("source", default)


def will_retry(attempt: int, max_attempts: int) -> bool:
    """Whether a failed attempt ``attempt`` (1-based) is followed by another one."""
    return attempt < max_attempts


def attempt_status(status: str | None) -> str:
    """The status an attempt ends with: a terminal run status as it is, anything else failed."""
    return status if status in TERMINAL else "failed"


def ready_ms_after(
    *, status: str, attempt: int | None, defer_s: int | None, now_ms: int
) -> int | None:
    """When an attempt that ended ``status`` may start again, or None if it ends the event.

    1. A deferred run (a guard asked it to wait) waits ``defer_s`` (at least 1 s); it is
       not an attempt.
    2. A failed attempt waits out its backoff (``retry_delay_s``: 2 s, 8 s, 32 s ...).
    3. Anything else is terminal. Whether attempts are left is the store's fence.
    """
    if defer_s is not None:
        return now_ms + max(1, int(defer_s)) * 1000
    if status == "failed":
        return now_ms + int(retry_delay_s(max(1, attempt or 1)) * 1000)
    return None


def pending_key(ready_ms: int, run_id: str) -> str:
    """The sort key of the pending indexes: ``<ready ms:013d>#<run id>`` (sorts by time)."""
    return f"{ready_ms:013d}#{run_id}"


def parse_pending_key(key: str | None) -> tuple[int | None, str | None]:
    """``pending_key`` read back: (ready ms, run id); None for a part that is not there."""
    ready, sep, run_id = (key or "").partition("#")
    if not sep:
        return (int(ready) if ready.isdigit() else None), None
    return (int(ready) if ready.isdigit() else None), (run_id or None)


@dataclass(frozen=True)
class RunOutcome:
    """How an attempt's run ended, read from what it left behind."""

    status: str
    error: str | None = None
    finished_ms: int | None = None
    # Where it was read: "record" (nothing to write), "last_run" or "lost" (the run
    # record is to be written from it).
    found_in: str = "record"


def run_outcome(
    *,
    run_id: str,
    started_ms: int,
    record_status: str | None,
    record_finished_ms: int | None,
    last_run: dict,
    now_ms: int,
) -> RunOutcome:
    """How the attempt of run ``run_id``, started at ``started_ms``, ended.

    1. Its run record, if it ended after this attempt started (the runner writes it
       after settling the trigger; the reaper writes ``lost``). Retries keep the run id,
       so an older record is an older attempt's.
    2. Else the trigger's ``last_run``, written by the same write that settled the run,
       if it names this run and is not older than the attempt: the runner died between
       settling and recording.
    3. Else the run is lost (its runner died after giving its slot back).
    """
    if record_status in RUN_ENDED and int(record_finished_ms or 0) >= started_ms:
        return RunOutcome(str(record_status), found_in="record")
    if (
        last_run.get("id") == run_id
        and last_run.get("status") in RUN_ENDED
        and int(last_run.get("finished_at") or 0) >= started_ms
    ):
        return RunOutcome(
            str(last_run["status"]),
            error=last_run.get("error"),
            finished_ms=int(last_run["finished_at"]),
            found_in="last_run",
        )
    return RunOutcome("lost", error=LOST_AFTER_SETTLE, finished_ms=now_ms, found_in="lost")


def lease_end_ms(*, lease_ms: int | None, ready_ms: int, runner_timeout_s: int) -> int:
    """Until when a running attempt's run may still be live: its lease, else the longest
    a run started at ``ready_ms`` could hold it (an event stored before leases were kept)."""
    if lease_ms is not None:
        return int(lease_ms)
    return ready_ms + (runner_timeout_s + 60) * 1000


def expired(limits: dict, *, now: datetime) -> bool:
    """Whether ``limits.expires_at`` (ISO-8601) has passed; an unreadable one never expires."""
    expires_at: Any = limits.get("expires_at")
    if not isinstance(expires_at, str):
        return False
    try:
        at = datetime.fromisoformat(expires_at.replace("Z", "+00:00"))
    except ValueError:
        return False
    return now >= at
