"""Checking a target on create (and on a PATCH that changes it)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from chalicelib.domain.errors import ValidationError
from chalicelib.domain.records import Trigger
from chalicelib.domain.signatures import generate_secret
from chalicelib.store import kms
from chalicelib.workflows.remote.addresses import check_http_url
from chalicelib.workflows.remote.aws_targets import AWS_KINDS, check_aws_target
from chalicelib.workflows.remote.github_target import check_github_target
from chalicelib.workflows.remote.lambda_target import check_lambda_target

__all__ = ["prepare_target", "TARGET_PREFIXES"]

# The targets checked on create and on a PATCH that changes them.
TARGET_PREFIXES = ("http:", "lambda:", "sqs:", "sns:", "states:", "events:", "github:")


def prepare_target(item: Trigger, workflow: str, *, now: Any = None) -> tuple[Trigger, dict]:
    """On create (and a PATCH that changes the target): check it; a new ``http:`` target
    gets its outbound signing secret, sealed (on the trigger returned), shown once."""
    if workflow.startswith("lambda:"):
        problem = check_lambda_target(workflow[len("lambda:") :], tenant=item.tenant)
        if problem is not None:
            raise ValidationError(problem, field="workflow")
        return item, {}
    kind, _, spec = workflow.partition(":")
    if kind in AWS_KINDS:
        problem = check_aws_target(kind, spec, tenant=item.tenant)
        if problem is not None:
            raise ValidationError(problem, field="workflow")
        return item, {}
    if kind == "github":
        problem = check_github_target(spec)
        if problem is not None:
            raise ValidationError(problem, field="workflow")
        return item, {}
    if not workflow.startswith("http:"):
        return item, {}
    problem = check_http_url(workflow[len("http:") :])
    if problem is not None:
        raise ValidationError(problem, field="workflow")
    secret = generate_secret("standard")
    sealed = kms.seal(secret, trigger_id=item.id)
    return replace(item, outbound_secret_sealed=sealed), {"outbound_secret": secret}
