"""Where the run path is put together: the run pipeline, the runner, the heartbeat's sweeps.

Every entry point (the Lambda handlers in ``chalicelib/wiring.py``, the local stack, the
tests) builds its runner and its heartbeat here, so what runs before and after a workflow
is read in one list, ``POLICIES``, and nowhere else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime

from chalicelib.domain.records import Trigger
from chalicelib.services import events, guardrails, heartbeat, ondemand
from chalicelib.services.audit import AuditPolicy
from chalicelib.services.heartbeat import Sweep, TickReport
from chalicelib.services.heartbeat import enqueuer as _enqueuer
from chalicelib.services.pipeline import Pipeline, RunPolicy
from chalicelib.services.runner import Runner

__all__ = [
    "POLICIES",
    "build_pipeline",
    "build_runner",
    "build_sweeps",
    "tick",
    "tick_messages",
    "reap_expired",
]

# The run pipeline, in order. The ordering rule (``services/pipeline.py``): the hooks
# before the workflow (check, fire_fields, redact) run top to bottom; the hooks after it
# (after_settle, after_lost) bottom to top, as nested ``with`` blocks unwind.
#
# - switch and creator first: they only refuse or defer, and a check that defers must
#   come before any check that acquires something (a deferred run runs no check after
#   it, and would hold what it acquired while it waits).
# - serialize before budget: it may defer, and it acquires the key first; so after the
#   run the budget is reconciled before the key is handed to the next waiter.
# - audit, then events, above serialize and budget: after the run the key and the budget
#   are settled before the audit reads the trigger and the event service pulls the
#   trigger's next event.
# - state_contract, workflow_access and ondemand at the top: after the run they come
#   last. workflow_access deletes the fire's own trigger if it asked to, so every hook
#   before it still sees the trigger it settled; ondemand then goes on with the
#   trigger's backfill.
# - fire fields never clash (the pipeline raises if two policies give the same one):
#   ondemand gives a manual run's payload, events an event run's payload and headers,
#   workflow_access the secrets and the triggers client.
POLICIES: tuple[RunPolicy, ...] = (
    ondemand.OnDemandPolicy(),
    guardrails.WorkflowAccessPolicy(),
    guardrails.StateContractPolicy(),
    events.EVENT_RUNS,
    AuditPolicy(),
    guardrails.SwitchPolicy(),
    guardrails.CreatorPolicy(),
    guardrails.SerializePolicy(),
    guardrails.BudgetPolicy(),
)


def build_pipeline() -> Pipeline:
    """The run pipeline: ``POLICIES``, in order."""
    return Pipeline(POLICIES)


def build_sweeps() -> list[Sweep]:
    """The passes each heartbeat tick runs after its sends: pending events, then the
    alert policies' ``late`` and ``no_event`` sweep (requested; the alerts function runs it)."""
    from chalicelib.services.alerts.detect import request_sweep

    return [events.sweep, request_sweep]


def build_runner(
    *,
    clock: Callable[[], datetime] | None = None,
    sleep: Callable[[float], None] | None = None,
    pipeline: Pipeline | None = None,
) -> Runner:
    """A runner with the run pipeline (``clock`` and ``sleep`` for tests)."""
    kwargs: dict = {"sleep": sleep}
    if clock is not None:
        kwargs["clock"] = clock
    return Runner(pipeline=pipeline or build_pipeline(), **kwargs)


def tick(*, now: datetime) -> TickReport:
    """One heartbeat tick at ``now``, with the run pipeline and the sweeps."""
    return heartbeat.tick(now=now, pipeline=build_pipeline(), sweeps=build_sweeps())


def tick_messages(
    bodies: Iterable[str],
    *,
    clock: Callable[[], datetime],
    remaining_s: Callable[[], float],
) -> list[TickReport | None]:
    """The enqueuer: each tick message's shard, as of its tick, with the run pipeline."""
    return _enqueuer.handle_ticks(
        bodies, clock=clock, remaining_s=remaining_s, pipeline=build_pipeline()
    )


def reap_expired(
    item: Trigger, *, now: datetime, reap_all: bool = False, error: str | None = None
) -> int:
    """Reap ``item``'s expired runs (every run, with ``reap_all``) through the run pipeline."""
    if error is None:
        return heartbeat.reap_expired(item, now=now, pipeline=build_pipeline(), reap_all=reap_all)
    return heartbeat.reap_expired(
        item, now=now, pipeline=build_pipeline(), reap_all=reap_all, error=error
    )
