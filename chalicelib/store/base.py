"""What every table module shares: the pynamodb base model and the reading of DynamoDB errors.

A fenced write fails its condition when another writer got there first: that is an answer
("not ours", "taken", "already there"), not an error. ``condition_failed`` (``store/conditions.py``) is the one
place that recognises it, whichever client raised it (pynamodb or boto3).
"""

from __future__ import annotations

from typing import Any

from pynamodb.models import Model

from chalicelib.store.conditions import condition_failed

__all__ = ["TableBase", "condition_failed", "missing_path", "plain_map", "opt_int"]


class TableBase(Model):
    """Every table: on demand, three retries (``configure_models`` sets name and endpoint)."""

    class Meta:
        abstract = True
        region = "us-east-1"
        billing_mode = "PAY_PER_REQUEST"
        max_retry_attempts = 3


def opt_int(value: Any) -> int | None:
    """A number attribute as an int (pynamodb reads numbers as floats), None kept."""
    return None if value is None else int(value)


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
