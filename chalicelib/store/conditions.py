"""The one test of a write whose condition did not hold, whichever client raised it."""

from __future__ import annotations

__all__ = ["condition_failed"]

_CONDITION_FAILED = "ConditionalCheckFailedException"


def condition_failed(exc: BaseException) -> bool:
    """Whether ``exc`` is a conditional write whose condition did not hold.

    A fenced write that fails its condition is an answer ("not ours", "already there"),
    not an error. pynamodb's ``PutError``/``UpdateError`` carry the code as
    ``cause_response_code``; botocore's ``ClientError`` in its ``response``.
    """
    code = getattr(exc, "cause_response_code", None)
    if code is None:
        response = getattr(exc, "response", None)
        if isinstance(response, dict):
            code = (response.get("Error") or {}).get("Code")
    return code == _CONDITION_FAILED
