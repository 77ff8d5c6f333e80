"""The tick's sends: ten at a time, and the cursor moved back before a slot not sent."""

from __future__ import annotations

import time
from dataclasses import replace

from chalicelib.observability import logger
from chalicelib.services.heartbeat.report import TickReport
from chalicelib.store import cursors
from chalicelib.store.sqs import MAX_DELAY_S, FireMessage, send_fires

__all__ = ["send"]


def send(
    messages: list[FireMessage],
    *,
    shard: str,
    cursor_before: int | None,
    cursor_after: int | None,
    report: TickReport,
) -> None:
    """Send ten at a time; if any new slot could not be sent, move the cursor back before it.

    ``DelaySeconds`` counts from when each batch is sent, not from the tick's ``now``: the
    reads and sends before it took time, and a fire must land on its second.
    """
    failed: list[FireMessage] = []
    sent_from = time.perf_counter()
    for start in range(0, len(messages), 10):
        failed += _send_batch(
            messages[start : start + 10], shard=shard, cursor_before=cursor_before, report=report
        )
    report.send_ms += (time.perf_counter() - sent_from) * 1000
    report.send_failed += len(failed)
    report.enqueued += len(messages) - len(failed)
    new_failed = [
        int(m.scheduled_ms or 0)
        for m in failed
        if cursor_before is None or int(m.scheduled_ms or 0) > cursor_before
    ]
    if not new_failed or cursor_after is None:
        return
    back = min(new_failed) - 1
    if cursor_before is not None:
        back = max(back, cursor_before)
    # Fenced on our own value: if another tick moved it meanwhile, the overdue pass
    # resends what failed here (late, never lost).
    if not cursors.advance_cursor(shard, expected=cursor_after, cursor_ms=back):
        logger.warning("cursor moved by another tick; unsent fires go out as overdue")
    logger.warning(
        "enqueue failed; the next tick sends these fires again",
        extra={"shard": shard, "failed": len(new_failed)},
    )


def _send_batch(
    messages: list[FireMessage], *, shard: str, cursor_before: int | None, report: TickReport
) -> list[FireMessage]:
    """Send up to ten, each delayed from now (not from the tick's start); those not sent."""
    sent_at_ms = report.now_ms + int((time.perf_counter() - report.started) * 1000)
    batch = [
        replace(
            m, delay_s=max(0, min(MAX_DELAY_S, (int(m.scheduled_ms or 0) - sent_at_ms) // 1000))
        )
        for m in messages
    ]
    report.sent_late += sum(
        1
        for m in batch
        if int(m.scheduled_ms or 0) < sent_at_ms
        and (cursor_before is None or int(m.scheduled_ms or 0) > cursor_before)
        and int(m.scheduled_ms or 0) >= report.now_ms
    )
    try:
        failed_now = send_fires(batch)
    except Exception:
        logger.exception("sending fires failed", extra={"shard": shard})
        failed_now = batch
    failed_ids = {m.run_id for m in failed_now}
    report.run_ids.extend(m.run_id for m in batch if m.run_id not in failed_ids)
    return list(failed_now)
