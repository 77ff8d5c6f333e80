"""The embedded AWS's write-path patches (local/moto_write_speed) answer as stock moto.

Each scenario runs twice, stock moto then patched, and every answer must be equal: the
raw response bodies as well as what boto3 makes of them, errors included (code, message,
the item a failed condition returns). The patch is undone after each test, so other
tests see stock moto.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from devstack import moto_write_speed

TABLE = "write-triggers"
RUNS = "write-runs"


@pytest.fixture
def patch_later(monkeypatch):
    """A function that applies the patch; whatever it replaced is restored after the test."""
    for owner, name in moto_write_speed.patched_write_names():
        monkeypatch.setattr(owner, name, owner.__dict__[name])
    return moto_write_speed.make_writes_fast


# -- DynamoDB ------------------------------------------------------------------------


def _tables(ddb) -> None:
    ddb.create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[
            {"AttributeName": "id", "AttributeType": "S"},
            {"AttributeName": "due_shard", "AttributeType": "S"},
            {"AttributeName": "due_at", "AttributeType": "N"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "due",
                "KeySchema": [
                    {"AttributeName": "due_shard", "KeyType": "HASH"},
                    {"AttributeName": "due_at", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["sched"]},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    ddb.create_table(
        TableName=RUNS,
        KeySchema=[
            {"AttributeName": "trigger_id", "KeyType": "HASH"},
            {"AttributeName": "run_id", "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": "trigger_id", "AttributeType": "S"},
            {"AttributeName": "run_id", "AttributeType": "S"},
            {"AttributeName": "tenant", "AttributeType": "S"},
            {"AttributeName": "sort_key", "AttributeType": "S"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by_tenant",
                "KeySchema": [
                    {"AttributeName": "tenant", "KeyType": "HASH"},
                    {"AttributeName": "sort_key", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
    )


def _trigger(i: int) -> dict:
    """A trigger-like item with every attribute type, nested maps and lists included."""
    return {
        "id": {"S": f"trg_{i:03d}"},
        "tenant": {"S": f"ten_{i % 2}"},
        "sched": {"S": '{"cron":"* * * * *"}'},
        "status": {"S": "active"},
        "due_shard": {"S": str(i % 2)},
        "due_at": {"N": str(1000 + i)},
        "next_fire_at": {"N": str(1000 + i)},
        "in_flight": {"M": {}},
        "run_count": {"N": "0"},
        "ratio": {"N": "1.50"},
        "big": {"N": "1e3"},
        "note": {"S": 'ünïcode ✓ and "quotes"'},
        "empty": {"S": ""},
        "blob": {"B": bytes(range(7)) + b"\xff"},
        "blobs": {"BS": [b"\x00", b"abc"]},
        "tags": {"SS": ["a", "b"]},
        "nums": {"NS": ["1", "2.5"]},
        "gone": {"NULL": True},
        "flag": {"BOOL": False},
        "last_run": {
            "M": {
                "id": {"S": "r0"},
                "ms": {"N": "12"},
                "history": {
                    "L": [
                        {"N": "1"},
                        {"S": "two"},
                        {"M": {"k": {"BOOL": True}, "deep": {"L": [{"NULL": True}]}}},
                        {"B": b"\x01\x02"},
                        {"L": []},
                        {"M": {}},
                    ]
                },
            }
        },
    }


class _Recorder:
    """Every answer's raw body, as the client received it."""

    def __init__(self, client) -> None:
        self.bodies: list[bytes] = []
        client.meta.events.register("after-call.*.*", self._record)

    def _record(self, http_response, **_: Any) -> None:
        self.bodies.append(http_response.content)


def _answer(call, **kwargs) -> dict:
    """boto3's answer, or the error's code, message and the rest of its body (or what
    moto raised)."""
    try:
        answer = call(**kwargs)
    except ClientError as exc:
        error = copy.deepcopy(exc.response)
        error.pop("ResponseMetadata", None)
        return {"error": error}
    except Exception as exc:  # moto in-process: an expression it cannot parse raises as is
        return {"raised": repr(exc)}
    answer.pop("ResponseMetadata", None)
    return answer


_CLAIM = {
    "UpdateExpression": "SET #f.#r = :e, #n = :next, #d = :next, #s = :shard",
    "ConditionExpression": (
        "#n = :slot AND #st = :active AND size(#f) < :cap AND attribute_not_exists(#f.#r)"
    ),
}


def _claim(ddb, trigger: str, run: str, slot: int, **extra) -> dict:
    return _answer(
        ddb.update_item,
        TableName=TABLE,
        Key={"id": {"S": trigger}},
        ExpressionAttributeNames={
            "#f": "in_flight",
            "#r": run,
            "#n": "next_fire_at",
            "#d": "due_at",
            "#s": "due_shard",
            "#st": "status",
        },
        ExpressionAttributeValues={
            ":e": {"M": {"l": {"N": str(slot + 360)}, "s": {"N": "1"}, "o": {"S": "tok"}}},
            ":next": {"N": str(slot + 60)},
            ":shard": {"S": "1"},
            ":slot": {"N": str(slot)},
            ":active": {"S": "active"},
            ":cap": {"N": "3"},
        },
        ReturnValues="ALL_NEW",
        **_CLAIM,
        **extra,
    )


def _settle(ddb, trigger: str, run: str, return_values: str) -> dict:
    return _answer(
        ddb.update_item,
        TableName=TABLE,
        Key={"id": {"S": trigger}},
        UpdateExpression="REMOVE #f.#r SET #l = :last, #c = #c + :one ADD tags :tag",
        ConditionExpression="attribute_exists(#f.#r)",
        ExpressionAttributeNames={
            "#f": "in_flight",
            "#r": run,
            "#l": "last_run",
            "#c": "run_count",
        },
        ExpressionAttributeValues={
            ":last": {"M": {"id": {"S": run}, "bin": {"B": b"\x00run"}}},
            ":one": {"N": "1"},
            ":tag": {"SS": [run]},
        },
        ReturnValues=return_values,
    )


_CONDITIONS = [
    "#s = :a AND run_count BETWEEN :lo AND :hi AND NOT attribute_exists(nope)",
    "(#s IN (:a, :lo) OR contains(#t, :a)) AND begins_with(#s, :a) AND size(#t) > :one",
    "attribute_type(#s, :s) OR run_count <> :one AND (run_count >= :lo)",
    "last_run.history[2].k = :one OR #s = :a",
    "#s = = :a",
    "#s = :missing",
    "#unknown = :a",
    "run_count < :lo ((",
]


_NAMES = {"#s": "status", "#t": "tags"}
_VALUES_USED = {":a": {"S": "active"}, ":lo": {"N": "0"}, ":hi": {"N": "5"}, ":s": {"S": "S"}}


def _used(placeholders: dict, text: str) -> dict:
    return {k: v for k, v in placeholders.items() if k in text}


def _dynamo_scenario() -> list:
    with mock_aws():
        ddb = boto3.client("dynamodb", region_name="us-east-1")
        _tables(ddb)
        recorder = _Recorder(ddb)
        seen: list = []
        for i in range(6):
            seen.append(_answer(ddb.put_item, TableName=TABLE, Item=_trigger(i)))
        # Claims: the same expression text each time (its parse is kept), other values.
        seen.append(_claim(ddb, "trg_000", "run_a", 1000))
        seen.append(_claim(ddb, "trg_000", "run_b", 1060))
        seen.append(_claim(ddb, "trg_001", "run_c", 1001))
        # Lost claims: the slot moved on; the run exists; with and without the old item.
        seen.append(_claim(ddb, "trg_000", "run_d", 1000))
        seen.append(_claim(ddb, "trg_000", "run_a", 1120))
        seen.append(
            _claim(ddb, "trg_000", "run_e", 1000, ReturnValuesOnConditionCheckFailure="ALL_OLD")
        )
        seen.append(_claim(ddb, "trg_missing", "run_f", 5))
        # Settles, each ReturnValues; then one that is fenced out.
        for run, values in (("run_a", "ALL_NEW"), ("run_b", "UPDATED_NEW"), ("run_c", "ALL_OLD")):
            trigger = "trg_001" if run == "run_c" else "trg_000"
            seen.append(_settle(ddb, trigger, run, values))
        seen.append(_settle(ddb, "trg_002", "run_x", "UPDATED_OLD"))
        seen.append(_settle(ddb, "trg_002", "run_x", "NONE"))
        # An update that makes its item (the tree is validated twice), and bad expressions,
        # twice each (a failed parse is not kept).
        for _ in range(2):
            seen.append(
                _answer(
                    ddb.update_item,
                    TableName=TABLE,
                    Key={"id": {"S": "trg_new"}},
                    UpdateExpression="SET #f = :m, due_shard = :s, due_at = :d",
                    ExpressionAttributeNames={"#f": "in_flight"},
                    ExpressionAttributeValues={
                        ":m": {"M": {"r": {"N": "1"}}},
                        ":s": {"S": "1"},
                        ":d": {"N": "7"},
                    },
                    ReturnValues="ALL_NEW",
                )
            )
        for text in ("SET", "SET #a = :v,", "SET a = :v REMOVE a", "SET a = :v, a = :v"):
            for _ in range(2):
                seen.append(
                    _answer(
                        ddb.update_item,
                        TableName=TABLE,
                        Key={"id": {"S": "trg_003"}},
                        UpdateExpression=text,
                        ExpressionAttributeNames={"#a": "x"} if "#a" in text else {},
                        ExpressionAttributeValues={":v": {"N": "1"}},
                        ReturnValues="ALL_NEW",
                    )
                )
        # Conditions of every kind, each twice (its tokens are kept), bad ones included.
        for condition in _CONDITIONS:
            for _ in range(2):
                seen.append(
                    _answer(
                        ddb.update_item,
                        TableName=TABLE,
                        Key={"id": {"S": "trg_003"}},
                        UpdateExpression="SET run_count = run_count + :one",
                        ConditionExpression=condition,
                        ExpressionAttributeNames=_used(_NAMES, condition),
                        ExpressionAttributeValues={
                            ":one": {"N": "1"},
                            **_used(_VALUES_USED, condition),
                        },
                        ReturnValues="UPDATED_NEW",
                    )
                )
        # Run records (a GSI with everything projected), put over, old item back.
        for i in range(4):
            run = {
                "trigger_id": {"S": f"trg_{i % 2:03d}"},
                "run_id": {"S": f"r{i}"},
                "tenant": {"S": "ten_0"},
                "sort_key": {"S": f"{2000 - i}#r{i}"},
                "status": {"S": "ok"},
                "output": {"S": json.dumps({"echo": "z" * 20})},
                "cost": {"N": "0"},
            }
            seen.append(
                _answer(
                    ddb.put_item,
                    TableName=RUNS,
                    Item=run,
                    ConditionExpression="attribute_not_exists(run_id)",
                )
            )
        seen.append(
            _answer(
                ddb.put_item,
                TableName=RUNS,
                Item={
                    "trigger_id": {"S": "trg_000"},
                    "run_id": {"S": "r0"},
                    "tenant": {"S": "ten_1"},
                    "sort_key": {"S": "9#r0"},
                },
                ConditionExpression="attribute_not_exists(run_id)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        )
        seen.append(
            _answer(
                ddb.put_item,
                TableName=RUNS,
                Item={
                    "trigger_id": {"S": "trg_000"},
                    "run_id": {"S": "r0"},
                    "tenant": {"S": "ten_1"},
                    "sort_key": {"S": "9#r0"},
                },
                ReturnValues="ALL_OLD",
            )
        )
        # Reads: items, both indexes (what the writes left in them), batches, transactions.
        seen.append(_answer(ddb.get_item, TableName=TABLE, Key={"id": {"S": "trg_000"}}))
        seen.append(_answer(ddb.get_item, TableName=TABLE, Key={"id": {"S": "trg_nope"}}))
        for shard in ("0", "1"):
            seen.append(
                _answer(
                    ddb.query,
                    TableName=TABLE,
                    IndexName="due",
                    KeyConditionExpression="due_shard = :s",
                    ExpressionAttributeValues={":s": {"S": shard}},
                )
            )
        for tenant in ("ten_0", "ten_1"):
            seen.append(
                _answer(
                    ddb.query,
                    TableName=RUNS,
                    IndexName="by_tenant",
                    KeyConditionExpression="tenant = :t",
                    ExpressionAttributeValues={":t": {"S": tenant}},
                    ScanIndexForward=False,
                )
            )
        seen.append(_answer(ddb.scan, TableName=TABLE))
        seen.append(
            _answer(
                ddb.batch_get_item,
                RequestItems={TABLE: {"Keys": [{"id": {"S": f"trg_{i:03d}"}} for i in range(4)]}},
            )
        )
        seen.append(
            _answer(
                ddb.transact_get_items,
                TransactItems=[{"Get": {"TableName": TABLE, "Key": {"id": {"S": "trg_004"}}}}],
            )
        )
        seen.append(
            _answer(
                ddb.transact_write_items,
                TransactItems=[
                    {
                        "Update": {
                            "TableName": TABLE,
                            "Key": {"id": {"S": "trg_005"}},
                            "UpdateExpression": "SET run_count = run_count + :one",
                            "ConditionExpression": "run_count = :nine",
                            "ExpressionAttributeValues": {":one": {"N": "1"}, ":nine": {"N": "9"}},
                            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                        }
                    }
                ],
            )
        )
        seen.append(
            _answer(
                ddb.delete_item,
                TableName=TABLE,
                Key={"id": {"S": "trg_004"}},
                ReturnValues="ALL_OLD",
            )
        )
        return [seen, recorder.bodies]


def test_dynamodb_answers_are_those_of_stock_moto(patch_later):
    stock = _dynamo_scenario()
    patch_later()
    patched = _dynamo_scenario()
    assert patched[0] == stock[0]
    assert patched[1] == stock[1]  # byte for byte
    answers = stock[0]
    # The scenario does what it says: claims won and lost, the old item on a failure.
    claimed = answers[6]["Attributes"]["in_flight"]["M"]
    assert set(claimed) == {"run_a"}
    lost = answers[9]["error"]["Error"]
    assert lost["Code"] == "ConditionalCheckFailedException"
    assert "Item" not in answers[9]["error"]
    assert answers[11]["error"]["Item"]["in_flight"]["M"].keys() == {"run_a", "run_b"}
    assert answers[13]["Attributes"]["last_run"]["M"]["bin"] == {"B": b"\x00run"}
    assert "CancellationReasons" in answers[-2]["error"]


def _serializer() -> Any:
    from moto.core.responses import get_service_model
    from moto.core.serialize import JSONSerializer, XFormedAttributePicker

    operation = get_service_model("dynamodb").operation_model("GetItem")
    return JSONSerializer(operation, value_picker=XFormedAttributePicker())


class _Text(str):
    pass


# Values the fast path writes, and odd ones it leaves to moto (each must come out the same).
_VALUES: list[Any] = [
    {"S": "x"},
    {"S": ""},
    {"N": "-1.5E+3"},
    {"B": b"\x00\xff"},
    {"B": "already text"},
    {"B": b""},
    {"SS": []},
    {"NS": ["1", "2"]},
    {"BS": [b"a", "b", b""]},
    {"NULL": True},
    {"BOOL": False},
    {"M": {}},
    {"L": []},
    {"M": {"a": {"L": [{"M": {"b": {"SS": ["c"]}}}, {"NULL": True}]}, "": {"S": "empty key"}}},
    {"S": None},
    {"S": 5},
    {"S": _Text("sub")},
    {"N": 1.5},
    {"S": "a", "N": "1"},
    {"s": "lower"},
    {"StringSetAttributeValue": ["a"]},
    {"ListAttributeValue": [{"S": "x"}]},
    {"M": {"a": None, "b": {"S": "kept"}}},
    {"L": [None, {"S": "x"}, "raw"]},
    {"L": ({"S": "tuple"},)},
    {"SS": ["a", None]},
    {"SS": ["a", 1]},
    {"BS": [b"a", None]},
    {"NULL": 1},
    {"BOOL": 0},
    {"M": []},
    {},
    None,
    "not a dict",
]


def _serialized(value: Any, **picker: Any) -> Any:
    from moto.core.serialize import XFormedAttributePicker

    serializer = _serializer()
    if picker:
        serializer._value_picker = XFormedAttributePicker(**picker)
    try:
        return serializer.serialize({"Item": {"attr": value, "other": {"S": "y"}}})["body"]
    except Exception as exc:  # moto's own failure must stay the same too
        return repr(exc)


def _upper(value: Any) -> Any:
    return value.upper() if isinstance(value, str) else value


def test_attribute_values_serialise_as_stock_moto_does(patch_later):
    stock = [_serialized(copy.deepcopy(v)) for v in _VALUES]
    transformed = [
        _serialized(copy.deepcopy(v), response_transformers={"S": _upper}) for v in _VALUES
    ]
    assert transformed[0] != stock[0]  # the transformer is applied (by moto, not the patch)
    patch_later()
    assert [_serialized(copy.deepcopy(v)) for v in _VALUES] == stock
    assert [
        _serialized(copy.deepcopy(v), response_transformers={"S": _upper}) for v in _VALUES
    ] == transformed


def test_only_the_expected_attribute_value_shape_is_taken_directly():
    from moto.core.responses import get_service_model

    operation = get_service_model("dynamodb").operation_model("GetItem")
    shape = operation.output_shape.members["Item"].value
    assert moto_write_speed._is_attribute_value(shape)
    assert not moto_write_speed._is_attribute_value(operation.output_shape)
    assert not moto_write_speed._is_attribute_value(shape.members["M"])


def _tree(node: Any) -> Any:
    """An update expression's tree as plain values (its nodes have no ``__eq__``)."""
    from moto.dynamodb.parsing.ast_nodes import Node  # type: ignore[attr-defined]

    if isinstance(node, Node):
        return (type(node).__name__, [_tree(child) for child in node.children or []])
    return repr(node)


def test_an_update_expression_tree_is_kept_and_never_changed(patch_later):
    from moto.dynamodb.exceptions import InvalidUpdateExpression
    from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]

    text = _CLAIM["UpdateExpression"]
    stock = _tree(UpdateExpressionParser.make(text))
    patch_later()
    tree = UpdateExpressionParser.make(text)
    assert UpdateExpressionParser.make(text) is tree
    assert _tree(tree) == stock
    with mock_aws():
        ddb = boto3.client("dynamodb", region_name="us-east-1")
        _tables(ddb)
        ddb.put_item(TableName=TABLE, Item=_trigger(0))
        assert "Attributes" in _claim(ddb, "trg_000", "run_a", 1000)  # the same text
    assert UpdateExpressionParser.make(text) is tree
    assert _tree(tree) == stock  # validating and running it changed a copy
    for _ in range(2):  # not kept: raised again
        with pytest.raises(InvalidUpdateExpression):
            UpdateExpressionParser.make("SET a = :v,")


def test_condition_tokens_are_kept_and_never_changed(patch_later):
    from moto.dynamodb.comparisons import ConditionExpressionParser

    def tokens(text: str) -> list:
        return list(ConditionExpressionParser(text, {}, {})._lex_condition_expression())

    stock = {text: tokens(text) for text in _CONDITIONS[:4]}
    patch_later()
    for text, expected in stock.items():
        first = ConditionExpressionParser(text, {}, {})._lex_condition_expression()
        first.clear()  # each parse has its own list
        assert tokens(text) == expected
        assert all(not node.children for node in tokens(text))
    values = {**_VALUES_USED, ":one": {"N": "1"}}
    for text in _CONDITIONS[:4]:
        ConditionExpressionParser(text, _NAMES, values).parse()
        assert tokens(text) == stock[text]  # parsing made new nodes, changed none
    for _ in range(2):
        with pytest.raises(ValueError):
            ConditionExpressionParser("a = ~b", {}, {})._lex_condition_expression()


# -- SQS -----------------------------------------------------------------------------


def _sqs_scenario() -> list:
    from moto.moto_api._internal import mock_random

    with mock_aws():
        mock_random.seed(12)
        sqs = boto3.client("sqs", region_name="us-east-1")
        recorder = _Recorder(sqs)
        plain = sqs.create_queue(QueueName="fires")["QueueUrl"]
        dedup = sqs.create_queue(
            QueueName="dedup.fifo",
            Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"},
        )["QueueUrl"]
        explicit = sqs.create_queue(QueueName="explicit.fifo", Attributes={"FifoQueue": "true"})[
            "QueueUrl"
        ]
        seen: list = []
        for i in range(3):
            seen.append(_answer(sqs.send_message, QueueUrl=plain, MessageBody=f"m{i}"))
        seen.append(
            _answer(
                sqs.send_message,
                QueueUrl=plain,
                MessageBody="attrs",
                DelaySeconds=0,
                MessageAttributes={"k": {"DataType": "String", "StringValue": "v"}},
            )
        )
        seen.append(_answer(sqs.send_message, QueueUrl=plain, MessageBody="late", DelaySeconds=901))
        seen.append(
            _answer(
                sqs.send_message_batch,
                QueueUrl=plain,
                Entries=[
                    {"Id": "a", "MessageBody": "ba", "DelaySeconds": 30},
                    {"Id": "b", "MessageBody": "bb"},
                    {"Id": "c", "MessageBody": "bc", "DelaySeconds": 901},
                ],
            )
        )
        for body in ("same", "same", "other"):
            seen.append(
                _answer(sqs.send_message, QueueUrl=dedup, MessageBody=body, MessageGroupId="g")
            )
        seen.append(
            _answer(sqs.send_message, QueueUrl=explicit, MessageBody="x", MessageGroupId="g")
        )
        seen.append(_answer(sqs.send_message, QueueUrl=explicit, MessageBody="x"))
        for dedup_id in ("d1", "d1", "d2"):
            seen.append(
                _answer(
                    sqs.send_message,
                    QueueUrl=explicit,
                    MessageBody="x",
                    MessageGroupId="g",
                    MessageDeduplicationId=dedup_id,
                )
            )
        for url in (plain, dedup, explicit):
            got = _answer(
                sqs.receive_message,
                QueueUrl=url,
                MaxNumberOfMessages=10,
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
            )
            for message in got.get("Messages", []):
                for name in ("SentTimestamp", "ApproximateFirstReceiveTimestamp"):
                    message["Attributes"].pop(name, None)
            seen.append(got)
            attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])
            seen.append(
                {k: v for k, v in attributes["Attributes"].items() if not k.endswith("Timestamp")}
            )
        return [seen, [b for b in recorder.bodies if b"Timestamp" not in b]]


def test_sqs_sends_are_those_of_stock_moto(patch_later):
    stock = _sqs_scenario()
    patch_later()
    patched = _sqs_scenario()
    assert patched == stock
    answers = stock[0]
    assert "InvalidParameterValue" in json.dumps(answers[4], default=str)
    assert [m["Body"] for m in answers[-6]["Messages"]] == ["m0", "m1", "m2", "attrs", "bb"]
    assert [m["Body"] for m in answers[-4]["Messages"]] == ["same", "other"]  # deduplicated


def test_the_one_attribute_is_the_one_moto_builds():
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        from moto.sqs.models import sqs_backends

        backend = sqs_backends["123456789012"]["us-east-1"]
        made = [
            ("plain", {}),
            ("kms", {"KmsMasterKeyId": "alias/aws/sqs"}),
            ("on.fifo", {"FifoQueue": "true", "ContentBasedDeduplication": "true"}),
            ("off.fifo", {"FifoQueue": "true"}),
        ]
        for name, attributes in made:
            sqs.create_queue(QueueName=name, Attributes=attributes)
            queue = backend.get_queue(name)
            assert moto_write_speed._content_based_deduplication(queue) == queue.attributes.get(
                "ContentBasedDeduplication"
            )


# -- the rest --------------------------------------------------------------------------


def test_moto_modules_are_listed_as_before(patch_later):
    from moto import backends

    stock = list(backends.list_of_moto_modules())
    patch_later()
    assert list(backends.list_of_moto_modules()) == stock
    assert list(backends.list_of_moto_modules()) == stock  # again: not a spent iterator
    assert "dynamodb" in backends.list_of_moto_modules()


def test_the_patch_applies_once(patch_later):
    from moto.core.serialize import BaseJSONSerializer
    from moto.sqs.models import SQSBackend

    patch_later()
    structure, send = BaseJSONSerializer._serialize_type_structure, SQSBackend.send_message
    patch_later()
    assert BaseJSONSerializer._serialize_type_structure is structure
    assert SQSBackend.send_message is send
