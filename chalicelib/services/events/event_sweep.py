"""The event sweep: the heartbeat's safety net for event bookkeeping (``sweep``).

Every heartbeat tick calls ``sweep(now=, report=)``. The happy path never needs it: a
stored event gets its message, every settled run pulls the next one. The sweep restarts
what a lost message or a dead runner left behind, ``SWEEP_GRACE_S`` after it should have
moved. A message that was not lost after all is harmless: the start fence drops it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from chalicelib.domain import ids
from chalicelib.domain.event_rules import lease_end_ms, parse_pending_key
from chalicelib.domain.records import PendingRow
from chalicelib.observability import logger, record_metric
from chalicelib.services.events.pull import message_for
from chalicelib.services.events.recovery import recover
from chalicelib.services.events.spec import ms
from chalicelib.settings import get_settings
from chalicelib.store import event_reads, shard_registry, triggers
from chalicelib.store.sqs import FireMessage, send_fires

__all__ = ["SWEEP_GRACE_S", "SWEEP_ROWS_PER_SHARD", "sweep"]

# A pending event this long past its ready time has lost its message: the sweep resends.
SWEEP_GRACE_S = 30
SWEEP_ROWS_PER_SHARD = 1000


def sweep(*, now: datetime, report: Any) -> None:
    """The safety net of event bookkeeping, run by every heartbeat tick.

    ``pending_all`` holds every event whose bookkeeping is not over: pending (waiting for
    a slot, a retry or a deferral) and running. Rows whose ready time is more than
    ``SWEEP_GRACE_S`` past are read, grouped by trigger, and sorted out with one
    (eventually consistent) GetItem of the trigger:

    - its run is in the trigger's ``in_flight``: it runs. If its runner died, the
      reaper settles it when the lease expires (``EventRunPolicy.after_lost``).
    - it is in the trigger's queue (``pending_by_trigger``, one KEYS_ONLY query per
      trigger with such rows): it waits its turn while a run is in flight, which pulls
      the next event when it settles. With no run in flight its message was lost: one
      message per trigger restarts the queue (each settled run pulls the next).
    - neither: the event is read. A pending one is a retry or deferral whose message
      was lost: it gets its message again (the runner puts it back in its queue). A
      running one whose lease is ``SWEEP_GRACE_S`` past had its run end (or vanish)
      without its bookkeeping: ``recover`` finishes it.
    """
    # The tick read the shard registry already; a sweep run on its own reads it.
    shards = getattr(report, "shards_read", 0) or None
    rows = _overdue_by_trigger(until_sk=f"{ms(now) - SWEEP_GRACE_S * 1000:013d}~", shards=shards)
    messages: list[FireMessage] = []
    for trigger_id, found in rows.items():
        found.sort(key=lambda pair: pair[0].pending_sk or "")
        try:
            messages += _sweep_trigger(trigger_id, found, now=now, report=report)
        except Exception:  # one trigger's trouble must not stop the sweep of the others
            report.errors += 1
            logger.exception("event sweep of a trigger failed", extra={"trigger_id": trigger_id})
    if not messages:
        return
    failed = send_fires(messages)
    sent = len(messages) - len(failed)
    report.events_dispatched += sent
    record_metric("EventsSwept", sent)
    logger.info("pending events redispatched", extra={"sent": sent, "failed": len(failed)})


def _overdue_by_trigger(
    *, until_sk: str, shards: int | None = None
) -> dict[str, list[tuple[PendingRow, str]]]:
    """Every shard's overdue rows, as (row, run id) grouped by trigger."""
    rows: dict[str, list[tuple[PendingRow, str]]] = {}
    read = range(shards) if shards else shard_registry.shards_to_read(get_settings().due_shards)
    for shard in read:
        for row in event_reads.overdue(str(shard), until_sk=until_sk, limit=SWEEP_ROWS_PER_SHARD):
            _, run_id = parse_pending_key(row.pending_sk)
            trigger_id = ids.trigger_id_of_run(run_id) if run_id else None
            if run_id is not None and trigger_id is not None:
                rows.setdefault(trigger_id, []).append((row, run_id))
    return rows


def _sweep_trigger(
    trigger_id: str, found: list[tuple[PendingRow, str]], *, now: datetime, report: Any
) -> list[FireMessage]:
    """The sweep of one trigger's overdue rows (oldest first): the messages to send."""
    item = triggers.get_trigger(trigger_id, consistent=False)
    in_flight = triggers.in_flight_of(item) if item is not None else {}
    loose = [(row, run_id) for row, run_id in found if run_id not in in_flight]
    if not loose:
        return []
    last_sk = loose[-1][0].pending_sk or ""
    queued = {
        row.id for row in event_reads.queue_of(trigger_id, limit=len(loose), until_sk=last_sk)
    }
    messages: list[FireMessage] = []
    head: PendingRow | None = None
    for row, run_id in loose:
        if row.id in queued:
            head = head or row
            continue
        verdict = _sort_out(row, run_id, now=now, report=report)
        if verdict == "queued":
            head = head or row  # queued after all (the query ran behind the index)
        elif verdict == "lost message":
            # A retry or a deferral overdue by SWEEP_GRACE_S: its message was lost.
            message = message_for(row, waited=True)
            if message is not None:
                messages.append(message)
    if head is not None and not in_flight:
        # The queue has nobody to pull it: its first event's message was lost.
        message = message_for(head, waited=True)
        if message is not None:
            messages.append(message)
    return messages


def _sort_out(row: PendingRow, run_id: str, *, now: datetime, report: Any) -> str | None:
    """An overdue row neither in flight nor queued: ``queued``, ``lost message``, or None
    (nothing to send; a running one whose run is over is recovered here)."""
    event = event_reads.get_event(row.id)
    if event is None or event.run_id != run_id:
        return None  # gone, or replayed since the index row was read
    if event.status == "pending":
        return "queued" if event.pending_trigger else "lost message"
    if event.status == "running":
        ready_ms, _ = parse_pending_key(row.pending_sk)
        until_ms = lease_end_ms(
            lease_ms=int(event.lease_ms) if event.lease_ms is not None else None,
            ready_ms=ready_ms or 0,
            runner_timeout_s=get_settings().runner_timeout_s,
        )
        if ms(now) < until_ms + SWEEP_GRACE_S * 1000:
            return None  # its run may still be settling: give it its lease and the grace
        if recover(event, now=now) is not None:
            report.events_recovered += 1
    return None
