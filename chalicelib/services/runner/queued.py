"""A manual run that found its trigger busy: the runner claims it when its turn comes.

``POST /v1/triggers/{id}/fire`` on a trigger at its concurrency saves the run's request
(its payload, if any) and sends a message marked ``queued``, instead of answering 409.
Each delivery of that message:

1. takes the request (a conditional write on the request item: one holder at a time, so
   a duplicate delivery never runs it twice; a request already settled is gone);
2. on a paused or deleted trigger, records the run ``skipped`` and forgets the request;
3. claims and starts the run like an event's (``claim_and_start``, fenced on the
   trigger's concurrency); the settle deletes the request (``ondemand``);
4. finding the trigger still busy, gives the request back and sends the message again,
   later each time (2, 4, 8 ... 60 s): a wait costs one failed claim per look.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from chalicelib.domain.epoch_ms import ms
from chalicelib.domain.records import Trigger
from chalicelib.domain.trigger_spec import TriggerSpec
from chalicelib.observability import logger, record_metric
from chalicelib.services.runs import new_run_record
from chalicelib.settings import get_settings
from chalicelib.store import backfill
from chalicelib.store import claims as claims_store
from chalicelib.store import runs as runs_store
from chalicelib.store import triggers as triggers_store
from chalicelib.store.sqs import FireMessage, send_fires

__all__ = ["MAX_WAIT_S", "wait_s", "start_queued"]

MAX_WAIT_S = 60


def wait_s(looks: int) -> int:
    """How long a queued run waits before its next look (``looks`` so far, from 1)."""
    return min(MAX_WAIT_S, 2 ** max(1, looks))


def _skip(item: Trigger, message: FireMessage, *, now: datetime) -> str:
    """The trigger was paused while the run waited: recorded, never run."""
    run = new_run_record(
        item, run_id=message.run_id, surface="manual", scheduled_ms=message.scheduled_ms, now=now
    )
    reason = item.disabled_reason or "manual"
    run = replace(
        run,
        status="skipped",
        error=f"trigger is disabled ({reason}); the queued run did not start",
        finished_at=ms(now),
    )
    runs_store.put_run(run, only_new=True)
    backfill.delete_fire_payload(message.run_id)
    record_metric("Runs", status="skipped", surface="manual")
    return "skipped"


def start_queued(message: FireMessage, *, lease_ms: int, now: datetime) -> Trigger | str:
    """Claim and start a queued manual run: the trigger item, or what happened instead."""
    if not backfill.take_fire_request(message.run_id, take=True):
        return "dropped"  # another delivery holds it, or the run is over
    item = triggers_store.get_trigger(message.trigger_id)
    if item is None:
        backfill.delete_fire_payload(message.run_id)
        return "dropped"
    if item.status != "active":
        return _skip(item, message, now=now)
    outcome, claimed = claims_store.claim_and_start(
        item.id,
        run_id=message.run_id,
        surface="manual",
        lease_ms=lease_ms,
        capacity=TriggerSpec.from_json(item.spec).concurrency,
        shard=triggers_store.shard_of(item.id, get_settings().due_shards),
        started_ms=ms(now),
    )
    if outcome == claims_store.ClaimResult.CLAIMED and claimed is not None:
        return claimed
    # Still busy: give the request back, then look again later. The message is sent
    # after the give-back, so the next delivery can take it; if the send fails, the
    # raise makes SQS deliver this one again.
    backfill.take_fire_request(message.run_id, take=False)
    later = replace(message, queued=message.queued + 1, delay_s=wait_s(message.queued))
    if send_fires([later]):
        raise RuntimeError("a queued manual run could not be sent again")
    record_metric("RunsQueuedWaiting")
    logger.info(
        "queued manual run waits for its trigger",
        extra={"trigger_id": item.id, "run_id": message.run_id, "wait_s": later.delay_s},
    )
    return "queued"
