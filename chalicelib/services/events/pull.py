"""The pull of the next event: what keeps a trigger's queue moving without the heartbeat.

A trigger's queue (``pending_by_trigger``) holds its events waiting for a run slot, the
longest waiting first. Ingress sends a message only for an event that finds room to run
(the runner that takes it runs the queue's head instead if an older event waits); after
that, every settled (or refused, or lost) event run *pulls* the queue's head: it sends
that event's message. So a burst drains run after run, and a pull
that cannot be sent is raised (``PullFailed``), never left silently to the sweep.
"""

from __future__ import annotations

from chalicelib.domain import ids
from chalicelib.domain.event_rules import parse_pending_key
from chalicelib.domain.records import PendingRow
from chalicelib.observability import logger, record_metric
from chalicelib.store import event_reads
from chalicelib.store.sqs import FireMessage, send_fires

__all__ = ["PULL_ATTEMPTS", "PullFailed", "message_for", "dispatch_pending"]

PULL_ATTEMPTS = 3


class PullFailed(Exception):
    """The next event of a trigger's queue could not be sent (the chain would stall)."""


def message_for(row: PendingRow, *, waited: bool = False) -> FireMessage | None:
    """The fire message of a pending-index row (its sort key carries the run id).

    ``waited`` marks the message of an event that waited out of the queue (a retry, a
    deferral, or one the sweep resends): it carries its ready time as ``scheduled_ms``,
    which tells the runner to put the event back in its trigger's queue first.
    """
    ready_ms, run_id = parse_pending_key(row.pending_sk)
    trigger_id = ids.trigger_id_of_run(run_id) if run_id else None
    if run_id is None or trigger_id is None:
        return None
    return FireMessage(
        run_id=run_id,
        trigger_id=trigger_id,
        surface="event",
        event_id=row.id,
        scheduled_ms=ready_ms if waited else None,
    )


def dispatch_pending(trigger_id: str, *, limit: int = 1) -> int:
    """Enqueue the first event(s) of a trigger's queue; returns how many were sent.

    The send is tried ``PULL_ATTEMPTS`` times; if it still fails, ``PullFailed`` is
    raised: a pull is what keeps the queue moving, and a silent failure would leave the
    chain to the sweep (30 s or more later).
    """
    queue = event_reads.queue_of(trigger_id, limit=limit)
    messages = [m for m in map(message_for, queue) if m]
    if not messages:
        return 0
    pending = messages
    for _attempt in range(PULL_ATTEMPTS):
        try:
            pending = send_fires(pending)
        except Exception:  # send_fires answers failures; anything else is retried too
            logger.exception("pull send raised", extra={"trigger_id": trigger_id})
        if not pending:
            return len(messages)
    record_metric("EventPullFailed")
    raise PullFailed(f"{len(pending)} pull message(s) for {trigger_id} could not be sent")
