"""The embedded AWS's write-ahead journal (``devstack/journal.py``, issue 26).

The replay rules as pure functions (an item's last image wins, ``null`` deletes, a torn
last line is skipped, replaying twice changes nothing), and the real thing: an
embedded AWS process killed with SIGKILL right after it answered a write, started again
on the same data dir, has that write: DynamoDB items (put, update, delete, a
transaction), S3 objects of the stack's buckets. Before issue 26 every write since the
last save (a heartbeat tick) was gone.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import boto3
import pytest

from devstack.embedded_aws import EmbeddedAws
from devstack.journal import Journal, compact, journal_files, merge
from tests.ports import free_port

pytestmark = pytest.mark.server

TABLE = "cronhook-local-journal-test"
BUCKET = "cronhook-local-journal-bucket"


def _item(key: str, n: int) -> dict:
    return {"id": {"S": key}, "n": {"N": str(n)}}


def _put(key: str, n: int) -> dict:
    return {"t": TABLE, "k": {"id": {"S": key}}, "i": _item(key, n)}


def _gone(key: str) -> dict:
    return {"t": TABLE, "k": {"id": {"S": key}}, "i": None}


def test_replay_leaves_each_items_last_image_and_deletes_what_was_deleted():
    snapshot = {"tables": {TABLE: [_item("a", 1), _item("b", 1)], "other": [_item("z", 9)]}}
    records = [_put("a", 2), _put("c", 1), _gone("b"), _put("a", 3)]
    merged = merge(snapshot, records)
    assert sorted(merged["tables"][TABLE], key=lambda i: i["id"]["S"]) == [
        _item("a", 3),
        _item("c", 1),
    ]
    assert merged["tables"]["other"] == [_item("z", 9)]  # a table with no record: as saved


def test_replaying_a_journal_over_a_snapshot_that_already_has_it_changes_nothing():
    # A crash between writing the snapshot and removing the journal it covers.
    records = [_put("a", 1), _put("a", 2), _gone("b"), _put("c", 5)]
    once = merge({}, records)
    assert merge(once, records)["tables"] == once["tables"]


def test_objects_replay_the_same_way():
    records = [
        {"b": BUCKET, "o": "k1", "v": "aGVsbG8="},
        {"b": BUCKET, "o": "k2", "v": "eA=="},
        {"b": BUCKET, "o": "k1", "v": None},
    ]
    assert merge({"objects": {BUCKET: {"k0": "eQ=="}}}, records)["objects"] == {
        BUCKET: {"k0": "eQ==", "k2": "eA=="}
    }


def test_compact_folds_every_journal_file_into_the_snapshot_and_skips_a_torn_line(tmp_path):
    state = tmp_path / "tables.json"
    state.write_text(json.dumps({"tables": {TABLE: [_item("a", 1)]}}))
    first = Journal(state, 3)
    first.sync(first.append([_put("a", 2), _put("b", 1)]))
    # Mode 0600, as tables.json: the journal holds sealed secrets and every tenant's state.
    assert oct((tmp_path / "tables.journal.3").stat().st_mode & 0o777) == "0o600"
    first.rotate()
    first.sync(first.append([_gone("b")]))
    first.close()
    with open(tmp_path / "tables.journal.4", "ab") as torn:  # a crash mid-append
        torn.write(b'{"t": "cronhook-local-jour')
    assert compact(state) == 5
    assert journal_files(state) == []
    assert json.loads(state.read_text())["tables"][TABLE] == [_item("a", 2)]
    assert oct(state.stat().st_mode & 0o777) == "0o600"


# -- the embedded AWS, killed ------------------------------------------------------------


def _start(data_dir: Path) -> EmbeddedAws:
    aws = EmbeddedAws(port=free_port(), save_to=data_dir / "tables.json")
    aws.start()
    return aws


def _clients(aws: EmbeddedAws) -> tuple:
    kw = {
        "endpoint_url": aws.endpoint,
        "region_name": "us-east-1",
        "aws_access_key_id": "local",
        "aws_secret_access_key": "local",
    }
    return boto3.client("dynamodb", **kw), boto3.client("s3", **kw)


def _create(ddb, s3) -> None:
    ddb.create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    s3.create_bucket(Bucket=BUCKET)


def _kill(aws: EmbeddedAws) -> None:
    assert aws.process is not None
    os.kill(aws.process.pid, signal.SIGKILL)
    aws.process.wait(timeout=30)
    aws.process = None


def _writes(ddb, s3) -> None:
    ddb.put_item(TableName=TABLE, Item=_item("put", 1))
    ddb.put_item(TableName=TABLE, Item=_item("updated", 1))
    ddb.update_item(
        TableName=TABLE,
        Key={"id": {"S": "updated"}},
        UpdateExpression="SET n = :two",
        ConditionExpression="n = :one",
        ExpressionAttributeValues={":one": {"N": "1"}, ":two": {"N": "2"}},
    )
    ddb.put_item(TableName=TABLE, Item=_item("deleted", 1))
    ddb.delete_item(TableName=TABLE, Key={"id": {"S": "deleted"}})
    ddb.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": TABLE, "Item": _item("tx-a", 1)}},
            {
                "Update": {
                    "TableName": TABLE,
                    "Key": {"id": {"S": "put"}},
                    "UpdateExpression": "SET n = :three",
                    "ExpressionAttributeValues": {":three": {"N": "3"}},
                }
            },
        ]
    )
    ddb.batch_write_item(RequestItems={TABLE: [{"PutRequest": {"Item": _item("batch", 7)}}]})
    s3.put_object(Bucket=BUCKET, Key="body-1", Body=b"\x00kept\xff")
    s3.put_object(Bucket=BUCKET, Key="body-2", Body=b"dropped")
    s3.delete_object(Bucket=BUCKET, Key="body-2")


def test_every_write_answered_before_a_kill_9_is_there_after_the_restart(tmp_path):
    aws = _start(tmp_path)
    try:
        ddb, s3 = _clients(aws)
        _create(ddb, s3)
        aws.request_save()  # a snapshot first: the writes after it live only in the journal
        _writes(ddb, s3)
    finally:
        _kill(aws)  # no save on the way out: SIGKILL

    # Started again on the same data dir, it folds the journal into tables.json before it
    # serves (the stack then loads tables.json, as it always has).
    aws = _start(tmp_path)
    aws.stop()
    saved = json.loads((tmp_path / "tables.json").read_text())
    items = {i["id"]["S"]: i["n"]["N"] for i in saved["tables"][TABLE]}
    assert items == {"put": "3", "updated": "2", "tx-a": "1", "batch": "7"}
    assert saved["objects"][BUCKET] == {"body-1": "AGtlcHT/"}


def test_a_failed_conditional_write_is_not_journaled(tmp_path):
    aws = _start(tmp_path)
    try:
        ddb, s3 = _clients(aws)
        _create(ddb, s3)
        ddb.put_item(TableName=TABLE, Item=_item("a", 1))
        with pytest.raises(ddb.exceptions.ConditionalCheckFailedException):
            ddb.put_item(
                TableName=TABLE,
                Item=_item("a", 9),
                ConditionExpression="attribute_not_exists(id)",
            )
    finally:
        _kill(aws)
    compact(tmp_path / "tables.json")
    saved = json.loads((tmp_path / "tables.json").read_text())
    assert saved["tables"][TABLE] == [_item("a", 1)]
