"""What every table module shares: the pynamodb base model and the reading of DynamoDB errors.

A fenced write fails its condition when another writer got there first: that is an answer
("not ours", "taken", "already there"), not an error. ``condition_failed`` is the one place
that recognises it, whichever client raised it (pynamodb or boto3).
"""

from __future__ import annotations

from typing import Any

from pynamodb.models import Model

__all__ = ["TableBase", "condition_failed", "missing_path", "plain_map"]

_CONDITION_FAILED = "ConditionalCheckFailedException"


class TableBase(Model):
    """Every table: on demand, three retries (``configure_models`` sets name and endpoint)."""

    class Meta:
        abstract = True
        region = "us-east-1"
        billing_mode = "PAY_PER_REQUEST"
        max_retry_attempts = 3


def _error_code(exc: BaseException) -> str | None:
    code = getattr(exc, "cause_response_code", None)  # pynamodb's PutError, UpdateError...
    if code is not None:
        return str(code)
    response = getattr(exc, "response", None)  # botocore's ClientError
    if isinstance(response, dict):
        found = (response.get("Error") or {}).get("Code")
        return str(found) if found is not None else None
    return None


def condition_failed(exc: BaseException) -> bool:
    """Whether ``exc`` is a conditional write whose condition did not hold."""
    return _error_code(exc) == _CONDITION_FAILED


def missing_path(exc: BaseException) -> bool:
    """Whether ``exc`` is an update of a map entry whose parent is absent ("document path").

    DynamoDB refuses ``SET m.k`` when ``m`` does not exist, with a validation error whose
    message is the only thing that tells it apart.
    """
    return "document path" in str(exc).lower()


def plain_map(value: Any) -> dict:
    """A ``MapAttribute`` (or a dict, or None) as a plain dict."""
    if value is None:
        return {}
    return value.as_dict() if hasattr(value, "as_dict") else dict(value)
