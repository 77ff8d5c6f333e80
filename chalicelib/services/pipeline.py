"""The run pipeline: what runs before and after a workflow, in one ordered list.

Each guardrail is a ``RunPolicy`` with named hooks; every hook is optional (the base
class does nothing). The runner calls them through ``Pipeline``, which keeps the order it
was given: the list is built once, where the runner is built (``chalicelib.assembly``),
with the ordering rule written beside it.

**Order.** Before the workflow (``check``, ``fire_fields``, ``redact``, ``redact_state``)
the policies run in list order; after it (``after_settle``, ``after_lost``) in reverse,
as nested ``with`` blocks unwind: a policy that acquires something before the run (a
serialize lease, then a budget hold) gives it back after the run in the opposite order,
and a policy listed first sees the trigger after every later one has finished with it.
Two policies never give the same fire field (``fire_fields`` raises): their order there
cannot matter.

Hooks, in the order a run meets them:

- ``check(ctx)``: after the start fence, before the workflow. The first policy that
  returns a ``Refusal`` stops the run (and later policies' checks do not run). A policy
  that may *defer* (``Refusal(defer=True)``) must come before any policy whose check
  acquires something (a serialize lease, a budget hold).
- ``fire_fields(ctx)``: extra ``Fire`` fields (payload, secrets, the triggers client).
- ``redact(ctx, text)`` / ``redact_state(ctx, state)``: applied to a run's error and output,
  and to the state it writes back, before anything is stored.
- ``after_settle(ctx)``: bookkeeping after the settle write (budget reconcile, lock
  release, event bookkeeping and the pull of the next event, audit). Each is fenced and
  safe to repeat; each is tried ``AFTER_SETTLE_ATTEMPTS`` times, and one that still fails
  is never swallowed: the others still run, then ``AfterSettleFailed`` fails the message
  so the queue delivers it again.
- ``after_lost(item=, run_id=, entry=, now=)``: after the reaper recorded a run lost.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from chalicelib.domain.records import Trigger
from chalicelib.observability import logger, record_metric
from chalicelib.store.sqs import FireMessage
from chalicelib.workflows import Fire, Result

__all__ = [
    "AFTER_SETTLE_ATTEMPTS",
    "AfterSettleFailed",
    "Pipeline",
    "Refusal",
    "RunContext",
    "RunPolicy",
]

AFTER_SETTLE_ATTEMPTS = 3


@dataclass
class Refusal:
    """A reason not to run: the run is recorded with ``status``; ``reason`` disables the trigger."""

    status: str  # refused | budget_exceeded | skipped
    message: str
    reason: str | None = None
    defer: bool = False  # wait and try again later (e.g. serialize_key held); not a failure
    delay_s: int = 5  # how long a deferred schedule/manual run waits before it tries again


@dataclass
class RunContext:
    """What a guard or hook sees of the run."""

    item: Trigger
    spec: dict
    message: FireMessage
    now: datetime
    fire: Fire | None = None
    result: Result | None = None
    status: str | None = None
    event: Any = None
    deferred: bool = False  # a guard asked to wait (e.g. serialize_key held): not an attempt
    defer_s: int = 0  # how long the guard asked it to wait (Refusal.delay_s)
    notes: dict = field(default_factory=dict)  # guards' and hooks' own bookkeeping for this run
    finished_at: datetime | None = None  # the clock when the run settled (or was deferred)


class RunPolicy:
    """One guardrail's part in a run. Override the hooks it needs; the rest do nothing."""

    name = "policy"

    def check(self, ctx: RunContext) -> Refusal | None:
        return None

    def fire_fields(self, ctx: RunContext) -> dict:
        return {}

    def redact(self, ctx: RunContext, text: str) -> str:
        return text

    def redact_state(self, ctx: RunContext, state: dict) -> dict:
        return state

    def after_settle(self, ctx: RunContext) -> None:
        return None

    def after_lost(self, *, item: Trigger, run_id: str, entry: Any, now: datetime) -> None:
        return None


class AfterSettleFailed(Exception):
    """Bookkeeping after settle failed (after retries): the message goes back to the queue."""


@dataclass(frozen=True)
class Pipeline:
    """The policies of a run, in the order given; see the module docstring for each hook."""

    policies: Sequence[RunPolicy] = ()
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)

    def check(self, ctx: RunContext) -> Refusal | None:
        for policy in self.policies:
            refusal = policy.check(ctx)
            if refusal is not None:
                return refusal
        return None

    def fire_fields(self, ctx: RunContext) -> dict:
        fields: dict = {}
        for policy in self.policies:
            given = policy.fire_fields(ctx)
            clash = set(given) & set(fields)
            if clash:
                raise ValueError(
                    f"{policy.name} gives fire field(s) already given: {sorted(clash)}"
                )
            fields.update(given)
        return fields

    def redact(self, ctx: RunContext, text: str) -> str:
        for policy in self.policies:
            text = policy.redact(ctx, text)
        return text

    def redact_state(self, ctx: RunContext, state: dict) -> dict:
        for policy in self.policies:
            state = policy.redact_state(ctx, state)
        return state

    def after_settle(self, ctx: RunContext) -> None:
        failures = [f for p in reversed(self.policies) if (f := self._after_settle_one(p, ctx))]
        if failures:
            record_metric("FinishHookFailed", surface=ctx.message.surface)
            raise AfterSettleFailed("; ".join(failures))

    def _after_settle_one(self, policy: RunPolicy, ctx: RunContext) -> str | None:
        for attempt in range(AFTER_SETTLE_ATTEMPTS):
            try:
                policy.after_settle(ctx)
                return None
            except Exception as exc:
                logger.exception(
                    "after-settle hook failed",
                    extra={
                        "policy": policy.name,
                        "trigger_id": ctx.item.id,
                        "run_id": ctx.message.run_id,
                        "attempt": attempt + 1,
                    },
                )
                if attempt == AFTER_SETTLE_ATTEMPTS - 1:
                    return f"{policy.name}: {exc!r}"
                self.sleep(0.05 * 2**attempt)
        return None

    def after_lost(self, *, item: Trigger, run_id: str, entry: Any, now: datetime) -> None:
        """Every policy's ``after_lost``, in reverse order; one that raises does not stop the
        others, and the first error is raised once they all ran (the sweep retries)."""
        first: Exception | None = None
        for policy in reversed(self.policies):
            try:
                policy.after_lost(item=item, run_id=run_id, entry=entry, now=now)
            except Exception as exc:
                logger.exception(
                    "after-lost hook failed",
                    extra={"policy": policy.name, "trigger_id": item.id, "run_id": run_id},
                )
                first = first or exc
        if first is not None:
            raise first
