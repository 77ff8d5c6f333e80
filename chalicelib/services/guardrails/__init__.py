"""Guardrails: what makes a trigger safe to leave running, as run policies.

Each module holds one ``RunPolicy`` (``services/pipeline.py``); ``chalicelib.assembly``
lists them, in order, where the runner is built:

- ``switched_off.SwitchPolicy``: nothing fires while ``triggers_enabled`` is off.
- ``creator.CreatorPolicy``: the trigger's creator key still exists and is an operator.
- ``serialize.SerializePolicy``: runs sharing a ``serialize_key`` never overlap.
- ``budget.BudgetPolicy``: ``limits.max_usd`` per ``budget_period``.
- ``workflow_access.WorkflowAccessPolicy``: ``fire.secrets`` (masked wherever they show
  up) and ``fire.triggers`` (acting as the trigger's creator).
- ``state_contract.StateContractPolicy``: the ``StateSchemaMismatch`` metric at fire time.
"""

from __future__ import annotations

from chalicelib.services.guardrails.budget import LEDGER_RETENTION_S, BudgetPolicy, budget_guard
from chalicelib.services.guardrails.creator import CreatorPolicy, creator_guard
from chalicelib.services.guardrails.serialize import (
    HANDOFF_S,
    MAX_POLL_S,
    SerializePolicy,
    serialize_guard,
)
from chalicelib.services.guardrails.state_contract import StateContractPolicy
from chalicelib.services.guardrails.switched_off import SWITCH_WAIT_S, SwitchPolicy, switch_guard
from chalicelib.services.guardrails.workflow_access import (
    TriggersClient,
    WorkflowAccessPolicy,
    creator_principal,
)

__all__ = [
    "BudgetPolicy",
    "CreatorPolicy",
    "SerializePolicy",
    "StateContractPolicy",
    "SwitchPolicy",
    "WorkflowAccessPolicy",
    "switch_guard",
    "creator_guard",
    "serialize_guard",
    "budget_guard",
    "TriggersClient",
    "creator_principal",
    "LEDGER_RETENTION_S",
    "SWITCH_WAIT_S",
    "MAX_POLL_S",
    "HANDOFF_S",
]
