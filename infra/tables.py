"""DynamoDB table resources generated from the pynamodb models, so they cannot drift.

The models in ``chalicelib/store/`` (``store/tables.ALL_MODELS`` lists them) are the one definition of every table and
index. ``create_tables`` builds the local and test tables from the same schema
(``Model._get_schema``), and ``tests/infra`` checks that the deployed tables match.
"""

from __future__ import annotations

from typing import Any

from chalicelib.store.tables import ALL_MODELS, TTL_ATTRIBUTES, base_name

__all__ = ["table_logical_id", "table_resources", "table_schema"]


def table_logical_id(name: str) -> str:
    """``triggers`` -> ``TriggersTable``."""
    return "".join(part.capitalize() for part in name.replace("-", "_").split("_")) + "Table"


def _key_schema(keys: list[dict]) -> list[dict]:
    # pynamodb collects index keys from a dict of attributes, so RANGE can come first;
    # DynamoDB and CloudFormation want HASH first.
    return sorted(
        ({"AttributeName": k["AttributeName"], "KeyType": k["KeyType"]} for k in keys),
        key=lambda k: k["KeyType"] != "HASH",
    )


def table_schema(model: Any) -> dict:
    """Keys, attribute definitions and GSIs of ``model`` in CloudFormation's shape (sorted)."""
    schema = model._get_schema()
    attributes = {a["AttributeName"]: a["AttributeType"] for a in schema["attribute_definitions"]}
    indexes = []
    for index in schema["global_secondary_indexes"]:
        for a in index.get("attribute_definitions", []):
            attributes[a["AttributeName"]] = a["AttributeType"]
        projection = {"ProjectionType": index["projection"]["ProjectionType"]}
        if index["projection"].get("NonKeyAttributes"):
            projection["NonKeyAttributes"] = sorted(index["projection"]["NonKeyAttributes"])
        indexes.append(
            {
                "IndexName": index["index_name"],
                "KeySchema": _key_schema(index["key_schema"]),
                "Projection": projection,
            }
        )
    if schema.get("local_secondary_indexes"):
        raise ValueError(f"{base_name(model)}: local secondary indexes are not supported here")
    out: dict = {
        "AttributeDefinitions": [
            {"AttributeName": name, "AttributeType": kind}
            for name, kind in sorted(attributes.items())
        ],
        "KeySchema": _key_schema(schema["key_schema"]),
    }
    if indexes:
        out["GlobalSecondaryIndexes"] = sorted(indexes, key=lambda i: i["IndexName"])
    return out


def table_resources(*, table_prefix: str, protect: bool) -> dict[str, dict]:
    """One ``AWS::DynamoDB::Table`` per model: on demand, PITR, KMS encryption, TTL.

    ``protect`` (prod) turns on deletion protection and retains the tables when the
    stack or the resource goes away: run history and triggers outlive a bad deploy. A
    failed first create removes them (``RetainExceptOnCreate``), so the retry does not
    meet "already exists"; deletion protection follows the ``TableDeletionProtection``
    parameter (``infra/deploy.py`` turns it on once the first create succeeded).
    """
    policy = "RetainExceptOnCreate" if protect else "Delete"
    replace = "Retain" if protect else "Delete"  # UpdateReplacePolicy has no ExceptOnCreate
    resources: dict[str, dict] = {}
    for model in ALL_MODELS:
        name = base_name(model)
        properties: dict = {
            "TableName": table_prefix + name,
            "BillingMode": "PAY_PER_REQUEST",
            **table_schema(model),
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
            "SSESpecification": {"SSEEnabled": True, "SSEType": "KMS"},
            "DeletionProtectionEnabled": {"Fn::If": ["TableDeletionProtection", True, False]},
            "Tags": [{"Key": "cronhook:table", "Value": name}],
        }
        ttl = TTL_ATTRIBUTES.get(name)
        if ttl:
            properties["TimeToLiveSpecification"] = {"AttributeName": ttl, "Enabled": True}
        resources[table_logical_id(name)] = {
            "Type": "AWS::DynamoDB::Table",
            "DeletionPolicy": policy,
            "UpdateReplacePolicy": replace,
            "Properties": properties,
        }
    return resources
