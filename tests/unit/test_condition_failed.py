"""store/conditions: the one test for a failed condition, whichever client raised it."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError
from pynamodb.exceptions import PutError, TransactWriteError, UpdateError

from chalicelib.store.conditions import condition_failed, transaction_cancelled


def _client_error(code: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "m"}}, "PutItem")


@pytest.mark.parametrize(
    ("exc", "failed", "cancelled"),
    [
        (PutError(cause=_client_error("ConditionalCheckFailedException")), True, False),
        (UpdateError(cause=_client_error("ConditionalCheckFailedException")), True, False),
        (UpdateError(cause=_client_error("ProvisionedThroughputExceededException")), False, False),
        (
            TransactWriteError("transaction", cause=_client_error("TransactionCanceledException")),
            False,
            True,
        ),
        (_client_error("ConditionalCheckFailedException"), True, False),
        (_client_error("ValidationException"), False, False),
        (ValueError("ConditionalCheckFailedException"), False, False),
        (UpdateError("injected: no cause"), False, False),
        (PutError("x", cause=_client_error("ConditionalCheckFailedException")), True, False),
    ],
)
def test_condition_failed(exc, failed, cancelled):
    assert condition_failed(exc) is failed
    assert transaction_cancelled(exc) is cancelled
