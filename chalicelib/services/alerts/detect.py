"""Where transitions are detected: settle, a lost run, a disable. They are only *queued*
here (one SendMessageBatch, only when a run made a transition); the alerts worker puts
them on the bus and notifies, off the fire path.

Detection reads nothing: the streak before the run is on the item its claim returned,
the streak after it on the item its settle returned, the disable reason is known where
the disable is written. A run that makes no transition (most runs) costs no AWS call.
Queuing never fails a run: a failure to queue is logged and counted (``AlertsNotQueued``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from chalicelib.domain.alerts import Transition, run_transitions
from chalicelib.domain.epoch_ms import ms
from chalicelib.observability import logger, record_metric
from chalicelib.store.alert_queue import send_alert_messages

__all__ = ["note_run", "note_lost", "note_disabled", "queue_transitions", "request_sweep"]


def note_run(
    item: Any,
    settled: Any,
    *,
    run_id: str,
    succeeded: bool | None,
    failure_counts: bool,
    disabled_reason: str | None,
    error: str | None,
    now: datetime,
) -> list[str]:
    """Queue the transitions of one settled run (``item``: as claimed; ``settled``: as
    settled); the kinds queued (usually none)."""
    # The streak before the run: its own, or the one a person's enable cleared (a failing
    # trigger disabled, fixed and re-enabled still recovers with its first success).
    before = max(int(item.consecutive_failures or 0), int(item.failures_paused or 0))
    kinds = run_transitions(
        succeeded=succeeded,
        failure_counts=failure_counts,
        failures_before=before,
        disabled_reason=disabled_reason,
    )
    if not kinds:
        return kinds
    queue_transitions(
        [
            Transition(
                kind=kind,
                tenant=item.tenant,
                trigger_id=item.id,
                at_ms=ms(now),
                run_id=run_id,
                reason=disabled_reason if kind == "disabled" else None,
                error=(error or "")[:1000] or None,
                consecutive_failures=int(settled.consecutive_failures or 0),
                failures_before=before,
            )
            for kind in kinds
        ]
    )
    return kinds


def note_lost(fresh: Any, *, run_id: str, disabled_reason: str | None, now: datetime) -> None:
    """A run reaped as lost counts as a failure: its ``failed`` (and ``disabled``)."""
    streak = int(fresh.consecutive_failures or 0)
    transitions = [
        Transition(
            kind="failed",
            tenant=fresh.tenant,
            trigger_id=fresh.id,
            at_ms=ms(now),
            run_id=run_id,
            error="lost: the run's lease ran out before it settled",
            consecutive_failures=streak,
            failures_before=max(0, streak - 1),
        )
    ]
    if disabled_reason:
        transitions.append(
            Transition(
                kind="disabled",
                tenant=fresh.tenant,
                trigger_id=fresh.id,
                at_ms=ms(now),
                run_id=run_id,
                reason=disabled_reason,
            )
        )
    queue_transitions(transitions)


def note_disabled(
    item: Any, *, reason: str, now: datetime, run_id: str | None = None, note: str | None = None
) -> None:
    """A trigger was disabled (budget, expiry, a source gone, a person's pause)."""
    queue_transitions(
        [
            Transition(
                kind="disabled",
                tenant=item.tenant,
                trigger_id=item.id,
                at_ms=ms(now),
                run_id=run_id,
                reason=reason if not note else f"{reason}: {note}"[:1000],
            )
        ]
    )


def queue_transitions(transitions: list[Transition]) -> None:
    """Send the transitions to the alerts queue; never raises (a run must not fail here)."""
    if not transitions:
        return
    try:
        queued = send_alert_messages([{"k": "transition", **t.to_dict()} for t in transitions])
    except Exception:
        record_metric("AlertsNotQueued", len(transitions))
        logger.exception(
            "lifecycle transitions not queued",
            extra={"trigger_id": transitions[0].trigger_id, "kinds": [t.kind for t in transitions]},
        )
        return
    if queued:
        record_metric("Transitions", len(transitions))


def request_sweep(*, now: datetime, report: Any = None) -> None:
    """A heartbeat sweep: ask the alerts function for the ``late`` and ``no_event`` sweep
    as of this tick (one message; its reads are the alerts function's, off the tick)."""
    try:
        send_alert_messages([{"k": "sweep", "at_ms": ms(now)}])
    except Exception:
        if report is not None:
            report.errors += 1
        logger.exception("alert sweep not requested; the next tick asks again")
