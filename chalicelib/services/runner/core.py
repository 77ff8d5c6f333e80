"""The runner: start fence, check, run the workflow, settle — always settle.

1. **Start.** The first write accepts the run only if ``in_flight[run_id]`` is still
   ours and not started (a scheduled slot is claimed and started in that one write,
   ``claim.claim_slot``). SQS delivers at least once: a duplicate, or a message for a
   reaped claim, is acknowledged and dropped (and counted), never run.
2. **Check.** What can change between fires is checked again: trigger active, workflow
   still exists, and every policy's ``check`` (``services/pipeline.py``: the switch,
   the creator, serialize_key, budget). A refusal disables the trigger with a reason;
   it is not retried.
3. **Run.** The workflow gets payload, state, secrets, fire id and scheduled time (the
   policies' ``fire_fields``).
4. **Settle** (in ``finally``, ``settle.settle``), then the policies' ``after_settle``.

A policy may instead ask the run to **wait** (``Refusal(defer=True)``, e.g. its
serialize_key is held): nothing is recorded or counted (``defer.defer``).
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

from chalicelib.domain.epoch_ms import ms, opt_dt
from chalicelib.domain.exceptions import exception_of
from chalicelib.domain.records import RunRecord, Trigger
from chalicelib.domain.run_detail import error_detail
from chalicelib.domain.settle import lateness_ms
from chalicelib.observability import logger, record_metric
from chalicelib.services import events
from chalicelib.services.pipeline import Pipeline, Refusal, RunContext
from chalicelib.services.runner.claim import claim_scheduled
from chalicelib.services.runner.defer import defer
from chalicelib.services.runner.queued import start_queued
from chalicelib.services.runner.settle import Outcome, check_result, settle
from chalicelib.services.runner.timing import fire_at_of
from chalicelib.services.runs import new_run_record
from chalicelib.settings import get_settings
from chalicelib.store import claims, payloads
from chalicelib.store import state as state_store
from chalicelib.store.sqs import MAX_DELAY_S, FireMessage, send_fires
from chalicelib.workflows import (
    DestructiveRefused,
    Fire,
    Policy,
    WorkflowFailed,
    is_known_target,
)
from chalicelib.workflows.targets import invoke

__all__ = ["Runner"]


def utcnow() -> datetime:
    """The real clock (the runner's default)."""
    return datetime.now(UTC)


class Runner:
    """Runs fire messages through ``pipeline``. ``clock`` is read at the claim, when the
    workflow starts and when it ends."""

    def __init__(
        self,
        *,
        pipeline: Pipeline,
        clock: Callable[[], datetime] = utcnow,
        sleep: Callable[[float], None] | None = None,
    ):
        self.pipeline = pipeline
        self.clock = clock
        # Waiting out a message's early fraction needs a real clock: a test's clock
        # moves by hand, so by default only the real one sleeps.
        self.sleep = sleep if sleep is not None or clock is not utcnow else time.sleep

    def handle(self, message: FireMessage) -> str:
        """Run one message; returns the run's status, or ``dropped`` / ``buffered`` /
        ``postponed``."""
        fire_ms = fire_at_of(message)
        if fire_ms is not None:
            if fire_ms - ms(self.clock()) > 1000:
                return self._postpone(message, fire_ms)
            self._wait_for_slot(fire_ms)
        now = self.clock()
        lease_ms = ms(now) + (get_settings().runner_timeout_s + 60) * 1000
        event = None
        if message.surface == "event":
            started = events.start_event_run(message, lease_ms=lease_ms, now=now)
            if started is None:
                record_metric("RunsDropped", surface="event")
                return "dropped"
            item, event = started
            # The event start may have swapped in the head of the trigger's queue: the
            # lines that follow are about the run it started.
            started_message = events.started_message(message, event)
            if started_message.run_id != message.run_id:
                logger.thread_safe_append_keys(
                    run_id=started_message.run_id, event_id=started_message.event_id
                )
            message = started_message
        elif message.surface == "schedule" and message.sched is not None:
            # A standing item's due pointer on another slot runs that slot instead.
            outcome = claim_scheduled(message, lease_ms=lease_ms, now=now, pipeline=self.pipeline)
            if isinstance(outcome, str):
                return outcome
            item, taken = outcome
            if taken.run_id != message.run_id:
                # This message ran the pointer's slot: the lines that follow are about it.
                logger.thread_safe_append_keys(run_id=taken.run_id)
            message = taken
        elif message.queued:
            queued = start_queued(message, lease_ms=lease_ms, now=now)
            if isinstance(queued, str):
                return queued
            item = queued
        else:
            found = claims.start_run(
                message.trigger_id, run_id=message.run_id, lease_ms=lease_ms, started_ms=ms(now)
            )
            if found is None:
                record_metric("RunsDropped", surface=message.surface)
                logger.info(
                    "duplicate or reaped fire dropped at the start fence",
                    extra={"trigger_id": message.trigger_id, "run_id": message.run_id},
                )
                return "dropped"
            item = found
        ctx = RunContext(
            item=item, spec=payloads.load_spec(item), message=message, now=now, event=event
        )
        return self._run(ctx)

    def _postpone(self, message: FireMessage, fire_ms: int) -> str:
        """A jittered fire whose message came early (a delay over SQS's 900 s, or a spare
        sent by the overdue pass): sent again to land at its ``fire_at``; nothing is
        claimed or recorded. A failed send raises: the message itself is delivered again.
        """
        delay_s = max(1, min(MAX_DELAY_S, (fire_ms - ms(self.clock())) // 1000))
        if send_fires([replace(message, delay_s=delay_s)]):
            raise RuntimeError("a postponed fire could not be sent again")
        record_metric("FiresPostponed", surface=message.surface)
        return "postponed"

    def _wait_for_slot(self, slot_ms: int) -> None:
        """A message lands up to a second before its slot (DelaySeconds rounded down):
        wait out the fraction, so the fire starts on its second."""
        if self.sleep is None:
            return
        early_ms = slot_ms - ms(self.clock())
        if 0 < early_ms <= 1000:
            self.sleep(early_ms / 1000)

    def _run(self, ctx: RunContext) -> str:
        run = new_run_record(
            ctx.item,
            run_id=ctx.message.run_id,
            surface=ctx.message.surface,
            scheduled_ms=ctx.message.scheduled_ms,
            now=ctx.now,
            event_id=ctx.message.event_id,
        )
        if ctx.event is not None:
            run = replace(run, attempt=int(ctx.event.attempt or 1))
        run = replace(run, fire_at=fire_at_of(ctx.message))
        outcome = Outcome()
        try:
            refusal = self._check(ctx)
            if refusal is not None:
                outcome.status, outcome.error = refusal.status, refusal.message
                outcome.disable_reason = refusal.reason
                outcome.deferred, outcome.defer_s = refusal.defer, refusal.delay_s
            else:
                self._execute(ctx, run, outcome)
        except WorkflowFailed as exc:
            outcome.error, outcome.state_out = str(exc) or "WorkflowFailed", exc.state
            outcome.error_detail = exc.detail or _detail_of(exc)
        except DestructiveRefused as exc:
            outcome.status, outcome.error, outcome.disable_reason = "refused", str(exc), "refused"
        except Exception as exc:  # the workflow's own failure: recorded, never propagated
            outcome.error = f"{type(exc).__name__}: {exc}"
            outcome.error_detail = _detail_of(exc)
        finally:
            ctx.status = outcome.status
            ctx.deferred = outcome.deferred
            if outcome.deferred:
                status = defer(
                    ctx, delay_s=outcome.defer_s, now=self.clock(), pipeline=self.pipeline
                )
            else:
                status = settle(ctx, run, outcome, pipeline=self.pipeline, clock=self.clock)
        return status

    def _check(self, ctx: RunContext) -> Refusal | None:
        item = ctx.item
        if item.status != "active":
            return Refusal("skipped", f"trigger is disabled ({item.disabled_reason or 'manual'})")
        if not is_known_target(item.workflow):
            return Refusal(
                "refused", f"workflow {item.workflow!r} is not registered", "workflow_missing"
            )
        return self.pipeline.check(ctx)

    def _execute(self, ctx: RunContext, run: RunRecord, outcome: Outcome) -> None:
        """Build the fire, run the workflow, and note its result in ``outcome``."""
        item, message = ctx.item, ctx.message
        state, outcome.state_version = state_store.state_of(item)
        fire = _fire_of(
            ctx, item, state=state, attempt=int(run.attempt or 1), pipeline=self.pipeline
        )
        ctx.fire = fire
        # started_at is when the workflow starts: after the start fence and every
        # check (a serialize_key wait included), not when the message arrived.
        started_at = self.clock()
        outcome.started_ms = ms(started_at)  # on the run's record, whatever happens next
        if message.surface == "schedule":
            # Late against the fire's own instant: the slot plus its jitter.
            fire_at = fire_at_of(message)
            outcome.lateness_ms = lateness_ms(opt_dt(fire_at), started_at)
        try:
            answered = invoke(item.workflow, fire)
        finally:
            ctx.finished_at = self.clock()  # when the workflow ended, before settle
        problem = check_result(answered)
        if problem is not None:
            raise WorkflowFailed(problem)
        outcome.result = answered
        ctx.result = answered
        outcome.state_out = answered.state
        outcome.status = "succeeded"


# The runner's own frames, left out of a workflow's traceback: it starts at the workflow.
_ENGINE_FRAMES = ("/services/runner/", "/workflows/targets.py")


def _engine_frame(tb: TracebackType) -> bool:
    name = tb.tb_frame.f_code.co_filename.replace("\\", "/")
    return any(part in name for part in _ENGINE_FRAMES)


def _detail_of(exc: BaseException) -> dict:
    """The failure's type, message and traceback, from the workflow's first frame on."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None and _engine_frame(tb):
        tb = tb.tb_next
    text = "".join(traceback.format_exception(type(exc), exc, tb))
    return error_detail(type(exc).__name__, str(exc), text)


def _fire_of(
    ctx: RunContext, item: Trigger, *, state: dict, attempt: int, pipeline: Pipeline
) -> Fire:
    message = ctx.message
    extras = pipeline.fire_fields(ctx)
    return Fire(
        trigger_id=item.id,
        fire_id=message.run_id,
        scheduled_for=opt_dt(message.scheduled_ms),
        surface=message.surface,
        payload=extras.pop("payload", _scheduled_payload(ctx)),
        state=state,
        attempt=attempt,
        event_id=message.event_id,
        policy=Policy(allow_destructive=bool(ctx.spec.get("allow_destructive"))),
        **extras,
    )


def _scheduled_payload(ctx: RunContext) -> Any:
    """The trigger's payload, or an extra run's own (``POST /v1/triggers/{id}/extra``)."""
    message = ctx.message
    if message.surface == "schedule":
        extra = exception_of(ctx.spec, "extras", "at", message.scheduled_ms)
        if extra is not None and "payload" in extra:
            return extra["payload"]
    return ctx.spec.get("payload")
