"""A run a policy asked to wait (``Refusal(defer=True)``): given back, not recorded."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from chalicelib.domain.epoch_ms import ms
from chalicelib.observability import logger, record_metric
from chalicelib.services.pipeline import Pipeline, RunContext
from chalicelib.settings import get_settings
from chalicelib.store import claims, triggers
from chalicelib.store.sqs import MAX_DELAY_S, send_fires

__all__ = ["defer"]


def defer(ctx: RunContext, *, delay_s: int, now: datetime, pipeline: Pipeline) -> str:
    """Give the run back without recording or counting it; it comes back after a wait.

    Schedule and manual runs keep their claim (un-started, the lease stretched over the
    wait) and their message is sent again with ``DelaySeconds``: the start fence
    accepts it then, as the first time. An event run gives its claim back and the
    event policy's ``after_settle`` queues the event again (``ctx.deferred``). Releasing
    and re-claiming a slot instead would race the heartbeat for the trigger's capacity
    and count a run (``run_count``, ``max_runs``, an ``at`` trigger's only fire).
    """
    item, message = ctx.item, ctx.message
    settings = get_settings()
    ctx.finished_at = now
    delay_s = max(1, min(MAX_DELAY_S, int(delay_s)))
    ctx.defer_s = delay_s
    keep = message.surface != "event"
    lease_ms = ms(now) + (delay_s + settings.lease_s) * 1000 if keep else None
    if not claims.defer_run(item.id, run_id=message.run_id, lease_ms=lease_ms):
        logger.warning(
            "defer fenced out: the claim was reaped",
            extra={"trigger_id": item.id, "run_id": message.run_id},
        )
        record_metric("SettleFencedOut")
        return "dropped"
    # A queued manual run (``runner/queued.py``) comes back through the start fence now.
    if keep and send_fires([replace(message, delay_s=delay_s, queued=0)]):
        # Not queued again: give the claim back; a scheduled slot is retried by the
        # next tick (as when the heartbeat's own send fails).
        slot = message.scheduled_ms if message.surface == "schedule" else None
        claims.release_claim(
            item.id,
            run_id=message.run_id,
            slot_ms=slot,
            shard=triggers.shard_of(item.id, settings.due_shards),
        )
        logger.warning(
            "deferred run could not be queued again; claim released",
            extra={"trigger_id": item.id, "run_id": message.run_id},
        )
        record_metric("DeferSendFailed", surface=message.surface)
    record_metric("RunsDeferred", surface=message.surface)
    pipeline.after_settle(ctx)
    return "deferred"
