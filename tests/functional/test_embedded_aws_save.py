"""The embedded AWS's snapshot of its tables loads back into the same items."""

from __future__ import annotations

import json
import threading

from devstack.embedded_aws import dump_tables, item_for_boto3


def test_a_saved_table_loads_back_item_for_item_binary_and_nested_values_included(aws):
    from chalicelib.store.aws import client

    ddb = client("dynamodb")
    ddb.create_table(
        TableName="cronhook-test-snapshot",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    items = [
        {
            "id": {"S": f"t{n}"},
            "sealed": {"B": bytes([n, 0, 255])},
            "keys": {"BS": [b"\x01", b"\x02"]},
            "state": {"M": {"cursor": {"N": str(n)}, "raw": {"B": b"\x00\xff"}}},
            "tags": {"L": [{"S": "a"}, {"NULL": True}, {"BOOL": False}]},
            "names": {"SS": ["x", "y"]},
        }
        for n in range(30)
    ]
    for item in items:
        ddb.put_item(TableName="cronhook-test-snapshot", Item=item)

    dump = dump_tables("cronhook-test-snapshot")
    assert set(dump) == {"cronhook-test-snapshot"}
    assert len(dump["cronhook-test-snapshot"]) == 30

    for item in items:
        ddb.delete_item(TableName="cronhook-test-snapshot", Key={"id": item["id"]})
    for saved in dump["cronhook-test-snapshot"]:
        ddb.put_item(TableName="cronhook-test-snapshot", Item=item_for_boto3(saved))

    loaded = {i["id"]["S"]: i for i in ddb.scan(TableName="cronhook-test-snapshot")["Items"]}
    for item in items:
        got = loaded[item["id"]["S"]]
        assert got["sealed"] == item["sealed"]
        assert sorted(got["keys"]["BS"]) == item["keys"]["BS"]
        assert got["state"] == item["state"]
        assert got["tags"] == item["tags"]
        assert sorted(got["names"]["SS"]) == item["names"]["SS"]


def test_only_tables_under_the_prefix_are_saved(aws):
    from chalicelib.store.aws import client

    ddb = client("dynamodb")
    for name in ("cronhook-test-kept", "someone-elses"):
        ddb.create_table(
            TableName=name,
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        ddb.put_item(TableName=name, Item={"id": {"S": "1"}})
    assert set(dump_tables("cronhook-test-kep")) == {"cronhook-test-kept"}


# -- a save while writes go on (the dump reads items with the write lock free) -----------

_FUZZY = "cronhook-test-fuzzy"


def _journaled(monkeypatch, state):
    """The embedded AWS's journal on this process's moto, its hooks taken off after the test."""
    from moto.dynamodb.models import DynamoDBBackend
    from moto.s3.models import S3Backend

    from devstack.journal import Journal, compact
    from devstack.journal_hooks import install

    hooked = {
        DynamoDBBackend: ("put_item", "update_item", "delete_item", "transact_write_items"),
        S3Backend: ("put_object", "delete_object"),
    }
    for owner, names in hooked.items():
        for name in names:  # monkeypatch puts the unhooked method back at teardown
            monkeypatch.setattr(owner, name, getattr(owner, name))
    journal = Journal(state, compact(state))
    install(journal, bucket_prefix=_FUZZY)
    return journal


def _numbered(n: int, value: int) -> dict:
    return {"id": {"S": f"i{n:02d}"}, "n": {"N": str(value)}}


def test_writes_made_during_a_save_are_answered_at_once_and_load_back(aws, tmp_path, monkeypatch):
    """Half way through the dump, another client updates an item already read, deletes
    another and puts a new one. Each write is answered while the dump goes on, and the
    tables loaded back (the snapshot, then the journal replayed over it) are the live ones."""
    from chalicelib.store.aws import client
    from devstack import journal as journal_module
    from devstack.embedded_aws import _save
    from devstack.journal import compact

    ddb = client("dynamodb")
    ddb.create_table(
        TableName=_FUZZY,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    for n in range(40):
        ddb.put_item(TableName=_FUZZY, Item=_numbered(n, 1))
    state = tmp_path / "tables.json"
    journal = _journaled(monkeypatch, state)

    def write_meanwhile() -> None:
        other = client("dynamodb")
        other.update_item(
            TableName=_FUZZY,
            Key={"id": {"S": "i00"}},
            UpdateExpression="SET n = :two",
            ExpressionAttributeValues={":two": {"N": "2"}},
        )
        other.delete_item(TableName=_FUZZY, Key={"id": {"S": "i01"}})
        other.put_item(TableName=_FUZZY, Item=_numbered(99, 1))

    real_wire, read, answered = journal_module.wire_item, [], []

    def wire(item):
        if len(read) == 20 and not answered:
            writer = threading.Thread(target=write_meanwhile)
            writer.start()
            writer.join(timeout=5)
            answered.append(not writer.is_alive())
            writer.join()  # (after the dump, if the dump held the writes back)
        read.append(item)
        return real_wire(item)

    monkeypatch.setattr(journal_module, "wire_item", wire)
    try:
        _save(state, _FUZZY, journal)
    finally:
        journal.close()
    assert answered == [True], "the writes waited for the dump to end"

    compact(state)  # what the embedded AWS does before it serves again
    loaded = {i["id"]["S"]: i["n"]["N"] for i in json.loads(state.read_text())["tables"][_FUZZY]}
    live = {i["id"]["S"]: i["n"]["N"] for i in ddb.scan(TableName=_FUZZY)["Items"]}
    assert loaded == live
    assert loaded["i00"] == "2" and "i01" not in loaded and loaded["i99"] == "1"


def test_an_item_that_changes_size_while_it_is_read_is_read_again_under_the_lock(monkeypatch):
    from devstack import journal as journal_module
    from devstack.embedded_aws import _wire_unlocked
    from devstack.moto_atomic import write_lock

    locked: list[bool] = []

    def wire(item):
        locked.append(write_lock()._is_owned())  # type: ignore[attr-defined]
        if len(locked) == 1:
            raise RuntimeError("dictionary changed size during iteration")
        return {"id": {"S": item}}

    monkeypatch.setattr(journal_module, "wire_item", wire)
    assert _wire_unlocked("x") == {"id": {"S": "x"}}
    assert locked == [False, True]


def test_the_snapshot_text_is_the_json_of_the_snapshot_encoded_a_chunk_at_a_time():
    from devstack.embedded_aws import _ENCODE_CHUNK, snapshot_text

    item = {"id": {"S": 'é\u2028"x'}, "n": {"N": "1"}, "b": {"B": "AP8="}}
    shapes = [
        {},
        {"tables": {}},
        {"saved_at": "2026-12-07T22:00:00+00:00", "tables": {"empty": []}, "objects": {}},
        {
            "saved_at": "2026-12-07T22:00:00+00:00",
            "tables": {"one": [item], "many": [item] * (2 * _ENCODE_CHUNK + 1)},
            "objects": {"bucket": {"key": "AGtlcHT/"}},
        },
    ]
    for snapshot in shapes:
        assert json.loads(snapshot_text(snapshot)) == snapshot
