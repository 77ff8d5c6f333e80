"""``store/conditions.condition_failed``: the one test of a write whose condition did not hold."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError
from pynamodb.exceptions import PutError, UpdateError

from chalicelib.store.conditions import condition_failed


def _client_error(code: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "x"}}, "UpdateItem")


@pytest.mark.parametrize(
    ("exc", "failed"),
    [
        (UpdateError("x", cause=_client_error("ConditionalCheckFailedException")), True),
        (PutError("x", cause=_client_error("ConditionalCheckFailedException")), True),
        (_client_error("ConditionalCheckFailedException"), True),
        (UpdateError("x", cause=_client_error("ProvisionedThroughputExceededException")), False),
        (_client_error("ValidationException"), False),
        (UpdateError("injected: no cause"), False),
        (ValueError("ConditionalCheckFailedException"), False),
    ],
)
def test_condition_failed_recognises_only_a_failed_condition(exc, failed):
    assert condition_failed(exc) is failed
