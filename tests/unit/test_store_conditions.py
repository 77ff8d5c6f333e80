"""``condition_failed``: the one test of a write whose condition did not hold."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError
from pynamodb.exceptions import PutError, UpdateError

from chalicelib.store.base import condition_failed, missing_path, plain_map


def _client_error(code: str, message: str = "") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, "UpdateItem")


@pytest.mark.parametrize(
    ("exc", "failed"),
    [
        (UpdateError("x", cause=_client_error("ConditionalCheckFailedException")), True),
        (PutError("x", cause=_client_error("ConditionalCheckFailedException")), True),
        (_client_error("ConditionalCheckFailedException"), True),
        (UpdateError("x", cause=_client_error("ProvisionedThroughputExceededException")), False),
        (_client_error("TransactionCanceledException"), False),
        (UpdateError("injected: no cause"), False),
        (ValueError("ConditionalCheckFailedException"), False),
    ],
)
def test_condition_failed_recognises_only_a_failed_condition(exc, failed):
    assert condition_failed(exc) is failed


def test_missing_path_recognises_an_update_under_an_absent_map():
    message = "The document path provided in the update expression is invalid for update"
    cause = _client_error("ValidationException", message)
    assert missing_path(UpdateError(f"Failed to update item: {cause}", cause=cause))
    assert not missing_path(_client_error("ConditionalCheckFailedException"))


def test_plain_map_of_none_a_dict_and_a_map_attribute():
    from pynamodb.attributes import MapAttribute

    assert plain_map(None) == {}
    assert plain_map({"a": 1}) == {"a": 1}
    assert plain_map(MapAttribute(a=1)) == {"a": 1}
