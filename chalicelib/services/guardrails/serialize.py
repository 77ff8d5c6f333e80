"""serialize_key: runs whose triggers share a ``serialize_key`` never overlap, across triggers.

Through a fenced lease (``store/locks.py``). A run that finds the key held joins the
key's queue and waits (deferred: not recorded, not a failure); the run that releases the
key hands it to the oldest waiter and re-sends that waiter's message at once. Every
waiter also polls (at most ``MAX_POLL_S`` apart), so a holder that died is overtaken when
its lease expires.
"""

from __future__ import annotations

from chalicelib.domain.epoch_ms import ms
from chalicelib.observability import logger, record_metric
from chalicelib.services.pipeline import Refusal, RunContext, RunPolicy
from chalicelib.settings import get_settings
from chalicelib.store import locks
from chalicelib.store.sqs import FireMessage, send_fires

__all__ = ["MAX_POLL_S", "HANDOFF_S", "SerializePolicy", "serialize_guard"]

# A run waiting for a serialize key looks again at least this often, even if nobody
# hands the key over (its holder died: the lease expires, and the next look takes it).
MAX_POLL_S = 60
# How long a key handed to a waiter stays reserved for it: long enough for its message
# to come back, short enough that a waiter that vanished (its trigger deleted) does not
# hold up the queue for long.
HANDOFF_S = 120


def _lock_key(ctx: RunContext) -> str | None:
    key = ctx.spec.get("serialize_key")
    # Per tenant: one tenant's key never holds up another tenant's runs.
    return f"{ctx.item.tenant}#{key}" if key else None


def _waiter_entry(message: FireMessage, now_ms: int) -> dict:
    entry = {"t": message.trigger_id, "k": message.surface, "w": now_ms}
    if message.scheduled_ms is not None:
        entry["at"] = int(message.scheduled_ms)
    if message.event_id is not None:
        entry["e"] = message.event_id
    return entry


def serialize_guard(ctx: RunContext) -> Refusal | None:
    """Own the trigger's serialize key for this run, or wait for it.

    1. Try to acquire (free, handed to us, or the holder's lease expired).
    2. Held: join the key's queue, then try once more, because the holder may have
       released between the two writes without seeing us in the queue.
    3. Still held: defer; the release hands the key over and sends us again, and we poll
       at the holder's lease (at most ``MAX_POLL_S`` apart) in case it died.
    """
    key = _lock_key(ctx)
    if key is None:
        return None
    settings = get_settings()
    run_id, now_ms = ctx.message.run_id, ms(ctx.now)
    lease_ms = now_ms + (settings.runner_timeout_s + 60) * 1000
    if locks.acquire(key, run_id=run_id, lease_until_ms=lease_ms, now_ms=now_ms):
        ctx.notes["lock"] = key
        return None
    locks.wait(key, run_id=run_id, entry=_waiter_entry(ctx.message, now_ms))
    if locks.acquire(key, run_id=run_id, lease_until_ms=lease_ms, now_ms=now_ms):
        ctx.notes["lock"] = key
        return None
    held = locks.holder(key)
    until = held.lease_until or now_ms
    wait_s = max(1, min(MAX_POLL_S, (until - now_ms) // 1000 + 1))
    record_metric("SerializeWaits", surface=ctx.message.surface)
    return Refusal(
        "skipped",
        f"serialize_key {ctx.spec.get('serialize_key')!r} is held by another run; waiting",
        defer=True,
        delay_s=int(wait_s),
    )


def _serialize_finish(ctx: RunContext) -> None:
    key = _lock_key(ctx)
    if key is None:
        return
    run_id = ctx.message.run_id
    if ctx.notes.get("lock") != key:
        if not ctx.deferred:
            # Ended without its turn (refused, trigger disabled...): leave the queue, so
            # the key is never handed to a run that is not coming back.
            locks.leave(key, run_id=run_id)
        return
    finished = ctx.finished_at or ctx.now
    handed = locks.release(key, run_id=run_id, handoff_until_ms=ms(finished) + HANDOFF_S * 1000)
    if handed is None:
        return
    next_run, entry = handed
    wake = FireMessage(
        run_id=next_run,
        trigger_id=str(entry.get("t")),
        surface=str(entry.get("k") or "schedule"),
        scheduled_ms=int(entry["at"]) if entry.get("at") is not None else None,
        event_id=entry.get("e"),
    )
    if send_fires([wake]):
        logger.warning(
            "serialize hand-off not sent; the waiter comes back by itself",
            extra={"trigger_id": wake.trigger_id, "run_id": next_run},
        )
    record_metric("SerializeHandoffs")


class SerializePolicy(RunPolicy):
    """``check``: own the key or wait; ``after_settle``: release it to the next waiter."""

    name = "serialize"

    def check(self, ctx: RunContext) -> Refusal | None:
        return serialize_guard(ctx)

    def after_settle(self, ctx: RunContext) -> None:
        _serialize_finish(ctx)
