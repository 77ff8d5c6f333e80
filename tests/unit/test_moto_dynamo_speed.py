"""The embedded AWS's DynamoDB projections (local/moto_dynamo_speed) answer as stock moto.

The same queries run on the same items twice, stock moto then patched, and every page
must be equal: items, order, ``LastEvaluatedKey``, counts. The patch is undone after
each test, so other tests see stock moto.
"""

from __future__ import annotations

import itertools

import boto3
import pytest
from moto import mock_aws

from devstack import moto_dynamo_speed

TABLE = "speed-events"


@pytest.fixture
def patch_later(monkeypatch, request):
    """A function that applies the patch; whatever it replaced is restored after the test
    (and what it added, ``Item.__new__``, removed)."""
    for owner, name in moto_dynamo_speed.patched_dynamodb_names():
        if name in owner.__dict__:
            monkeypatch.setattr(owner, name, owner.__dict__[name])
        else:
            request.addfinalizer(lambda o=owner, n=name: n in o.__dict__ and delattr(o, n))
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
            "in_flight": {
                "M": {"r1": {"M": {"l": {"N": "12"}, "s": {"N": str(i % 2)}}}, "z": {"NULL": True}}
            },
            "gone": {"NULL": True},
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
    # Top-level names only: a null, a map (moto then drops null entries), a set, numbers.
    {
        "IndexName": "all",
        "KeyConditionExpression": "#t = :t",
        "ProjectionExpression": "gone, in_flight, tags, due, history, id",
        "Limit": 8,
    },
    {
        "IndexName": "all",
        "KeyConditionExpression": "#t = :t",
        "ProjectionExpression": "gone, tags, due, history, id",
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


# -- queries ---------------------------------------------------------------------------------
#
# moto's Table.query (local/moto_query_speed): the same pages, in the same order, with the
# same counts and LastEvaluatedKey, on the table and on KEYS_ONLY, INCLUDE and ALL global
# indexes, sparse ones included, for every key condition, direction, Limit, filter and
# projection our store uses, paged through to the end.

Q_HASH, Q_RANGE = "speed-queue", "speed-runs"


def _q_tables(ddb) -> None:
    attribute = lambda name, kind: {"AttributeName": name, "AttributeType": kind}  # noqa: E731
    ddb.create_table(
        TableName=Q_HASH,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[
            attribute("id", "S"), attribute("trigger", "S"), attribute("sk", "S"),
            attribute("shard", "S"), attribute("due", "N"), attribute("tenant", "S"),
        ],
        GlobalSecondaryIndexes=[
            _index("keys", "trigger", "sk", {"ProjectionType": "KEYS_ONLY"}),
            _index("all", "trigger", "sk", {"ProjectionType": "ALL"}),
            _index("due", "shard", "due", {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["sched"]}),
            {
                "IndexName": "tenant",
                "KeySchema": [{"AttributeName": "tenant", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            },
        ],
        BillingMode="PAY_PER_REQUEST",
    )  # fmt: skip
    ddb.create_table(
        TableName=Q_RANGE,
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "rk", "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            attribute("pk", "S"), attribute("rk", "N"), attribute("owner", "S"), attribute("at", "S"),
        ],
        GlobalSecondaryIndexes=[
            _index("owner", "owner", "at", {"ProjectionType": "ALL"}),
            {
                "IndexName": "owner_only",
                "KeySchema": [{"AttributeName": "owner", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["v"]},
            },
        ],
        BillingMode="PAY_PER_REQUEST",
    )  # fmt: skip


def _q_fill(ddb) -> None:
    for i in range(60):
        item = {
            "id": {"S": f"evt_{(i * 7919) % 60:03d}"},  # not written in key order
            "trigger": {"S": f"trg_{i % 4}"},
            "sk": {"S": f"{100 + (i * 37) % 40:04d}#{i % 3}"},
            "shard": {"S": str(i % 2)},
            "due": {"N": ["5000", "5010", "5010.0", "5020", "4990", "5.03e3"][i % 6]},  # ties
            "tenant": {"S": f"t{i % 3}"},
            "sched": {"S": '{"every":60}'},
            "n": {"N": str(i)},
            "body": {"S": "x" * (i % 5) * 20},
        }
        if i % 5 == 0:
            del item["sk"]  # in neither trigger index (sparse)
        if i % 7 == 0:
            del item["shard"]  # not in the due index
        ddb.put_item(TableName=Q_HASH, Item=item)
    for i in range(60):
        item = {
            "pk": {"S": f"p{i % 3}"},
            "rk": {"N": str((i * 13) % 60 - 20)},
            "owner": {"S": f"o{i % 2}"},
            "at": {"S": f"2026-12-0{1 + i % 5}T{i % 24:02d}"},
            "v": {"N": str(i)},
        }
        if i % 4 == 0:
            del item["at"]
        ddb.put_item(TableName=Q_RANGE, Item=item)


# (table, index or None, hash attribute, its values, range attribute, :a and :b, a prefix)
_Q_SHAPES = [
    (
        Q_HASH,
        "keys",
        "trigger",
        ["trg_1", "trg_9"],
        "sk",
        [("S", "0113#0"), ("S", "0129#2")],
        "011",
    ),
    (Q_HASH, "all", "trigger", ["trg_3"], "sk", [("S", "0107#2"), ("S", "0131#0")], "012"),
    (Q_HASH, "due", "shard", ["1"], "due", [("N", "5010"), ("N", "5030")], None),
    (Q_HASH, "tenant", "tenant", ["t2"], None, [], None),
    (Q_HASH, None, "id", ["evt_007", "evt_999"], None, [], None),
    (Q_RANGE, None, "pk", ["p2", "p7"], "rk", [("N", "-5"), ("N", "21")], None),
    (
        Q_RANGE,
        "owner",
        "owner",
        ["o0"],
        "at",
        [("S", "2026-12-02T06"), ("S", "2026-12-04T2")],
        "2026-12-03",
    ),
    (Q_RANGE, "owner_only", "owner", ["o1"], None, [], None),
]
_Q_CONDITIONS = ["", "= :a", "< :a", "<= :a", "> :a", ">= :a", "BETWEEN :a AND :b",
                 "BETWEEN :b AND :a", "begins_with"]  # fmt: skip


def _q_key(hash_attr: str, range_attr: str | None, condition: str) -> str | None:
    if not condition:
        return "#h = :h"
    if range_attr is None:
        return None
    if condition == "begins_with":
        return "#h = :h AND begins_with(#r, :a)"
    return f"#h = :h AND #r {condition}"


def _q_cases() -> list[dict]:
    """Every shape, hash value, condition and direction, with a Limit, a filter or a
    projection taking turns (and one Select COUNT), as boto3 query arguments."""
    cases, turn = [], 0
    for table, index, hash_attr, hashes, range_attr, bounds, prefix in _Q_SHAPES:
        for hash_value, condition, forward in itertools.product(
            hashes, _Q_CONDITIONS, (True, False)
        ):
            key = _q_key(hash_attr, range_attr, condition)
            if key is None or (condition == "begins_with" and prefix is None):
                continue
            turn += 1
            names = {"#h": hash_attr, **({"#r": range_attr} if ":a" in key else {})}
            values = {":h": {"S": hash_value}}
            if ":a" in key:
                values |= {":a": dict([bounds[0]]), ":b": dict([bounds[1]])}
                if condition == "begins_with":
                    values[":a"] = {"S": prefix}
                values = {k: v for k, v in values.items() if k in key or k == ":h"}
            case = {"TableName": table, "KeyConditionExpression": key, "ScanIndexForward": forward}
            case |= {"Limit": [2, 5, 1000][turn % 3]}
            if index:
                case["IndexName"] = index
            if turn % 4 == 0 and index != "keys" and index != "tenant":
                case["FilterExpression"] = "attribute_exists(#f) AND #f >= :f"
                names["#f"] = "v" if table == Q_RANGE else "n"
                values[":f"] = {"N": "20"}
            if turn % 5 == 1:
                case["ProjectionExpression"] = f"#h, {'v' if table == Q_RANGE else 'n, body'}"
            if turn % 11 == 0:
                case["Select"] = "COUNT"
                case.pop("ProjectionExpression", None)
            case["ExpressionAttributeNames"] = names
            case["ExpressionAttributeValues"] = values
            cases.append(case)
    return cases


def _q_pages(ddb, case: dict) -> list[dict]:
    pages, start = [], None
    while True:
        answer = ddb.query(**case, **({"ExclusiveStartKey": start} if start else {}))
        answer.pop("ResponseMetadata")
        pages.append(answer)
        start = answer.get("LastEvaluatedKey")
        if not start or len(pages) > 100:
            return pages


def _q_change(ddb) -> None:
    """Writes between reads: items leave and join the sparse indexes, move in them, go."""
    for i in range(0, 60, 4):
        key = {"id": {"S": f"evt_{i:03d}"}}
        if i % 8 == 0:
            ddb.update_item(
                TableName=Q_HASH,
                Key=key,
                UpdateExpression="REMOVE sk, #s",
                ExpressionAttributeNames={"#s": "shard"},
            )
        else:
            ddb.update_item(
                TableName=Q_HASH,
                Key=key,
                UpdateExpression="SET sk = :sk, #t = :t, #s = :s",
                ExpressionAttributeNames={"#t": "trigger", "#s": "shard"},
                ExpressionAttributeValues={":sk": {"S": f"0120#{i}"}, ":t": {"S": "trg_2"}, ":s": {"S": "1"}},
            )  # fmt: skip
    for i in range(1, 60, 9):
        ddb.delete_item(TableName=Q_HASH, Key={"id": {"S": f"evt_{i:03d}"}})
    ddb.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": Q_HASH, "Item": {"id": {"S": "evt_new"}, "trigger": {"S": "trg_1"}, "sk": {"S": "0000"}}}},
            {"Delete": {"TableName": Q_RANGE, "Key": {"pk": {"S": "p0"}, "rk": {"N": "19"}}}},
        ]
    )  # fmt: skip


def _q_answers() -> dict:
    with mock_aws():
        ddb = boto3.client("dynamodb", region_name="us-east-1")
        _q_tables(ddb)
        _q_fill(ddb)
        cases = _q_cases()
        out: dict = {"before": [_q_pages(ddb, case) for case in cases]}
        _q_change(ddb)
        out["after writes"] = [_q_pages(ddb, case) for case in cases[::2]]
        # A start key from another partition, and one past the end of this one.
        case = {"TableName": Q_HASH, "IndexName": "keys", "KeyConditionExpression": "#t = :t"}
        case |= {"ExpressionAttributeNames": {"#t": "trigger"}, "Limit": 4}
        case |= {"ExpressionAttributeValues": {":t": {"S": "trg_1"}}}
        for trigger, sk in (("trg_0", "0120"), ("trg_2", "0001"), ("trg_1", "9999")):
            start = {"id": {"S": "evt_x"}, "trigger": {"S": trigger}, "sk": {"S": sk}}
            for forward in (True, False):
                answer = ddb.query(**case, ScanIndexForward=forward, ExclusiveStartKey=start)
                answer.pop("ResponseMetadata")
                out[f"start {trigger} {sk} {forward}"] = answer
        return out


@pytest.fixture
def fast_answers(monkeypatch):
    """How many queries the patch answered itself (not handed to moto's code)."""
    from devstack import moto_query_speed

    counted = {"fast": 0, "moto": 0}
    fast_query = moto_query_speed._fast_query

    def counting(*args):
        answer = fast_query(*args)
        counted["fast" if answer is not None else "moto"] += 1
        return answer

    monkeypatch.setattr(moto_query_speed, "_fast_query", counting)
    return counted


def test_queries_page_as_stock_moto(patch_later, fast_answers):
    stock = _q_answers()
    patch_later()
    patched = _q_answers()
    assert patched.keys() == stock.keys()
    cases = _q_cases()
    for key in stock:
        if isinstance(stock[key], list):
            asked = cases if key == "before" else cases[::2]
            for case, before, after in zip(asked, stock[key], patched[key], strict=True):
                assert after == before, (key, case)
        else:
            assert patched[key] == stock[key], key
    # The patch answered every one (moto's code none), and they paged, filtered and cut.
    pages = [
        page
        for answers in stock.values()
        if isinstance(answers, list)
        for a in answers
        for page in a
    ]
    assert fast_answers == {"fast": len(pages) + 6, "moto": 0}
    assert sum(1 for p in pages if "LastEvaluatedKey" in p) > 150
    assert sum(1 for p in pages if p["Count"] < p["ScannedCount"]) > 15
    assert sum(1 for p in pages if p["Count"] == 0 and "LastEvaluatedKey" in p) > 0


def _q_size_answers() -> list:
    """Pages cut at 1 MB by the items around a range condition: moto sizes every item it
    passes, those the condition drops included."""
    with mock_aws():
        ddb = boto3.client("dynamodb", region_name="us-east-1")
        _q_tables(ddb)
        # KB: six of 150, then 50 and 200 in turn: a page of the first six is cut by the
        # second item after them, not the first.
        for i, kb in enumerate([150] * 6 + [50, 200] * 4):
            item = {"id": {"S": f"big_{i:02d}"}, "trigger": {"S": "big"}, "sk": {"S": f"{i:04d}"}}
            ddb.put_item(TableName=Q_HASH, Item=item | {"body": {"S": "é" * kb * 500}})
        out = []
        for index, condition, values, forward in [
            ("all", "sk <= :a", {":a": "0005"}, True),
            ("keys", "sk <= :a", {":a": "0006"}, True),
            ("keys", "sk BETWEEN :a AND :b", {":a": "0003", ":b": "0010"}, False),
            ("all", "sk > :a", {":a": "0002"}, False),
            ("keys", "begins_with(sk, :a)", {":a": "000"}, True),
        ]:
            case = {"TableName": Q_HASH, "IndexName": index, "ScanIndexForward": forward}
            case |= {"KeyConditionExpression": f"#t = :t AND {condition}"}
            case |= {"ExpressionAttributeNames": {"#t": "trigger"}}
            typed = {k: {"S": v} for k, v in (values | {":t": "big"}).items()}
            for limit in ({}, {"Limit": 5}):
                pages = _q_pages(ddb, case | limit | {"ExpressionAttributeValues": typed})
                out.append(
                    [
                        (p["Count"], [i["id"] for i in p["Items"]], p.get("LastEvaluatedKey"))
                        for p in pages
                    ]
                )
        return out


def test_size_cut_pages_around_range_conditions_as_stock_moto(patch_later, fast_answers):
    stock = _q_size_answers()
    patch_later()
    assert _q_size_answers() == stock
    assert fast_answers["moto"] == 0 and fast_answers["fast"] == sum(len(a) for a in stock)
    # The cut happened where it is easy to miss: the six items of ``sk <= 0005`` make a
    # page that ends with a key, as the second item after them would pass 1 MB.
    (count, _, last), (after, _, end) = stock[0]
    assert (count, after, end) == (6, 0, None) and last is not None


def _tracked_after_queries() -> int:
    from moto.dynamodb.models.dynamo_type import Item

    with mock_aws():
        ddb = boto3.client("dynamodb", region_name="us-east-1")
        _q_tables(ddb)
        _q_fill(ddb)
        before = len(Item.instances_tracked)
        for case in _q_cases()[:20]:
            _q_pages(ddb, case)
        return len(Item.instances_tracked) - before


def test_items_are_not_kept_for_moto_dashboard(patch_later):
    from moto.dynamodb.models.dynamo_type import Item

    assert _tracked_after_queries() > 100  # stock moto keeps every copy a query makes
    patch_later()
    assert _tracked_after_queries() == 0
    item = Item({"S": "k"}, None, {"id": {"S": "k"}, "n": {"N": "1"}})
    assert item.attrs["n"].value == "1" and item.size() == len("id") + 1 + len("n") + 1


def _projections_of_a_grown_item() -> list:
    """An item grown past moto's 405,000 bytes in a nested map (moto checks only
    top-level writes), projected whole and in part: refused, or not, as by stock moto."""
    from moto.dynamodb.exceptions import ItemSizeTooLarge
    from moto.dynamodb.models.dynamo_type import DynamoType, Item

    item = Item(DynamoType({"S": "k"}), None, {"id": {"S": "k"}, "a": {"S": "x" * 300_000}})
    item.attrs["m"] = DynamoType({"M": {}})
    item.attrs["m"].value["z"] = DynamoType({"S": "y" * 200_000})
    out = []
    for paths in ([["id"], ["a"], ["m"]], [["id"], ["m"]], [["m", "z"], ["a"]], [["id"]]):
        try:
            out.append(sorted(item.project(paths).attrs))
        except ItemSizeTooLarge as exc:
            out.append(type(exc).__name__)
    return out


def test_a_projection_over_moto_item_limit_is_refused_as_stock(patch_later):
    stock = _projections_of_a_grown_item()
    patch_later()
    assert _projections_of_a_grown_item() == stock
    assert stock == ["ItemSizeTooLarge", ["id", "m"], "ItemSizeTooLarge", ["id"]]
