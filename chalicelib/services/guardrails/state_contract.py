"""State contracts at fire time: count fires whose state the workflow's schema refuses.

(``validate_state`` on create and PATCH, ``seed_state`` and the view's ``warnings`` are
the trigger use cases', in ``services/state.py``.)
"""

from __future__ import annotations

from chalicelib.observability import logger, record_metric
from chalicelib.services import state as state_contract
from chalicelib.services.pipeline import RunContext, RunPolicy
from chalicelib.workflows import get_workflow

__all__ = ["StateContractPolicy"]


def _state_contract_finish(ctx: RunContext) -> None:
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


class StateContractPolicy(RunPolicy):
    """``after_settle``: the ``StateSchemaMismatch`` metric."""

    name = "state_contract"

    def after_settle(self, ctx: RunContext) -> None:
        _state_contract_finish(ctx)
