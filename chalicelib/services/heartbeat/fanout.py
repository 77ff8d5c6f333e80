"""The heartbeat's fan-out: one tick message per due shard, each read by an enqueuer.

Off by default (``CRONHOOK_FANOUT_SHARDS`` 0, the ``FanOutShards`` stack parameter): a
small stack's whole tick is a few milliseconds per shard, and one invocation a minute
is the cheapest way to spend them (docs/architecture.md, "Fan-out"). From
``FanOutShards`` due shards up, the heartbeat sends one message per shard to the tick
queue (one SendMessageBatch per ten shards) and an enqueuer Lambda reads each shard
(``enqueuer.py``), every one with its own CPU and its own deadline, while the heartbeat
runs the sweeps.

Nothing is lost on the way: a shard whose message could not be sent is read by the
heartbeat itself, inline, as when fan-out is off. A message that is sent but never
handled (the enqueuer failed, its message expired) loses nothing either: the shard's
cursor did not move, so the next tick's window starts where it stopped, and the claims
are the runner's fenced writes, so a shard read twice never runs a fire twice.
"""

from __future__ import annotations

from collections.abc import Sequence

from chalicelib.observability import logger, record_metric
from chalicelib.services.heartbeat.report import TickReport
from chalicelib.settings import get_settings
from chalicelib.store.ticks import TickMessage, send_ticks

__all__ = ["fans_out", "fan_out"]


def fans_out(shard_count: int) -> bool:
    """Whether a tick reading ``shard_count`` shards hands them to the enqueuers."""
    settings = get_settings()
    threshold = settings.fanout_shards
    if threshold <= 0 or shard_count < threshold:
        return False
    if not settings.tick_queue_url:
        logger.warning("fan-out is on but no tick queue is set; the heartbeat reads every shard")
        return False
    return True


def fan_out(shards: Sequence[int], *, now_ms: int, report: TickReport) -> list[int]:
    """Send one tick message per shard; the shards whose message was not sent (read inline)."""
    messages = [TickMessage(shard_no=n, now_ms=now_ms) for n in shards]
    try:
        failed = send_ticks(messages)
    except Exception:  # anything at all: the heartbeat reads those shards itself
        logger.exception("tick messages not sent; the heartbeat reads those shards")
        failed = list(messages)
    report.fanned_out += len(messages) - len(failed)
    if report.fanned_out:
        record_metric("TicksFannedOut", report.fanned_out)
    if failed:
        report.errors += 1
        record_metric("TickSendFailed", len(failed))
        logger.warning(
            "tick messages not sent; the heartbeat reads those shards inline",
            extra={"shards": [m.shard_no for m in failed]},
        )
    return [m.shard_no for m in failed]
