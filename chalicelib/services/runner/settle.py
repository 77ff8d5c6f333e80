"""The runner's second write: settle a run (always), or give it back (a deferred run).

Settle: state written back if the run produced any (also a failed run that raised
``WorkflowFailed(state=...)``), the claim cleared, failures counted, a returned
``next_fire_at`` applied (clamped to at least 1 s ahead), the disable rules applied, the
run recorded (unless the trigger's ``history`` leaves a success out: ``domain/history``);
then the slot that waited for this run is sent, and the pipeline's ``after_settle`` hooks
run.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from chalicelib.domain import schedule
from chalicelib.domain.epoch_ms import dt, ms, parse_iso
from chalicelib.domain.history import records_run
from chalicelib.domain.limits import MAX_STATE_BYTES
from chalicelib.domain.records import RunRecord, Trigger
from chalicelib.domain.rules import (
    event_will_retry,
    max_attempts_of,
    max_failures_of,
    run_succeeded,
)
from chalicelib.domain.settle import Limits, clip_text, disable_reason_after_run, result_problem
from chalicelib.domain.trigger_spec import TriggerSpec
from chalicelib.observability import logger, record_metric
from chalicelib.services.alerts import detect as alerts
from chalicelib.services.heartbeat.slots import enqueue_if_sent_window, fire_message
from chalicelib.services.pipeline import Pipeline, RunContext
from chalicelib.services.runner.details import keep_detail
from chalicelib.settings import get_settings
from chalicelib.store import claims, runs
from chalicelib.store import state as state_store
from chalicelib.store import triggers as triggers_store
from chalicelib.store.sqs import send_fires
from chalicelib.workflows import Result

__all__ = ["OUTPUT_LIMIT_BYTES", "Outcome", "settle", "check_result", "will_retry"]

OUTPUT_LIMIT_BYTES = 4096


@dataclass
class Outcome:
    """How a run ended, as the settle records it."""

    status: str = "failed"
    error: str | None = None
    # ``{type, message, traceback}`` of a raised failure (``domain/run_detail``).
    error_detail: dict | None = None
    result: Result | None = None
    state_out: dict | None = None
    state_version: int = 0
    disable_reason: str | None = None
    deferred: bool = False
    defer_s: int = 0
    # When the workflow started (after every check), and how late that was against the
    # fire's instant (scheduled fires): None for a run refused before it started.
    started_ms: int | None = None
    lateness_ms: int | None = None


def check_result(result: Result) -> str | None:
    """Why ``result`` cannot be settled (NaN cost, a state that is not JSON...), or None."""
    return result_problem(
        state=result.state,
        next_fire_at=result.next_fire_at,
        cost_usd=result.cost_usd,
        output=result.output,
        max_state_bytes=MAX_STATE_BYTES,
    )


def will_retry(ctx: RunContext) -> bool:
    """Whether this run is an event attempt that another attempt will follow if it fails."""
    if ctx.message.surface != "event" or ctx.event is None:
        return False
    return event_will_retry(ctx.event.attempt, max_attempts=max_attempts_of(ctx.spec))


def settle(
    ctx: RunContext,
    run: RunRecord,
    outcome: Outcome,
    *,
    pipeline: Pipeline,
    clock: Callable[[], datetime],
) -> str:
    """Settle the run; returns its final status (a state write can still fail it)."""
    item, message = ctx.item, ctx.message
    finished = ctx.finished_at or clock()
    ctx.finished_at = finished
    if outcome.error:
        outcome.error = pipeline.redact(ctx, outcome.error)
    _write_state(ctx, outcome, pipeline=pipeline)
    override_ms = _next_fire_override(ctx, outcome.result, now=finished)
    succeeded = run_succeeded(outcome.status)
    # An event's failed attempt that will be retried is not (yet) a failure of the
    # trigger: only the event's last attempt counts toward limits.max_failures, so one
    # bad delivery cannot disable a webhook trigger (and turn every later one away).
    failure_counts = not (succeeded is False and will_retry(ctx))
    error = outcome.error
    settled = claims.settle_run(
        item.id,
        run_id=message.run_id,
        succeeded=succeeded,
        failure_counts=failure_counts,
        last_run={
            "id": message.run_id,
            "status": outcome.status,
            "finished_at": ms(finished),
            "error": clip_text(error, max_bytes=1000) if error else None,
        },
        next_fire_override_ms=override_ms,
        shard=triggers_store.shard_of(item.id, get_settings().due_shards),
    )
    ctx.status = outcome.status
    if settled is None:
        logger.warning(
            "settle fenced out: the claim was reaped",
            extra={"trigger_id": item.id, "run_id": message.run_id},
        )
        record_metric("SettleFencedOut")
        return outcome.status
    _record_run(ctx, run, outcome, finished_ms=ms(finished), pipeline=pipeline)
    counted_ok = bool(succeeded) if succeeded is not None and failure_counts else True
    disabled = _apply_disable_rules(ctx, settled, outcome, succeeded=counted_ok, now=finished)
    # Alerts: a run that made a transition queues it (no call at all for the others).
    alerts.note_run(item, settled, run_id=message.run_id, succeeded=succeeded,
                    failure_counts=failure_counts, disabled_reason=disabled,
                    error=outcome.error, now=finished)  # fmt: skip
    if settled.kind != "event":
        pull_slot(settled, override_ms=override_ms, now=finished)
    pipeline.after_settle(ctx)
    return outcome.status


def _write_state(ctx: RunContext, outcome: Outcome, *, pipeline: Pipeline) -> None:
    """Write back the state the run produced (masked first); a conflict fails the run."""
    if not isinstance(outcome.state_out, dict):
        return
    state = pipeline.redact_state(ctx, outcome.state_out)
    outcome.state_out = state
    try:
        if not state_store.write_state(ctx.item.id, state, expected_version=outcome.state_version):
            outcome.status = "failed"
            outcome.error = "state conflict: another run wrote the state first"
        else:
            ctx.notes["state_written"] = True  # the run's record says so (``details``)
    except Exception as exc:
        outcome.status, outcome.error = "failed", f"state not saved: {type(exc).__name__}: {exc}"


def _next_fire_override(ctx: RunContext, result: Result | None, *, now: datetime) -> int | None:
    """A workflow's returned ``next_fire_at`` (not for event triggers), at least 1 s ahead."""
    if result is None or result.next_fire_at is None or ctx.item.kind == "event":
        return None
    requested = result.next_fire_at
    if requested.tzinfo is None:
        requested = requested.replace(tzinfo=UTC)
    clamped, was_clamped = schedule.clamp_next_fire(requested, now=now)
    if was_clamped:
        logger.info(
            "next_fire_at clamped to 1 s ahead",
            extra={"trigger_id": ctx.item.id, "run_id": ctx.message.run_id},
        )
    return ms(clamped)


def _record_run(
    ctx: RunContext, run: RunRecord, outcome: Outcome, *, finished_ms: int, pipeline: Pipeline
) -> None:
    run = replace(
        run,
        status=outcome.status,
        error=clip_text(outcome.error, max_bytes=4000) if outcome.error else None,
        finished_at=finished_ms,
        started_at=outcome.started_ms if outcome.started_ms is not None else run.started_at,
        lateness_ms=outcome.lateness_ms if outcome.lateness_ms is not None else run.lateness_ms,
    )
    result = outcome.result
    if result is not None:
        run = replace(run, cost_usd=float(result.cost_usd or 0))
        if result.output is not None:
            output = json.dumps(result.output, default=str)
            run = replace(
                run,
                output=clip_text(pipeline.redact(ctx, output), max_bytes=OUTPUT_LIMIT_BYTES),
            )
    # ``history: failures`` keeps no record of a success (two write units a fire); its
    # last_run, counters, metrics and log line are written all the same.
    history = TriggerSpec.from_dict(ctx.spec).history
    if records_run(history, status=outcome.status, surface=ctx.message.surface):
        # Before the record it completes (a failure's traceback, a payload of its own).
        run = keep_detail(
            ctx,
            run,
            status=outcome.status,
            error=outcome.error,
            detail=outcome.error_detail,
            pipeline=pipeline,
        )
        runs.put_run(run)
    record_metric("Runs", status=outcome.status, surface=ctx.message.surface)
    if run.lateness_ms is not None:
        record_metric("Lateness", float(run.lateness_ms), unit="Milliseconds")


def _apply_disable_rules(
    ctx: RunContext, settled: Trigger, outcome: Outcome, *, succeeded: bool, now: datetime
) -> str | None:
    """Disable the trigger if a rule says so after this run; the reason if it did."""
    limits = ctx.spec.get("limits") or {}
    reason = outcome.disable_reason or disable_reason_after_run(
        kind=settled.kind,
        succeeded=succeeded,
        consecutive_failures=int(settled.consecutive_failures or 0),
        run_count=int(settled.run_count or 0),
        limits=Limits(
            max_runs=limits.get("max_runs"),
            expires_at=parse_iso(limits.get("expires_at")),
            max_failures=max_failures_of(limits),
        ),
        next_fire_at=dt(nxt) if (nxt := triggers_store.next_slot_of(settled)) is not None else None,
        now=now,
    )
    if reason is None or settled.status != "active":
        return None
    if triggers_store.disable_trigger(ctx.item.id, reason=reason, now_ms=ms(now)) is None:
        return None
    record_metric("Disables", reason=reason)
    logger.warning(
        "trigger disabled",
        extra={"trigger_id": ctx.item.id, "run_id": ctx.message.run_id, "reason": reason},
    )
    return reason


def pull_slot(settled: Trigger, *, override_ms: int | None, now: datetime) -> None:
    """After a settle: send the message of a slot that waited for this run.

    A slot that came due while this run held the trigger (``buffer_one``, or ``allow``
    at its concurrency) was left due by its claim: its message is sent now. A slot
    set by the workflow (``next_fire_at``) inside the window the heartbeat already
    enqueued is sent too. A spare message is dropped by the claim's fence.
    """
    slot = triggers_store.next_slot_of(settled)
    if settled.status != "active" or slot is None or not settled.sched:
        return
    now_ms = ms(now)
    if slot <= now_ms + 1000 and override_ms is None:
        # A standing item's claim is fenced on its pointer: the message says so.
        shard = settled.due_shard if triggers_store.is_standing(settled) else None
        message = fire_message(
            settled.id, slot, settled.sched, now_ms=now_ms, standing_shard=shard or None
        )
        if send_fires([message]) and send_fires([message]):
            logger.warning(
                "the waiting slot could not be sent; the overdue pass will",
                extra={"trigger_id": settled.id, "run_id": message.run_id},
            )
    elif override_ms is not None:
        enqueue_if_sent_window(settled, now=now)
