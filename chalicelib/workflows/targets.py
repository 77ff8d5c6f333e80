"""Calling a workflow target: a registered Python function, ``lambda:`` or ``http:``."""

from __future__ import annotations

from typing import Any

from chalicelib.workflows.model import DestructiveRefused, Fire, Result, WorkflowFailed
from chalicelib.workflows.registry import get_workflow

__all__ = ["invoke", "to_result", "target_kind"]


def target_kind(target: str) -> str:
    """``python``, ``lambda`` or ``http``."""
    if target.startswith("lambda:"):
        return "lambda"
    if target.startswith("http:"):
        return "http"
    return "python"


def to_result(value: Any) -> Result:
    """Normalise what a target answered into a ``Result``."""
    if value is None:
        return Result()
    if isinstance(value, Result):
        return value
    if isinstance(value, dict):
        from datetime import datetime

        if value.get("error"):
            raise WorkflowFailed(str(value["error"])[:1000], state=value.get("state"))
        next_fire_at = value.get("next_fire_at")
        if isinstance(next_fire_at, str):
            next_fire_at = datetime.fromisoformat(next_fire_at.replace("Z", "+00:00"))
        cost = value.get("cost_usd") or 0.0
        return Result(
            state=value.get("state"),
            next_fire_at=next_fire_at,
            cost_usd=float(cost) if isinstance(cost, int | float) else 0.0,
            output=value.get("output"),
        )
    return Result(output=value)


def invoke(target: str, fire: Fire, *, tenant: str | None = None) -> Result:
    """Run ``target`` with ``fire``; raises on failure.

    ``tenant`` is the trigger's (a ``lambda:`` target is invoked as that tenant); without
    it, a ``lambda:`` target reads it from the trigger's item.
    """
    kind = target_kind(target)
    if kind == "lambda":
        from chalicelib.workflows.remote import invoke_lambda

        return to_result(invoke_lambda(target[len("lambda:") :], fire, tenant=tenant))
    if kind == "http":
        from chalicelib.workflows.remote import invoke_http

        return to_result(invoke_http(target[len("http:") :], fire))
    registered = get_workflow(target)
    if registered is None:
        raise LookupError(f"workflow {target!r} is not registered")
    try:
        value = registered.func(fire)
    except Exception:
        if fire.refused:  # refused, then failed some other way: the refusal is what counts
            raise DestructiveRefused(fire.refused) from None
        raise
    if fire.refused:  # the workflow caught the refusal and carried on: still refused
        raise DestructiveRefused(fire.refused)
    return to_result(value)
