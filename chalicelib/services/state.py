"""The state contract: a workflow's ``state_schema`` and ``initial_state``, checked on create,
PATCH and in every trigger view (the runner counts mismatches: guardrails)."""

from __future__ import annotations

from typing import Any

from chalicelib.domain.errors import ValidationError
from chalicelib.domain.records import Trigger
from chalicelib.observability import logger
from chalicelib.workflows import Workflow, get_workflow, is_known_target

__all__ = ["state_problem", "validate_state", "seed_state", "warnings_view"]


def state_problem(schema: dict, state: Any) -> tuple[str, str] | None:
    """``(field, message)`` for the first way ``state`` breaks ``schema``, or None."""
    # Imported here, not at module import: only a run with a state contract needs it (the
    # heartbeat loads this module for its hooks; infra/coldstart.py).
    import jsonschema
    from jsonschema.exceptions import best_match

    validator = jsonschema.validators.validator_for(schema)(schema)
    error = best_match(validator.iter_errors(state))
    if error is None:
        return None
    path = ["state", *(str(p) for p in error.absolute_path)]
    instance = error.instance if isinstance(error.instance, dict) else {}
    if error.validator == "required":
        missing = [p for p in error.validator_value if p not in instance]
        path += missing[:1]
    elif error.validator == "additionalProperties":
        known = set((error.schema or {}).get("properties") or {})
        path += sorted(p for p in instance if p not in known)[:1]
    where = ".".join(path)
    return where, f"{where}: {error.message}"


def validate_state(workflow: Workflow | None, data: Any, state: dict) -> dict:
    """The single state validator (create and PATCH): 422 naming the path if it breaks the schema."""
    if workflow is None or not workflow.state_schema:
        return state
    problem = state_problem(workflow.state_schema, state or {})
    if problem is not None:
        where, message = problem
        raise ValidationError(
            f"state does not match the {workflow.name!r} workflow's state schema: {message}",
            field=where,
        )
    return state


def seed_state(workflow: Workflow | None, data: Any, state: dict) -> dict:
    """On create: the workflow's ``initial_state(backfill)``, under the state the client sent."""
    if workflow is None or workflow.initial_state is None:
        return state
    backfill = getattr(data, "backfill", "from_now")
    try:
        seeded = workflow.initial_state(backfill)
    except Exception as exc:
        logger.exception("initial_state failed", extra={"workflow": workflow.name})
        raise ValidationError(
            f"the {workflow.name!r} workflow could not seed its state for backfill "
            f"{backfill!r} ({type(exc).__name__})",
            field="backfill",
        ) from None
    if not isinstance(seeded, dict):
        raise ValidationError(
            f"the {workflow.name!r} workflow's initial_state did not return an object",
            field="backfill",
        )
    return {**seeded, **(state or {})}


def warnings_view(item: Trigger, state: dict | None) -> dict:
    """On the trigger's view: what a reader of this trigger should know (``warnings``)."""
    warnings: list[str] = []
    if not is_known_target(item.workflow):
        warnings.append(
            f"workflow {item.workflow!r} is not registered: its next fire disables the trigger"
        )
    elif state is not None:
        registered = get_workflow(item.workflow)
        schema = registered.state_schema if registered is not None else None
        if schema:
            problem = state_problem(schema, state)
            if problem is not None:
                warnings.append(
                    "state no longer matches the workflow's state schema: " + problem[1]
                )
    return {"warnings": warnings} if warnings else {}
