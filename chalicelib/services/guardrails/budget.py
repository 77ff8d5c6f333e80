"""budget: ``limits.max_usd`` per ``budget_period``.

Before the run an estimate is reserved on the period's ledger item (``store/ledger.py``)
with one conditional write; no room means ``budget_exceeded`` and the trigger disabled
(reason ``budget``). After the run the reservation is swapped for the ``cost_usd`` it
reported; once the period's spend reaches ``max_usd`` the trigger is disabled (reason
``budget``). A lost run is charged its reservation.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from chalicelib.domain import budget
from chalicelib.domain.alerts import Transition, budget_crossed
from chalicelib.domain.epoch_ms import ms
from chalicelib.domain.records import Trigger
from chalicelib.domain.trigger_spec import TriggerSpec
from chalicelib.observability import logger, record_metric
from chalicelib.services.alerts import detect as alerts
from chalicelib.services.pipeline import Refusal, RunContext, RunPolicy
from chalicelib.store import ledger, triggers

__all__ = ["LEDGER_RETENTION_S", "BudgetPolicy", "budget_guard"]

# Ledger items outlive their period by this much (for looking back), then expire.
LEDGER_RETENTION_S = 90 * 86400


def _budget_of(spec: dict) -> tuple[float, str] | None:
    return TriggerSpec.from_dict(spec).budget


def _period(item: Trigger, spec: dict, period: str, *, at: datetime) -> budget.Period:
    tz = budget.budget_timezone(item.kind, spec.get("schedule"))
    return budget.period_of(period, at=at, timezone=tz)


def budget_guard(ctx: RunContext) -> Refusal | None:
    """Reserve an estimate of this run's cost, or refuse it (``budget_exceeded``)."""
    found = _budget_of(ctx.spec)
    if found is None:
        return None
    max_usd, period_name = found
    period = _period(ctx.item, ctx.spec, period_name, at=ctx.now)
    expires = (
        int(period.ends_at.timestamp()) + LEDGER_RETENTION_S if period.ends_at is not None else None
    )
    held = ledger.reserve(
        ctx.item.id, period.key, run_id=ctx.message.run_id, max_usd=max_usd, expires=expires
    )
    if held.ok:
        ctx.notes["budget"] = (period.key, held.estimate_usd, max_usd)
        return None
    record_metric("BudgetRefusals")
    return Refusal(
        "budget_exceeded",
        f"budget of ${max_usd:g} per {period_name} is used up (spent ${held.spent_usd:g}, "
        f"reserved ${held.reserved_usd:g}, this run needs about ${held.estimate_usd:g})",
        reason="budget",
    )


def _budget_finish(ctx: RunContext) -> None:
    hold = ctx.notes.get("budget")
    if hold is None:
        return
    period, estimate, max_usd = hold
    result = ctx.result
    actual = budget.usd(result.cost_usd) if result is not None else 0.0
    totals = ledger.reconcile(
        ctx.item.id,
        period,
        run_id=ctx.message.run_id,
        estimate=estimate,
        actual_usd=actual,
        record_cost=result is not None,
    )
    finished = ctx.finished_at or ctx.now
    if totals is not None:
        _note_threshold(ctx, totals.spent_usd - actual, totals.spent_usd, max_usd, now=finished)
    if totals is None or not budget.budget_used_up(totals.spent_usd, max_usd):
        return
    # This run crossed the budget: it stands, and the trigger stops here.
    if triggers.disable_trigger(ctx.item.id, reason="budget", now_ms=ms(finished)) is not None:
        record_metric("Disables", reason="budget")
        alerts.note_disabled(ctx.item, reason="budget", now=finished, run_id=ctx.message.run_id)
        logger.warning(
            "trigger disabled: budget used up",
            extra={"trigger_id": ctx.item.id, "run_id": ctx.message.run_id, "period": period},
        )


def _note_threshold(
    ctx: RunContext, before: float, after: float, max_usd: float, *, now: datetime
) -> None:
    """Alerts: a run whose cost crossed a tenth of the budget queues a ``budget``
    transition (the policies' ``budget_percent`` is matched by the worker)."""
    if not budget_crossed(before, after, max_usd):
        return
    alerts.queue_transitions(
        [
            Transition(
                kind="budget",
                tenant=ctx.item.tenant,
                trigger_id=ctx.item.id,
                at_ms=ms(now),
                run_id=ctx.message.run_id,
                percent_before=round(100 * before / max_usd, 2),
                percent_after=round(100 * after / max_usd, 2),
                reason=f"spent ${after:g} of ${max_usd:g}",
            )
        ]
    )


def _budget_lost(*, item: Trigger, run_id: str, entry: Any, now: datetime) -> None:
    """A reaped run may have spent its estimate: charge it, and release the hold."""
    try:
        spec = TriggerSpec.from_json(item.spec)
    except ValueError:
        return
    if spec.budget is None:
        return
    for period, holds in ledger.recent_holds(item.id):
        if run_id in holds:
            estimate = float(holds[run_id])
            ledger.reconcile(
                item.id,
                period,
                run_id=run_id,
                estimate=estimate,
                actual_usd=estimate,
                record_cost=False,
            )


class BudgetPolicy(RunPolicy):
    """``check``: reserve; ``after_settle``: reconcile; ``after_lost``: charge the hold."""

    name = "budget"

    def check(self, ctx: RunContext) -> Refusal | None:
        return budget_guard(ctx)

    def after_settle(self, ctx: RunContext) -> None:
        _budget_finish(ctx)

    def after_lost(self, *, item: Trigger, run_id: str, entry: Any, now: datetime) -> None:
        _budget_lost(item=item, run_id=run_id, entry=entry, now=now)
