"""Calling a workflow target: a registered Python function, ``lambda:``, ``http:``, the AWS
service targets (``sqs:``, ``sns:``, ``states:``, ``events:``) or ``github:``."""

from __future__ import annotations

from typing import Any

from chalicelib.workflows.model import DestructiveRefused, Fire, Result, WorkflowFailed
from chalicelib.workflows.registry import get_workflow

__all__ = ["invoke", "to_result", "target_kind", "REMOTE_KINDS"]

# Target kinds written ``<kind>:<address>``; anything else names a registered workflow.
REMOTE_KINDS = ("lambda", "http", "sqs", "sns", "states", "events", "github")


def target_kind(target: str) -> str:
    """``python``, or the remote kind (``lambda``, ``http``, ``sqs``, ... ``github``)."""
    kind, sep, _ = target.partition(":")
    return kind if sep and kind in REMOTE_KINDS else "python"


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
    if kind == "github":
        from chalicelib.workflows.remote.github_target import invoke_github

        return to_result(invoke_github(target[len("github:") :], fire))
    if kind != "python":  # sqs, sns, states, events
        from chalicelib.workflows.remote.aws_targets import invoke_aws
        from chalicelib.workflows.remote.lambda_target import trigger_tenant

        spec = target[len(kind) + 1 :]
        owner = tenant if tenant is not None else trigger_tenant(fire.trigger_id)
        return to_result(invoke_aws(kind, spec, fire, tenant=owner))
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
