"""Tables and indexes: the models, the template, the deployed stack and the local stack agree."""

from __future__ import annotations

import pytest

from chalicelib.store.tables import ALL_MODELS, TTL_ATTRIBUTES, base_name
from infra.tables import table_logical_id

_PROJECTIONS = {
    "KeysOnlyProjection": "KEYS_ONLY",
    "IncludeProjection": "INCLUDE",
    "AllProjection": "ALL",
}


def _expected(model) -> dict:
    """A table as the model declares it, read from the model's attributes (not its schema)."""
    attrs = model.get_attributes()
    keys = {a.attr_name: a for a in attrs.values() if a.is_hash_key or a.is_range_key}
    definitions = {name: a.attr_type for name, a in keys.items()}
    indexes = {}
    for index in model._indexes.values():
        index_keys = {}
        for attr in index.Meta.attributes.values():
            definitions[attr.attr_name] = attr.attr_type
            index_keys[attr.attr_name] = "HASH" if attr.is_hash_key else "RANGE"
        projection = index.Meta.projection
        kind = _PROJECTIONS[type(projection).__name__]
        indexes[index.Meta.index_name] = (
            index_keys,
            kind,
            tuple(sorted(getattr(projection, "non_key_attributes", None) or ())),
        )
    return {
        "keys": {name: "HASH" if a.is_hash_key else "RANGE" for name, a in keys.items()},
        "definitions": definitions,
        "indexes": indexes,
    }


def _described(table: dict) -> dict:
    """The same shape from a DescribeTable answer or a template's table properties."""
    indexes = {}
    for index in table.get("GlobalSecondaryIndexes", []) or []:
        projection = index["Projection"]
        indexes[index["IndexName"]] = (
            {k["AttributeName"]: k["KeyType"] for k in index["KeySchema"]},
            projection["ProjectionType"],
            tuple(sorted(projection.get("NonKeyAttributes", []) or ())),
        )
    return {
        "keys": {k["AttributeName"]: k["KeyType"] for k in table["KeySchema"]},
        "definitions": {
            a["AttributeName"]: a["AttributeType"] for a in table["AttributeDefinitions"]
        },
        "indexes": indexes,
    }


MODELS = {base_name(m): m for m in ALL_MODELS}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_template_table_is_the_model(packaged, name):
    table = packaged.template["Resources"][table_logical_id(name)]["Properties"]
    assert table["TableName"] == f"cronhook-dev-{name}"
    assert _described(table) == _expected(MODELS[name])
    assert table["KeySchema"][0]["KeyType"] == "HASH"  # CloudFormation wants HASH first
    for index in table.get("GlobalSecondaryIndexes", []):
        assert index["KeySchema"][0]["KeyType"] == "HASH"
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert table["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert table["SSESpecification"]["SSEEnabled"] is True
    ttl = table.get("TimeToLiveSpecification")
    if name in TTL_ATTRIBUTES:
        assert ttl == {"AttributeName": TTL_ATTRIBUTES[name], "Enabled": True}
    else:
        assert ttl is None


def test_template_has_exactly_the_models_tables(packaged):
    tables = {
        v["Properties"]["TableName"]
        for v in packaged.template["Resources"].values()
        if v["Type"] == "AWS::DynamoDB::Table"
    }
    assert tables == {f"cronhook-dev-{name}" for name in MODELS}


def test_deployed_tables_equal_the_tables_the_local_stack_creates(deployed, aws):
    """moto's CloudFormation made the stack's tables; ``create_tables`` made the local ones."""
    from chalicelib.store.aws import client

    local = client("dynamodb")  # the suite's moto server, tables made by create_tables
    remote = deployed.client("dynamodb")
    for name, model in MODELS.items():
        made_locally = local.describe_table(TableName=f"cronhook-test-{name}")["Table"]
        made_by_stack = remote.describe_table(TableName=f"cronhook-dev-{name}")["Table"]
        assert _described(made_by_stack) == _described(made_locally) == _expected(model), name
        assert made_by_stack["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
        assert made_locally["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
        ttl = local.describe_time_to_live(TableName=f"cronhook-test-{name}")
        status = ttl["TimeToLiveDescription"]
        if name in TTL_ATTRIBUTES:
            assert status["TimeToLiveStatus"] == "ENABLED"
            assert status["AttributeName"] == TTL_ATTRIBUTES[name]
        else:
            assert status["TimeToLiveStatus"] == "DISABLED"
