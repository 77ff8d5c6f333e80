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
    got = stock[-1][0]
    assert sorted(got["tags"]["SS"]) == ["a", "t3"] and got["history"] == {"L": [{"S": "two"}]}


def test_the_patch_applies_once(patch_later):
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.dynamo_type import Item

    patch_later()
    project, transact = Item.project, DynamoDBBackend.transact_write_items
    patch_later()
    assert Item.project is project and project._cronhook_fast
    assert DynamoDBBackend.transact_write_items is transact


# -- transactions --------------------------------------------------------------------------


def _tx_tables(ddb) -> None:
    ddb.create_table(
        TableName="tx-a",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    ddb.create_table(
        TableName="tx-b",
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    for i in range(5):
        ddb.put_item(
            TableName="tx-a",
            Item={"id": {"S": f"a{i}"}, "v": {"N": str(i)}, "m": {"M": {"x": {"L": [{"N": "1"}]}}}},
        )
        ddb.put_item(
            TableName="tx-b", Item={"pk": {"S": "p"}, "sk": {"S": f"s{i}"}, "v": {"N": "0"}}
        )


def _update(table: str, key: dict, expression: str, **extra) -> dict:
    return {"Update": {"TableName": table, "Key": key, "UpdateExpression": expression, **extra}}


_A1, _B2 = {"id": {"S": "a1"}}, {"pk": {"S": "p"}, "sk": {"S": "s2"}}
_TRANSACTIONS = {
    "written": [
        _update(
            "tx-a",
            _A1,
            "SET v = v + :one, m.x[0] = :one",
            ExpressionAttributeValues={":one": {"N": "1"}},
        ),
        {"Put": {"TableName": "tx-b", "Item": {"pk": {"S": "p"}, "sk": {"S": "new"}}}},
        {"Delete": {"TableName": "tx-b", "Key": _B2}},
        {
            "ConditionCheck": {
                "TableName": "tx-a",
                "Key": {"id": {"S": "a3"}},
                "ConditionExpression": "attribute_exists(id)",
            }
        },
    ],
    "cancelled": [  # the earlier writes are applied, then rolled back
        _update(
            "tx-a",
            _A1,
            "SET v = :nine, m.x[0] = :nine",
            ExpressionAttributeValues={":nine": {"N": "9"}},
        ),
        {"Put": {"TableName": "tx-b", "Item": {"pk": {"S": "p"}, "sk": {"S": "gone"}}}},
        {"Delete": {"TableName": "tx-b", "Key": _B2}},
        {
            "ConditionCheck": {
                "TableName": "tx-a",
                "Key": {"id": {"S": "a4"}},
                "ConditionExpression": "v = :zero",
                "ExpressionAttributeValues": {":zero": {"N": "0"}},
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        },
    ],
    "one item twice": [
        _update("tx-a", _A1, "SET v = :one", ExpressionAttributeValues={":one": {"N": "1"}}),
        {"Delete": {"TableName": "tx-a", "Key": _A1}},
    ],
}


def _contents(ddb) -> dict:
    return {
        name: sorted(ddb.scan(TableName=name)["Items"], key=lambda i: str(sorted(i.items())))
        for name in ("tx-a", "tx-b")
    }


def _transaction_answers() -> dict:
    with mock_aws():
        ddb = boto3.client("dynamodb", region_name="us-east-1")
        _tx_tables(ddb)
        out: dict = {"before": _contents(ddb)}
        for name, items in _TRANSACTIONS.items():
            try:
                ddb.transact_write_items(TransactItems=items)
                out[name] = "written"
            except ddb.exceptions.ClientError as exc:
                out[name] = (exc.response["Error"], exc.response.get("CancellationReasons"))
            out[f"{name}: tables"] = _contents(ddb)
        return out


def test_transactions_write_and_roll_back_as_stock_moto(patch_later):
    stock = _transaction_answers()
    patch_later()
    patched = _transaction_answers()
    for key in stock:
        assert patched[key] == stock[key], key
    # The comparison is of real outcomes: one written, one cancelled (rolled back to what
    # the first left, the failed check's item handed back), one refused.
    assert stock["written"] == "written" and stock["written: tables"] != stock["before"]
    error, reasons = stock["cancelled"]
    assert error["Code"] == "TransactionCanceledException"
    assert reasons[3]["Item"]["id"] == {"S": "a4"}
    assert stock["cancelled: tables"] == stock["written: tables"]
    assert stock["one item twice"][0]["Code"] == "ValidationException"
    assert stock["one item twice: tables"] == stock["written: tables"]


# -- sizes -----------------------------------------------------------------------------------


def _size_answers() -> tuple[list, list]:
    from moto.dynamodb.models.dynamo_type import Item

    values = [
        {"S": "plain"},
        {"S": "ünïcødé ✓"},
        {"N": "12345"},
        {"N": "-1.5e3"},
        {"B": b"\x00\x01\x02"},
        {"BOOL": True},
        {"NULL": True},
        {"SS": ["a", "bb"]},
        {"NS": ["1", "22"]},
        {"L": [{"S": "x"}, {"N": "7"}]},
        {"M": {"k": {"S": "v"}, "n": {"N": "3"}}},
    ]
    sizes = [
        Item({"S": "k"}, None, {"id": {"S": "k"}, f"attr_é{i}": value}).size()
        for i, value in enumerate(values)
    ]
    with mock_aws():
        ddb = boto3.client("dynamodb", region_name="us-east-1")
        _table(ddb)
        for i in range(14):  # 14 x 150 KB in one partition: pages cut at moto's 1 MB
            ddb.put_item(
                TableName=TABLE,
                Item={
                    "id": {"S": f"big_{i:02d}"},
                    "trigger": {"S": "big"},
                    "sk": {"S": f"{i:04d}"},
                    "body": {"S": "é" * 75_000},
                    "n": {"N": str(i * 1000)},
                },
            )
        query = {"IndexName": "all", "KeyConditionExpression": "#t = :t"}
        names = {"ExpressionAttributeNames": {"#t": "trigger"}}
        values_ = {"ExpressionAttributeValues": {":t": {"S": "big"}}}
        pages = _pages(ddb, **query, **names, **values_)
    return sizes, [(p["Count"], p.get("LastEvaluatedKey")) for p in pages]


def test_item_sizes_and_size_cut_pages_are_those_of_stock_moto(patch_later):
    stock = _size_answers()
    patch_later()
    assert _size_answers() == stock
    sizes, pages = stock
    assert sizes[1] == len("id") + 1 + len("attr_é1".encode()) + len("ünïcødé ✓".encode())
    assert len(pages) > 1 and sum(count for count, _ in pages) == 14
