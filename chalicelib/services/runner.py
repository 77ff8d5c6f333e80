"""The runner: start fence, run the workflow, settle — always settle.

1. **Start.** The first write accepts the run only if ``in_flight[run_id]`` is still
   ours and not started. SQS delivers at least once: a duplicate, or a message for a
   reaped claim, is acknowledged and dropped (and counted), never run.
2. **Check.** What can change between fires is checked again: trigger active,
   workflow still exists, and every registered guard (creator, budget...). A refusal
   disables the trigger with a reason; it is not retried.
3. **Run.** The workflow gets payload, state, secrets, fire id and scheduled time.
4. **Settle** (in ``finally``): state written back if the run produced any (also a
   failed run that raised ``WorkflowFailed(state=...)``), the claim cleared, failures
   counted, a returned ``next_fire_at`` applied (clamped to at least 1 s ahead), the
   disable rules applied, and the run recorded.

A guard may instead ask the run to **wait** (``Refusal(defer=True)``, e.g. its
serialize_key is held): nothing is recorded or counted. A schedule or manual run keeps
its claim, un-started, and its message is sent again with a delay; an event run gives
its claim back and the event service queues the event again. A guard that defers must
come before guards that acquire something (serialize lease, budget hold).

**Time budget.** A batch's messages run one after another in one invocation
(``wiring.handle_sqs_batch``). Before each message but the first, the invocation's time
left is compared with ``start_margin_ms()``; with less, the message is not started (no
fence, no claim touched, nothing recorded or counted) and goes back to the queue, so
another invocation runs it with its full time. The first message of an invocation always
starts: handing it back would only give it to an invocation with the same time.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from chalicelib.domain import schedule
from chalicelib.domain.codec import decode_schedule
from chalicelib.domain.limits import MAX_STATE_BYTES
from chalicelib.domain.settle import (
    Limits,
    clip_text,
    disable_reason_after_run,
    lateness_ms,
    result_problem,
)
from chalicelib.observability import logger, record_metric
from chalicelib.services.pipeline import Refusal, RunContext
from chalicelib.services.runs import new_run_record
from chalicelib.settings import get_settings
from chalicelib.store import dynamo
from chalicelib.store.models import TriggerModel
from chalicelib.store.sqs import MAX_DELAY_S, FireMessage, send_fires
from chalicelib.workflows import (
    DestructiveRefused,
    Fire,
    Policy,
    Result,
    WorkflowFailed,
    is_known_target,
)
from chalicelib.workflows.targets import invoke

__all__ = [
    "START_MARGIN_S",
    "RESEND_FROM_RECEIVE",
    "start_margin_ms",
    "time_left_ms",
    "Refusal",
    "RunContext",
    "Runner",
    "guards",
    "finish_hooks",
    "fire_extras",
    "redactors",
    "state_redactors",
]

OUTPUT_LIMIT_BYTES = 4096

# The least time an invocation must have left to start another message of its batch.
# cronhook cannot know how long a workflow will take (no per-trigger timeout): 30 s covers
# the start fence, checks, settle and a short workflow (an http: target's own timeout is
# 30 s). A workflow that outlasts the invocation is still cut off (and recorded lost by
# the reaper); the margin keeps the messages behind it from being stranded in flight.
START_MARGIN_S = 30
# A message handed back this many times already (ApproximateReceiveCount) is sent again
# as a fresh message instead, so that being handed back never walks it to the
# dead-letter queue (maxReceiveCount is 5).
RESEND_FROM_RECEIVE = 3


def start_margin_ms() -> int:
    """``START_MARGIN_S``, or a quarter of the runner's timeout if that is shorter."""
    return int(min(START_MARGIN_S, get_settings().runner_timeout_s / 4) * 1000)


def time_left_ms(context: Any) -> int | None:
    """The invocation's remaining time (Lambda's context), or None without a context."""
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    if remaining is None:
        return None
    return int(remaining())


# Guards run after the start fence, before the workflow: return a Refusal to stop it.
guards: list[Callable[[RunContext], Refusal | None]] = []
# Hooks run after settle: budget reconcile, event bookkeeping, next pending event.
finish_hooks: list[Callable[[RunContext], None]] = []
# Providers of extra Fire fields (secrets, triggers client): ctx -> dict of Fire kwargs.
fire_extras: list[Callable[[RunContext], dict]] = []
# Applied to a run's error and output before they are stored: (ctx, text) -> text
# (the secrets service masks the values a workflow read).
redactors: list[Callable[[RunContext, str], str]] = []
# Applied to the state a run writes back (viewers read it): (ctx, state) -> state.
state_redactors: list[Callable[[RunContext, dict], dict]] = []


def _ms(at: datetime) -> int:
    return int(round(at.timestamp() * 1000))


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _dt(ms: int | None) -> datetime | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, tz=UTC)


class Runner:
    """Runs fire messages. ``clock`` is read at the claim, when the workflow starts and
    when it ends."""

    def __init__(
        self,
        *,
        clock: Callable[[], datetime] = _utcnow,
        sleep: Callable[[float], None] | None = None,
    ):
        self.clock = clock
        # Waiting out a message's early fraction needs a real clock: a test's clock
        # moves by hand, so by default only the real one sleeps.
        self.sleep = sleep if sleep is not None or clock is not _utcnow else time.sleep

    def handle(self, message: FireMessage) -> str:
        """Run one message; returns the run's status, or ``dropped`` / ``buffered``."""
        settings = get_settings()
        if message.surface == "schedule" and message.scheduled_ms is not None:
            self._wait_for_slot(int(message.scheduled_ms))
        now = self.clock()
        lease_ms = _ms(now) + (settings.runner_timeout_s + 60) * 1000
        event = None
        if message.surface == "event":
            from chalicelib.services import events

            started = events.start_event_run(message, lease_ms=lease_ms, now=now)
            if started is None:
                record_metric("RunsDropped", surface="event")
                return "dropped"
            item, event = started
            # The event start may have swapped in the head of the trigger's queue.
            message = events.started_message(message, event)
        elif message.surface == "schedule" and message.sched is not None:
            outcome = self._claim_slot(message, lease_ms=lease_ms, now=now)
            if isinstance(outcome, str):
                return outcome
            item = outcome
        else:
            item = dynamo.start_run(message.trigger_id, run_id=message.run_id, lease_ms=lease_ms)
            if item is None:
                record_metric("RunsDropped", surface=message.surface)
                logger.info(
                    "duplicate or reaped fire dropped at the start fence",
                    extra={"trigger_id": message.trigger_id, "run_id": message.run_id},
                )
                return "dropped"
        spec = dynamo.load_spec(item)
        ctx = RunContext(item=item, spec=spec, message=message, now=now, event=event)
        return self._run(ctx)

    def _wait_for_slot(self, slot_ms: int) -> None:
        """A message lands up to a second before its slot (DelaySeconds rounded down):
        wait out the fraction, so the fire starts on its second."""
        if self.sleep is None:
            return
        early_ms = slot_ms - _ms(self.clock())
        if 0 < early_ms <= 1000:
            self.sleep(early_ms / 1000)

    def _claim_slot(self, message: FireMessage, *, lease_ms: int, now: datetime) -> Any:
        """Claim and start a scheduled slot (one write): the trigger item, or what happened.

        Overlap and busy are decided here, when the fire is due: with a run executing
        now, ``overlap: skip`` records the slot ``skipped`` and moves past it; any other
        policy leaves it due, and the settle of that run sends it again (``_pull_slot``).
        A duplicate message, or one for a slot the trigger has moved past, is dropped.
        """
        settings = get_settings()
        slot_ms = int(message.scheduled_ms or 0)
        shard = dynamo.shard_of(message.trigger_id, settings.due_shards)
        sched = message.sched or "{}"
        for _attempt in range(3):
            policy = json.loads(sched)
            following = schedule.next_fire_after(
                decode_schedule(sched), max(now, _dt(slot_ms) or now)
            )
            next_slot_ms = _ms(following) if following is not None else None
            capacity = int(policy.get("n", 1)) if policy.get("o") == "allow" else 1
            outcome, item = dynamo.claim_slot_and_start(
                message.trigger_id,
                slot_ms=slot_ms,
                sched=sched,
                next_slot_ms=next_slot_ms,
                run_id=message.run_id,
                lease_ms=lease_ms,
                capacity=capacity,
                shard=shard,
            )
            if outcome == dynamo.ClaimResult.CLAIMED and item is not None:
                return item
            item = dynamo.get_trigger(message.trigger_id)
            if item is None:
                return self._dropped(message, "trigger deleted")
            entry = dynamo.in_flight_of(item).get(message.run_id)
            if isinstance(entry, dict):
                if int(entry.get("s", 0)) == 0:  # claimed and waiting (deferred): start it
                    started = dynamo.start_run(item.id, run_id=message.run_id, lease_ms=lease_ms)
                    return started if started is not None else self._dropped(message, "raced")
                return self._dropped(message, "duplicate delivery")
            if item.next_fire_at is None or int(item.next_fire_at) != slot_ms:
                return self._dropped(message, "slot already run or moved")
            if item.sched != sched:
                if not item.sched:
                    return self._dropped(message, "no longer a schedule")
                sched = item.sched  # edited, same slot: claim it with what is stored now
                continue
            if item.status != "active":
                from chalicelib.services.heartbeat import refresh_due

                refresh_due(item, now=now)  # out of the due index: nothing to send again
                return self._dropped(message, "trigger disabled")
            from chalicelib.services.heartbeat import _record_terminal, reap_expired

            if reap_expired(item, now=now):
                continue
            in_flight = dynamo.in_flight_of(item)
            if len(in_flight) < capacity:
                continue  # the run we saw settled meanwhile: claim again
            if policy.get("o", "skip") == "skip":
                # Record first, then move past the slot: if the record cannot be written
                # the slot stays due and its message comes back, so a skip never goes
                # unrecorded. Only created, never overwritten.
                _record_terminal(
                    item,
                    message.run_id,
                    slot_ms,
                    "skipped",
                    "previous run still in flight (overlap: skip)",
                    now,
                    only_new=True,
                )
                leases = [dynamo.entry_lease(e) for e in in_flight.values()]
                due = min([*leases, next_slot_ms] if next_slot_ms else leases)
                dynamo.advance_slot(
                    item.id, slot_ms=slot_ms, next_slot_ms=next_slot_ms, due_at=due, shard=shard
                )
                # The next slot follows the schedule: the heartbeat has sent (or will send)
                # its message, as it sends every slot up to its horizon.
                return "skipped"
            record_metric("RunsBuffered")
            return "buffered"  # buffer_one / allow at capacity: the settle sends it again
        return self._dropped(message, "claim kept losing races")

    def _dropped(self, message: FireMessage, why: str) -> str:
        record_metric("RunsDropped", surface=message.surface)
        logger.info(
            "fire dropped at the claim",
            extra={"trigger_id": message.trigger_id, "run_id": message.run_id, "why": why},
        )
        return "dropped"

    def _run(self, ctx: RunContext) -> str:
        item, message, now = ctx.item, ctx.message, ctx.now
        run = new_run_record(
            item,
            run_id=message.run_id,
            surface=message.surface,
            scheduled_ms=message.scheduled_ms,
            now=now,
            event_id=message.event_id,
        )
        if ctx.event is not None:
            run.attempt = int(ctx.event.attempt or 1)
        status = "failed"
        error: str | None = None
        result: Result | None = None
        state_out: dict | None = None
        disable_reason: str | None = None
        state_version = 0
        deferred = False
        defer_s = 0
        try:
            refusal = self._check(ctx)
            if refusal is not None:
                status, error, disable_reason = refusal.status, refusal.message, refusal.reason
                deferred, defer_s = refusal.defer, refusal.delay_s
            else:
                state, state_version = dynamo.get_state(item.id)
                extras: dict = {}
                for provide in fire_extras:
                    extras.update(provide(ctx))
                fire = Fire(
                    trigger_id=item.id,
                    fire_id=message.run_id,
                    scheduled_for=_dt(message.scheduled_ms),
                    surface=message.surface,
                    payload=extras.pop("payload", ctx.spec.get("payload")),
                    state=state,
                    attempt=int(run.attempt or 1),
                    event_id=message.event_id,
                    policy=Policy(allow_destructive=bool(ctx.spec.get("allow_destructive"))),
                    **extras,
                )
                ctx.fire = fire
                # started_at is when the workflow starts: after the start fence and every
                # guard (a serialize_key wait included), not when the message arrived.
                started_at = self.clock()
                run.started_at = _ms(started_at)
                if message.surface == "schedule":
                    run.lateness_ms = lateness_ms(_dt(message.scheduled_ms), started_at)
                try:
                    answered = invoke(item.workflow, fire)
                finally:
                    ctx.finished_at = self.clock()  # when the workflow ended, before settle
                problem = check_result(answered)
                if problem is not None:
                    raise WorkflowFailed(problem)
                result = answered
                ctx.result = result
                state_out = result.state
                status = "succeeded"
        except WorkflowFailed as exc:
            error, state_out = str(exc) or "WorkflowFailed", exc.state
        except DestructiveRefused as exc:
            status, error, disable_reason = "refused", str(exc), "refused"
        except Exception as exc:  # the workflow's own failure: recorded, never propagated
            error = f"{type(exc).__name__}: {exc}"
        finally:
            ctx.status = status
            ctx.deferred = deferred
            if deferred:
                status = self._defer(ctx, delay_s=defer_s)
            else:
                status = self._settle(
                    ctx,
                    run,
                    status=status,
                    error=error,
                    result=result,
                    state_out=state_out,
                    state_version=state_version,
                    disable_reason=disable_reason,
                )
        return status

    def _check(self, ctx: RunContext) -> Refusal | None:
        item = ctx.item
        if item.status != "active":
            return Refusal("skipped", f"trigger is disabled ({item.disabled_reason or 'manual'})")
        if not is_known_target(item.workflow):
            return Refusal(
                "refused", f"workflow {item.workflow!r} is not registered", "workflow_missing"
            )
        for guard in guards:
            refusal = guard(ctx)
            if refusal is not None:
                return refusal
        return None

    def _settle(
        self,
        ctx: RunContext,
        run: Any,
        *,
        status: str,
        error: str | None,
        result: Result | None,
        state_out: dict | None,
        state_version: int,
        disable_reason: str | None,
    ) -> str:
        """Settle the run; returns its final status (a state write can still fail it)."""
        item, message = ctx.item, ctx.message
        settings = get_settings()
        finished = ctx.finished_at or self.clock()
        finished_ms = _ms(finished)
        ctx.finished_at = finished
        error = _redact(ctx, error) if error else error
        if isinstance(state_out, dict):
            for redact_state in state_redactors:
                state_out = redact_state(ctx, state_out)
        try:
            if state_out is not None and isinstance(state_out, dict):
                if not dynamo.write_state(item.id, state_out, expected_version=state_version):
                    status, error = "failed", "state conflict: another run wrote the state first"
        except Exception as exc:
            status, error = "failed", f"state not saved: {type(exc).__name__}: {exc}"
        override_ms = None
        if result is not None and result.next_fire_at is not None and item.kind != "event":
            requested = result.next_fire_at
            if requested.tzinfo is None:
                requested = requested.replace(tzinfo=UTC)
            clamped, was_clamped = schedule.clamp_next_fire(requested, now=finished)
            if was_clamped:
                logger.info(
                    "next_fire_at clamped to 1 s ahead",
                    extra={"trigger_id": item.id, "run_id": message.run_id},
                )
            override_ms = _ms(clamped)
        succeeded: bool | None = status == "succeeded"
        if status in ("refused", "budget_exceeded", "skipped"):
            succeeded = None
        last_run = {
            "id": message.run_id,
            "status": status,
            "finished_at": finished_ms,
            "error": clip_text(error, max_bytes=1000) if error else None,
        }
        # An event's failed attempt that will be retried is not (yet) a failure of the
        # trigger: only the event's last attempt counts toward limits.max_failures, so one
        # bad delivery cannot disable a webhook trigger (and turn every later one away).
        failure_counts = not (succeeded is False and _will_retry(ctx))
        settled = dynamo.settle_run(
            item.id,
            run_id=message.run_id,
            succeeded=succeeded,
            failure_counts=failure_counts,
            last_run=last_run,
            next_fire_override_ms=override_ms,
            shard=dynamo.shard_of(item.id, settings.due_shards),
        )
        if settled is None:
            logger.warning(
                "settle fenced out: the claim was reaped",
                extra={"trigger_id": item.id, "run_id": message.run_id},
            )
            record_metric("SettleFencedOut")
            ctx.status = status
            return status
        run.status = status
        run.error = clip_text(error, max_bytes=4000) if error else None
        run.finished_at = finished_ms
        if result is not None:
            run.cost_usd = float(result.cost_usd or 0)
            if result.output is not None:
                run.output = clip_text(
                    _redact(ctx, json.dumps(result.output, default=str)),
                    max_bytes=OUTPUT_LIMIT_BYTES,
                )
        dynamo.put_run(run)
        record_metric("Runs", status=status, surface=message.surface)
        if run.lateness_ms is not None:
            record_metric("Lateness", float(run.lateness_ms), unit="Milliseconds")
        limits = ctx.spec.get("limits") or {}
        reason = disable_reason or disable_reason_after_run(
            kind=settled.kind,
            succeeded=bool(succeeded) if succeeded is not None and failure_counts else True,
            consecutive_failures=int(settled.consecutive_failures or 0),
            run_count=int(settled.run_count or 0),
            limits=Limits(
                max_runs=limits.get("max_runs"),
                expires_at=_parse_iso(limits.get("expires_at")),
                max_failures=int(limits.get("max_failures") or 5),
            ),
            next_fire_at=_dt(int(settled.next_fire_at))
            if settled.next_fire_at is not None
            else None,
            now=finished,
        )
        if reason is not None and settled.status == "active":
            if dynamo.disable_trigger(item.id, reason=reason, now_ms=finished_ms) is not None:
                record_metric("Disables", reason=reason)
                logger.warning(
                    "trigger disabled",
                    extra={"trigger_id": item.id, "run_id": message.run_id, "reason": reason},
                )
        ctx.status = status
        if settled.kind != "event":
            self._pull_slot(settled, override_ms=override_ms, now=finished)
        _run_finish_hooks(ctx)
        return status

    def _pull_slot(self, settled: TriggerModel, *, override_ms: int | None, now: datetime) -> None:
        """After a settle: send the message of a slot that waited for this run.

        A slot that came due while this run held the trigger (``buffer_one``, or ``allow``
        at its concurrency) was left due by its claim: its message is sent now. A slot
        set by the workflow (``next_fire_at``) inside the window the heartbeat already
        enqueued is sent too. A spare message is dropped by the claim's fence.
        """
        from chalicelib.services.heartbeat import enqueue_if_sent_window, fire_message

        if settled.status != "active" or settled.next_fire_at is None or not settled.sched:
            return
        now_ms = _ms(now)
        slot = int(settled.next_fire_at)
        if slot <= now_ms + 1000 and override_ms is None:
            message = fire_message(settled.id, slot, settled.sched, now_ms=now_ms)
            if send_fires([message]) and send_fires([message]):
                logger.warning(
                    "the waiting slot could not be sent; the overdue pass will",
                    extra={"trigger_id": settled.id, "run_id": message.run_id},
                )
        elif override_ms is not None:
            enqueue_if_sent_window(settled, now=now)

    def _defer(self, ctx: RunContext, *, delay_s: int) -> str:
        """Give the run back without recording or counting it; it comes back after a wait.

        Schedule and manual runs keep their claim (un-started, the lease stretched over the
        wait) and their message is sent again with ``DelaySeconds``: the start fence
        accepts it then, as the first time. An event run gives its claim back and the
        event service's finish hook queues the event again (``ctx.deferred``). Releasing
        and re-claiming a slot instead would race the heartbeat for the trigger's capacity
        and count a run (``run_count``, ``max_runs``, an ``at`` trigger's only fire).
        """
        item, message = ctx.item, ctx.message
        settings = get_settings()
        now = self.clock()
        ctx.finished_at = now
        delay_s = max(1, min(MAX_DELAY_S, int(delay_s)))
        ctx.defer_s = delay_s
        keep = message.surface != "event"
        lease_ms = _ms(now) + (delay_s + settings.lease_s) * 1000 if keep else None
        if not dynamo.defer_run(item.id, run_id=message.run_id, lease_ms=lease_ms):
            logger.warning(
                "defer fenced out: the claim was reaped",
                extra={"trigger_id": item.id, "run_id": message.run_id},
            )
            record_metric("SettleFencedOut")
            return "dropped"
        if keep and send_fires([replace(message, delay_s=delay_s)]):
            # Not queued again: give the claim back; a scheduled slot is retried by the
            # next tick (as when the heartbeat's own send fails).
            slot = message.scheduled_ms if message.surface == "schedule" else None
            dynamo.release_claim(
                item.id,
                run_id=message.run_id,
                slot_ms=slot,
                shard=dynamo.shard_of(item.id, settings.due_shards),
            )
            logger.warning(
                "deferred run could not be queued again; claim released",
                extra={"trigger_id": item.id, "run_id": message.run_id},
            )
            record_metric("DeferSendFailed", surface=message.surface)
        record_metric("RunsDeferred", surface=message.surface)
        _run_finish_hooks(ctx)
        return "deferred"


def check_result(result: Result) -> str | None:
    """Why ``result`` cannot be settled (NaN cost, a state that is not JSON...), or None."""
    return result_problem(
        state=result.state,
        next_fire_at=result.next_fire_at,
        cost_usd=result.cost_usd,
        output=result.output,
        max_state_bytes=MAX_STATE_BYTES,
    )


def _will_retry(ctx: RunContext) -> bool:
    """Whether this run is an event attempt that another attempt will follow if it fails."""
    if ctx.message.surface != "event" or ctx.event is None:
        return False
    event = (ctx.spec or {}).get("event") or {}
    return int(ctx.event.attempt or 1) < int(event.get("max_attempts") or 3)


FINISH_HOOK_ATTEMPTS = 3


class FinishHookFailed(Exception):
    """Bookkeeping after settle failed (after retries): the message goes back to the queue."""


def _run_finish_hooks(ctx: RunContext) -> None:
    """Run every finish hook, each tried a few times; raise if any still failed.

    The hooks are fenced and safe to repeat (budget reconcile, lock release, event
    bookkeeping and pull). One that keeps failing is not swallowed: the others still run,
    then ``FinishHookFailed`` fails this message, so the queue delivers it again and its
    start finishes what is left (events: ``events._finish_if_run_over``), with the
    heartbeat's sweep as the last resort.
    """
    failures: list[str] = []
    for hook in finish_hooks:
        for attempt in range(FINISH_HOOK_ATTEMPTS):
            try:
                hook(ctx)
                break
            except Exception as exc:
                logger.exception(
                    "finish hook failed",
                    extra={
                        "trigger_id": ctx.item.id,
                        "run_id": ctx.message.run_id,
                        "attempt": attempt + 1,
                    },
                )
                if attempt == FINISH_HOOK_ATTEMPTS - 1:
                    failures.append(f"{getattr(hook, '__name__', hook)}: {exc!r}")
                else:
                    time.sleep(0.05 * 2**attempt)
    if failures:
        record_metric("FinishHookFailed", surface=ctx.message.surface)
        raise FinishHookFailed("; ".join(failures))


def _redact(ctx: RunContext, text: str) -> str:
    for redact in redactors:
        text = redact(ctx, text)
    return text


def _parse_iso(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))
