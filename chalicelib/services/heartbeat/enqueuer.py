"""The enqueuer: one due shard of a fanned-out heartbeat tick (``fanout.py`` sends them).

Each tick message names a shard and the tick's ``now``. The enqueuer reads that shard's
window exactly as the heartbeat reads it inline (``shards.tick_shard``: the fenced
cursor, the deadline and its hand-over, the overdue resends, the reaping), with the
tick's ``now``, so every shard of one tick reads the same window, and with a deadline
of its own, taken from its own invocation's time left.

A message delivered twice, or two enqueuers on one shard at once, are harmless: the
cursor's move is fenced (one of them sends the window, the other only what is overdue)
and a fire runs behind the runner's claim, one conditional write. A message older than
one tick period (``CRONHOOK_HEARTBEAT_S``: the enqueuers fell behind, or SQS delivered
it again after a failed invocation) is dropped: the next tick's message for that shard
reads the same window, the cursor being where this one would have started.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from datetime import datetime

from chalicelib.domain.epoch_ms import dt, ms
from chalicelib.observability import logger, record_metric
from chalicelib.services.heartbeat.report import TickReport
from chalicelib.services.heartbeat.shards import TICK_BUDGET_S, record_fire_counts, tick_shard
from chalicelib.services.pipeline import Pipeline
from chalicelib.settings import get_settings
from chalicelib.store.ticks import TickMessage

__all__ = ["SEND_RESERVE_S", "MIN_BUDGET_S", "handle_ticks", "tick_message"]

# The reads stop this long before the invocation's timeout, for the sends after them
# (the heartbeat: a 40 s budget in a 60 s timeout).
SEND_RESERVE_S = 20.0
# The least a shard's reads get, however little time the invocation has left.
MIN_BUDGET_S = 1.0


def handle_ticks(
    bodies: Iterable[str],
    *,
    clock: Callable[[], datetime],
    remaining_s: Callable[[], float],
    pipeline: Pipeline,
) -> list[TickReport | None]:
    """Each message of a batch in turn (the event source mapping sends one at a time)."""
    return [
        tick_message(body, received=clock(), remaining_s=remaining_s(), pipeline=pipeline)
        for body in bodies
    ]


def tick_message(
    body: str, *, received: datetime, remaining_s: float, pipeline: Pipeline
) -> TickReport | None:
    """Read the shard ``body`` names as of its tick; None if the message was dropped.

    ``received`` is when the enqueuer took it (the clock, read once by the entry point);
    ``remaining_s`` the invocation's time left.
    """
    try:
        message = TickMessage.parse(body)
    except ValueError:
        logger.warning("not a tick message; dropped", extra={"body": body[:200]})
        record_metric("TicksDropped", reason="malformed")
        return None
    period_ms = max(1, get_settings().heartbeat_s) * 1000
    lag_ms = ms(received) - message.now_ms
    if abs(lag_ms) > period_ms:
        # The next tick's message reads this window (the cursor has not moved for it).
        logger.info(
            "tick message older than a tick period; the next tick reads its shard",
            extra={"shard": message.shard_no, "lag_ms": lag_ms},
        )
        record_metric("TicksDropped", reason="stale")
        return None
    # The sends count their DelaySeconds from the report's clock: it must read the time
    # the enqueuer sends at, so it starts at the tick's now, ``lag_ms`` ago.
    began = time.perf_counter()
    started = began - max(0, lag_ms) / 1000
    report = TickReport(now_ms=message.now_ms, started=started, shards_read=1)
    budget_s = max(MIN_BUDGET_S, min(TICK_BUDGET_S, remaining_s - SEND_RESERVE_S))
    tick_shard(
        message.shard_no,
        now=dt(message.now_ms),
        deadline=began + budget_s,
        pipeline=pipeline,
        report=report,
    )
    report.duration_ms = (time.perf_counter() - began) * 1000
    _record(report, shard_no=message.shard_no, lag_ms=lag_ms)
    return report


def _record(report: TickReport, *, shard_no: int, lag_ms: int) -> None:
    record_metric("EnqueuerDuration", report.duration_ms, unit="Milliseconds")
    record_fire_counts(report)
    summary = {k: v for k, v in report.__dict__.items() if k not in ("run_ids", "started")}
    logger.info("enqueuer", extra={**summary, "shard": shard_no, "lag_ms": lag_ms})
