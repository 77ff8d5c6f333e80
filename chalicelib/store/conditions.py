"""Reading DynamoDB's answer to a conditional write.

A fenced write whose condition does not hold is an answer ("another writer got there
first"), not an error. ``condition_failed`` is the one test for it, whichever client
raised it: pynamodb's ``PutError``/``UpdateError``/``DeleteError`` carry the code as
``cause_response_code``, botocore's ``ClientError`` in its ``response``.
"""

from __future__ import annotations

__all__ = ["CONDITION_FAILED", "condition_failed", "transaction_cancelled"]

CONDITION_FAILED = "ConditionalCheckFailedException"
_TRANSACTION_CANCELLED = "TransactionCanceledException"


def _error_code(exc: BaseException) -> str | None:
    code = getattr(exc, "cause_response_code", None)
    if code is not None:
        return str(code)
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        found = (response.get("Error") or {}).get("Code")
        return str(found) if found is not None else None
    return None


def condition_failed(exc: BaseException) -> bool:
    """Whether ``exc`` is a conditional write whose condition did not hold."""
    return _error_code(exc) == CONDITION_FAILED


def transaction_cancelled(exc: BaseException) -> bool:
    """Whether ``exc`` is a transaction cancelled (one of its conditions did not hold)."""
    return _error_code(exc) == _TRANSACTION_CANCELLED
