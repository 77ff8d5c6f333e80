"""Guardrails: what makes a trigger safe to leave running, plugged into the runner and the API.

Registered when this module loads (``services/plugins.py``):

- **switch** (guard, first): nothing fires while ``triggers_enabled`` is off. A queued
  cron, interval or manual run is recorded ``skipped`` (its slot is not made up later: on
  resume a trigger fires once and skips the slots it missed); an event run and an
  ``at`` trigger's only fire wait for the switch.
- **serialize** (guard + finish hook): runs whose triggers share a ``serialize_key``
  never overlap, across triggers, through a fenced lease (``store/locks.py``). A run
  that finds the key held joins the key's queue and waits (deferred: not recorded, not
  a failure); the run that releases the key hands it to the oldest waiter and re-sends
  that waiter's message at once. Every waiter also polls (at most ``MAX_POLL_S``
  apart), so a holder that died is overtaken when its lease expires.
- **budget** (guard + finish hook + lost hook): ``limits.max_usd`` per
  ``budget_period``. Before the run an estimate is reserved on the period's ledger item
  (``store/ledger.py``) with one conditional write; no room means ``budget_exceeded``
  and the trigger disabled (reason ``budget``). After the run the reservation is swapped
  for the ``cost_usd`` it reported; once the period's spend reaches ``max_usd`` the
  trigger is disabled (reason ``budget``). A lost run is charged its reservation.
- **secrets and triggers for workflows** (fire extras): ``fire.secrets``
  (``services/secrets.py``) and ``fire.triggers`` (acting as the trigger's creator); the
  values a fire read are masked in its error, output and the state it writes back.
- **state contracts**: ``validate_state`` (create and PATCH: 422 naming the path),
  ``seed_state`` (``backfill`` through the workflow's ``initial_state``), ``warnings`` in
  the trigger view, and the ``StateSchemaMismatch`` metric at fire time.
- **targets**: an ``http:`` target gets its outbound signing secret on create.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from pynamodb.exceptions import DoesNotExist

from chalicelib.domain import budget
from chalicelib.domain.errors import Forbidden, NotFound
from chalicelib.observability import logger, record_metric
from chalicelib.services import runner, runs, switch, triggers
from chalicelib.services import state as state_contract
from chalicelib.services.auth import ROOT_KEY_ID, Principal, require
from chalicelib.services.secrets import SecretReader
from chalicelib.settings import get_settings
from chalicelib.store import dynamo, ledger, locks
from chalicelib.store.models import KeyModel, TriggerModel
from chalicelib.store.sqs import FireMessage, send_fires
from chalicelib.workflows import get_workflow

__all__ = [
    "switch_guard",
    "serialize_guard",
    "budget_guard",
    "TriggersClient",
    "creator_principal",
    "SWITCH_WAIT_S",
    "MAX_POLL_S",
    "HANDOFF_S",
]

# An event run waits this long between looks at the switch while it is off.
SWITCH_WAIT_S = 60
# A run waiting for a serialize key looks again at least this often, even if nobody
# hands the key over (its holder died: the lease expires, and the next look takes it).
MAX_POLL_S = 60
# How long a key handed to a waiter stays reserved for it: long enough for its message
# to come back, short enough that a waiter that vanished (its trigger deleted) does not
# hold up the queue for long.
HANDOFF_S = 120


def _ms(at: datetime) -> int:
    return int(round(at.timestamp() * 1000))


# -- switch ---------------------------------------------------------------------------


def switch_guard(ctx: runner.RunContext) -> runner.Refusal | None:
    """Nothing fires while triggers are switched off."""
    if switch.triggers_enabled(now=ctx.now):
        return None
    record_metric("SwitchedOffRuns", surface=ctx.message.surface)
    if ctx.message.surface in ("event", "backfill") or ctx.item.kind == "at":
        # An event accepted before the switch went off, a slot someone asked to backfill,
        # or an `at` trigger's only fire: skipping would lose it, so it waits for the switch.
        return runner.Refusal(
            "skipped",
            "triggers are switched off; waiting",
            defer=True,
            delay_s=SWITCH_WAIT_S,
        )
    # A recurring slot is skipped, not made up later: on resume the heartbeat fires the
    # trigger once for the time it was off (and a made-up slot would be a second fire).
    return runner.Refusal("skipped", "triggers are switched off (triggers_enabled)")


# -- serialize ------------------------------------------------------------------------


def _lock_key(ctx: runner.RunContext) -> str | None:
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


def serialize_guard(ctx: runner.RunContext) -> runner.Refusal | None:
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
    run_id, now_ms = ctx.message.run_id, _ms(ctx.now)
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
    return runner.Refusal(
        "skipped",
        f"serialize_key {ctx.spec.get('serialize_key')!r} is held by another run; waiting",
        defer=True,
        delay_s=int(wait_s),
    )


def _serialize_finish(ctx: runner.RunContext) -> None:
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
    handed = locks.release(key, run_id=run_id, handoff_until_ms=_ms(finished) + HANDOFF_S * 1000)
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


# -- budget -----------------------------------------------------------------------------

# Ledger items outlive their period by this much (for looking back), then expire.
LEDGER_RETENTION_S = 90 * 86400


def _budget_of(spec: dict) -> tuple[float, str] | None:
    limits = spec.get("limits") or {}
    max_usd = limits.get("max_usd")
    if max_usd is None:
        return None
    return float(max_usd), str(limits.get("budget_period") or "month")


def _period(item: TriggerModel, spec: dict, period: str, *, at: datetime) -> budget.Period:
    tz = budget.budget_timezone(item.kind, spec.get("schedule"))
    return budget.period_of(period, at=at, timezone=tz)


def budget_guard(ctx: runner.RunContext) -> runner.Refusal | None:
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
    return runner.Refusal(
        "budget_exceeded",
        f"budget of ${max_usd:g} per {period_name} is used up (spent ${held.spent_usd:g}, "
        f"reserved ${held.reserved_usd:g}, this run needs about ${held.estimate_usd:g})",
        reason="budget",
    )


def _budget_finish(ctx: runner.RunContext) -> None:
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
    if totals is None or not budget.budget_used_up(totals.spent_usd, max_usd):
        return
    # This run crossed the budget: it stands, and the trigger stops here.
    finished = ctx.finished_at or ctx.now
    if dynamo.disable_trigger(ctx.item.id, reason="budget", now_ms=_ms(finished)) is not None:
        record_metric("Disables", reason="budget")
        logger.warning(
            "trigger disabled: budget used up",
            extra={"trigger_id": ctx.item.id, "run_id": ctx.message.run_id, "period": period},
        )


def _budget_lost(*, item: TriggerModel, run_id: str, entry: Any, now: datetime) -> None:
    """A reaped run may have spent its estimate: charge it, and release the hold."""
    try:
        spec = json.loads(item.spec or "{}")
    except ValueError:
        return
    if _budget_of(spec) is None:
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


# -- secrets, triggers for workflows --------------------------------------------------


def creator_principal(item: TriggerModel) -> Principal:
    """The trigger's creator as a principal: its key's tenant and role, if it still may act."""
    key_id = item.created_by
    if key_id == ROOT_KEY_ID:
        return Principal(ROOT_KEY_ID, item.tenant, "admin")
    stored = None
    if key_id:
        try:
            stored = KeyModel.get(key_id)
        except DoesNotExist:
            stored = None
    if stored is None or stored.revoked or stored.tenant != item.tenant:
        raise Forbidden("the key that created this trigger no longer exists")
    return Principal(key_id, stored.tenant, stored.role)


class TriggersClient:
    """``fire.triggers``: manage triggers as the trigger's creator, within its tenant and role.

    Every call goes through the same use cases as the REST API (validation, tenancy,
    audit). A fire may make at most ``MAX_WRITES`` changes, and may not change the
    trigger that is firing (its own state and next fire come back in the ``Result``).
    It may delete it: ``delete(fire.trigger_id)`` is carried out after the run settles
    (settle writes the trigger item, so deleting it first would race that write).
    """

    MAX_WRITES = 20

    def __init__(self, item: TriggerModel, *, now: datetime, notes: dict | None = None):
        self._item = item
        self._now = now
        self._writes = 0
        self._notes = notes if notes is not None else {}

    def _as(self, role: str) -> Principal:
        principal = creator_principal(self._item)
        require(principal, role)
        return principal

    def _write(self, trigger_id: str | None = None) -> Principal:
        if trigger_id == self._item.id:
            raise Forbidden(
                "a workflow cannot change the trigger it runs under; return a Result instead"
            )
        if self._writes >= self.MAX_WRITES:
            raise Forbidden(f"a fire may change at most {self.MAX_WRITES} triggers")
        principal = self._as("operator")
        self._writes += 1
        return principal

    def create(self, body: dict) -> dict:
        """Create a trigger (the ``POST /v1/triggers`` body); the new trigger's view."""
        return triggers.create_trigger(self._write(), body, now=self._now)

    def update(self, trigger_id: str, body: dict) -> dict:
        """Change a trigger (the ``PATCH /v1/triggers/{id}`` body)."""
        return triggers.patch_trigger(self._write(trigger_id), trigger_id, body, now=self._now)

    def delete(self, trigger_id: str) -> None:
        """Delete a trigger; the fire's own trigger is deleted once this run has settled."""
        if trigger_id == self._item.id:
            self._as("operator")
            self._notes["delete_self"] = True
            return
        triggers.delete_trigger(self._write(trigger_id), trigger_id, now=self._now)

    def get(self, trigger_id: str) -> dict:
        """One trigger of the tenant, with its state."""
        return triggers.get_trigger_view(self._as("viewer"), trigger_id)

    def list(self, **params: str) -> dict:
        """A page of the tenant's triggers (``tag=``, ``workflow=``, ``status=``...)."""
        return triggers.list_triggers(self._as("viewer"), params)

    def __repr__(self) -> str:
        return f"TriggersClient(as={self._item.created_by!r})"


def _fire_extras(ctx: runner.RunContext) -> dict:
    reader = SecretReader(tenant=ctx.item.tenant, scope=ctx.spec.get("secret_scope"))
    ctx.notes["secrets"] = reader
    return {"secrets": reader, "triggers": TriggersClient(ctx.item, now=ctx.now, notes=ctx.notes)}


def _delete_self_finish(ctx: runner.RunContext) -> None:
    """A workflow asked, through ``fire.triggers.delete``, to delete its own trigger."""
    if not ctx.notes.get("delete_self"):
        return
    try:
        triggers.delete_trigger(
            creator_principal(ctx.item), ctx.item.id, now=ctx.now, detail={"by": "workflow"}
        )
    except NotFound:
        pass  # deleted meanwhile: what was asked is done


def _mask_secrets(ctx: runner.RunContext, text: str) -> str:
    reader = ctx.notes.get("secrets")
    return reader.mask(text) if reader is not None else text


def _mask_secrets_in_state(ctx: runner.RunContext, state: dict) -> dict:
    # State is read by every viewer of the trigger: a secret a workflow copied into it is
    # masked like one in its error or output (the workflow reads it again next time).
    reader = ctx.notes.get("secrets")
    return reader.mask_value(state) if reader is not None else state


# -- state contracts ----------------------------------------------------------------------


def _state_contract_finish(ctx: runner.RunContext) -> None:
    """Count fires whose state the deployed workflow's schema no longer accepts."""
    if ctx.fire is None:
        return
    registered = get_workflow(ctx.item.workflow)
    schema = registered.state_schema if registered is not None else None
    if not schema:
        return
    problem = state_contract.state_problem(schema, ctx.fire.state)
    if problem is not None:
        record_metric("StateSchemaMismatch", workflow=ctx.item.workflow)
        # The field path only: a state value may be anything.
        logger.warning(
            "state does not match the workflow's state schema",
            extra={"trigger_id": ctx.item.id, "field": problem[0]},
        )


# -- registration ---------------------------------------------------------------------


def _register() -> None:
    # Order matters: the switch and the serialize key may defer a run, so they come
    # before anything that acquires (a deferred run runs no guard after it).
    if switch_guard not in runner.guards:
        runner.guards.insert(0, switch_guard)
    for guard in (serialize_guard, budget_guard):
        if guard not in runner.guards:
            runner.guards.append(guard)
    # First among the finish hooks: the key and the budget are settled before the event
    # service pulls the trigger's next event.
    for hook in (_serialize_finish, _budget_finish):
        if hook not in runner.finish_hooks:
            runner.finish_hooks.insert(0, hook)
    if _state_contract_finish not in runner.finish_hooks:
        runner.finish_hooks.append(_state_contract_finish)
    # Last: every other hook still sees the trigger it settled.
    if _delete_self_finish not in runner.finish_hooks:
        runner.finish_hooks.append(_delete_self_finish)
    if _fire_extras not in runner.fire_extras:
        runner.fire_extras.append(_fire_extras)
    if _mask_secrets not in runner.redactors:
        runner.redactors.append(_mask_secrets)
    if _mask_secrets_in_state not in runner.state_redactors:
        runner.state_redactors.append(_mask_secrets_in_state)
    if _budget_lost not in runs.lost_hooks:
        runs.lost_hooks.append(_budget_lost)


_register()
