"""The embedded AWS's DynamoDB projections (local/moto_dynamo_speed) answer as stock moto.

The same queries run on the same items twice, stock moto then patched, and every page
must be equal: items, order, ``LastEvaluatedKey``, counts. The patch is undone after
each test, so other tests see stock moto.
"""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from chalicelib.local import moto_dynamo_speed

TABLE = "speed-events"


@pytest.fixture
def patch_later(monkeypatch):
    """A function that applies the patch; whatever it replaced is restored after the test."""
    for owner, name in moto_dynamo_speed.patched_dynamodb_names():
        monkeypatch.setattr(owner, name, owner.__dict__[name])
    return moto_dynamo_speed.make_dynamodb_fast


def _index(name: str, hash_key: str, range_key: str, projection: dict) -> dict:
    return {
        "IndexName": name,
        "KeySchema": [
            {"AttributeName": hash_key, "KeyType": "HASH"},
            {"AttributeName": range_key, "KeyType": "RANGE"},
        ],
        "Projection": projection,
    }


def _table(ddb) -> None:
    ddb.create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[
            {"AttributeName": name, "AttributeType": kind}
            for name, kind in (
                ("id", "S"),
                ("trigger", "S"),
                ("sk", "S"),
                ("shard", "S"),
                ("due", "N"),
            )
        ],
        GlobalSecondaryIndexes=[
            _index("keys", "trigger", "sk", {"ProjectionType": "KEYS_ONLY"}),
            _index("all", "trigger", "sk", {"ProjectionType": "ALL"}),
            _index(
                "due",
                "shard",
                "due",
                {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["sched", "tags"]},
            ),
        ],
        BillingMode="PAY_PER_REQUEST",
    )


def _fill(ddb) -> None:
    for i in range(120):
        item = {
            "id": {"S": f"evt_{i:04d}"},
            "trigger": {"S": f"trg_{i % 3}"},
            "sk": {"S": f"{1000 + (i * 37) % 120:013d}#{i}"},
            "shard": {"S": str(i % 2)},
            "due": {"N": str(5000 + (i * 53) % 97)},  # some rows share a due instant
            "body": {"S": "x" * 200},
            "sched": {"S": '{"every":60}'},
            "tags": {"SS": ["a", f"t{i % 4}"]},
            "in_flight": {"M": {"r1": {"M": {"l": {"N": "12"}, "s": {"N": str(i % 2)}}}}},
            "history": {"L": [{"N": str(i)}, {"S": "two"}, {"M": {"k": {"S": "v"}}}]},
        }
        if i % 5:
            ddb.put_item(TableName=TABLE, Item=item)
        else:  # not in the sparse due index
            ddb.put_item(TableName=TABLE, Item={k: v for k, v in item.items() if k != "due"})


def _pages(ddb, **query) -> list[dict]:
    """Every page of a query, following LastEvaluatedKey."""
    pages, start = [], None
    while True:
        answer = ddb.query(
            TableName=TABLE, **query, **({"ExclusiveStartKey": start} if start else {})
        )
        answer.pop("ResponseMetadata")
        pages.append(answer)
        start = answer.get("LastEvaluatedKey")
        if not start or len(pages) > 50:
            return pages


_QUERIES = [
    # The events' pending index: a trigger's queue, a page, a count, newest first.
    {"IndexName": "keys", "KeyConditionExpression": "#t = :t", "Limit": 7},
    {"IndexName": "keys", "KeyConditionExpression": "#t = :t AND sk <= :sk", "Limit": 5},
    {
        "IndexName": "keys",
        "KeyConditionExpression": "#t = :t",
        "ScanIndexForward": False,
        "Limit": 9,
    },
    {"IndexName": "keys", "KeyConditionExpression": "#t = :t", "Select": "COUNT", "Limit": 30},
    # The due index: INCLUDE, a range, ties on the index's sort key, small pages.
    {"IndexName": "due", "KeyConditionExpression": "shard = :s AND due <= :d", "Limit": 4},
    {"IndexName": "due", "KeyConditionExpression": "shard = :s AND due BETWEEN :a AND :d"},
    {
        "IndexName": "due",
        "KeyConditionExpression": "shard = :s",
        "FilterExpression": "contains(tags, :tag)",
        "Limit": 6,
    },
    # A ProjectionExpression: nested map keys, list elements, a missing attribute.
    {
        "IndexName": "all",
        "KeyConditionExpression": "#t = :t",
        "ProjectionExpression": "id, in_flight.r1.s, history[2].k, history[0], nothing, #t",
        "Limit": 8,
    },
]


def _values(query: dict) -> dict:
    text = " ".join(str(v) for v in query.values())
    values = {
        ":t": {"S": "trg_1"},
        ":sk": {"S": f"{1060:013d}"},
        ":s": {"S": "1"},
        ":d": {"N": "5050"},
    }
    values |= {":a": {"N": "5010"}, ":tag": {"S": "t2"}}
    out = {"ExpressionAttributeValues": {k: v for k, v in values.items() if k in text}}
    if "#t" in text:
        out["ExpressionAttributeNames"] = {"#t": "trigger"}
    return out


def _answers() -> list[list[dict]]:
    with mock_aws():
        ddb = boto3.client("dynamodb", region_name="us-east-1")
        _table(ddb)
        _fill(ddb)
        answers = [_pages(ddb, **query, **_values(query)) for query in _QUERIES]
        # A get with a projection, and the item itself unchanged by all the projecting.
        got = ddb.get_item(
            TableName=TABLE, Key={"id": {"S": "evt_0007"}}, ProjectionExpression="tags, history[1]"
        )
        whole = ddb.get_item(TableName=TABLE, Key={"id": {"S": "evt_0007"}})
        return [*answers, [got["Item"], whole["Item"]]]


def test_index_queries_and_projections_answer_as_stock_moto(patch_later):
    stock = _answers()
    patch_later()
    patched = _answers()
    for query, before, after in zip([*_QUERIES, "get_item"], stock, patched, strict=True):
        assert after == before, query
    # The queries did page and project (the comparison is not of empty answers).
    assert len(stock[0]) > 3 and all(
        set(i) == {"id", "trigger", "sk"} for p in stock[0] for i in p["Items"]
    )
    assert len(stock[4]) > 2 and set(stock[4][0]["Items"][0]) == {
        "id",
        "shard",
        "due",
        "sched",
        "tags",
    }
    assert stock[7][0]["Items"][0]["in_flight"] == {"M": {"r1": {"M": {"s": {"N": "1"}}}}}
    assert stock[-1][0] == {"tags": {"SS": ["a", "t3"]}, "history": {"L": [{"S": "two"}]}}


def test_the_patch_applies_once(patch_later):
    from moto.dynamodb.models.dynamo_type import Item

    patch_later()
    project = Item.project
    patch_later()
    assert Item.project is project and project._cronhook_fast
