"""How an event's attempt ends: retried after its backoff, deferred, or terminal.

Three callers may record the same attempt: the run's after-settle hook
(``EventRunPolicy``), the reaper's lost hook, and the sweep's recovery of a run whose
hook never ran. Every write is fenced on (running, this run id), so exactly one counts.
"""

from __future__ import annotations

from chalicelib.domain.event_rules import ready_ms_after
from chalicelib.observability import logger
from chalicelib.services.events.spec import pending_shard
from chalicelib.store import event_writes
from chalicelib.store.sqs import FireMessage, send_fires

__all__ = ["settle_event"]


def settle_event(
    event_id: str,
    *,
    run_id: str,
    trigger_id: str,
    status: str,
    attempt: int | None,
    max_attempts: int,
    now_ms: int,
    defer_s: int | None = None,
) -> str | None:
    """Record how an attempt ended: terminal, or back to pending for a retry. Fenced on the run.

    Returns ``retry``, ``deferred`` or the terminal status; None if fenced out (another
    caller recorded it). A terminal end also takes the event out of the sweep's index.

    A failed attempt waits out its backoff (``retry_at``, enforced by the start fence).
    ``defer_s`` is a run a guard asked to wait (its serialize_key is held): the attempt
    does not count, and the event may start as soon as a message comes (the key's
    release sends one), or at ``defer_s`` at the latest.
    """
    counted = defer_s is None
    ready_ms = ready_ms_after(status=status, attempt=attempt, defer_s=defer_s, now_ms=now_ms)
    if ready_ms is not None:
        waits = event_writes.wait_again(
            event_id,
            run_id=run_id,
            ready_ms=ready_ms,
            shard=pending_shard(event_id),
            counted=counted,
            max_attempts=max_attempts,
        )
        if waits:
            _send_when_ready(
                event_id, run_id=run_id, trigger_id=trigger_id, ready_ms=ready_ms, now_ms=now_ms
            )
            return "retry" if counted else "deferred"
        if not counted:
            return None
        # attempts used up (or fenced out): fall through to the terminal write
    if event_writes.end_attempt(event_id, run_id=run_id, status=status, now_ms=now_ms):
        return status
    return None


def _send_when_ready(
    event_id: str, *, run_id: str, trigger_id: str, ready_ms: int, now_ms: int
) -> None:
    """The message of an event that waits: it lands when the wait is over (or the sweep resends)."""
    message = FireMessage(
        run_id=run_id,
        trigger_id=trigger_id,
        surface="event",
        event_id=event_id,
        scheduled_ms=ready_ms,
        delay_s=max(0, (ready_ms - now_ms + 999) // 1000),
    )
    if send_fires([message]):
        logger.warning(
            "event retry not queued; the heartbeat will dispatch it",
            extra={"trigger_id": trigger_id, "event_id": event_id},
        )
