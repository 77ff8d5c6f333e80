"""The embedded AWS reads an item whole: a read waits for a write in progress (moto_atomic).

moto changes items in place. Unlocked, a Query of an index could build its page's last
key from an item that an update had just taken out of the index (seen in the 2,000-webhook
burst: ``KeyError: 'pending_trigger'``, a 500). Each test holds the lock as a write in
progress would, and checks that the read does not answer until the lock is released.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from devstack.moto_atomic import write_lock

TABLE = "atomic-probe"


def _table(ddb: Any) -> None:
    ddb.create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "queue", "AttributeType": "S"},
            {"AttributeName": "at", "AttributeType": "N"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "waiting",
                "KeySchema": [
                    {"AttributeName": "queue", "KeyType": "HASH"},
                    {"AttributeName": "at", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    for n in range(3):
        ddb.put_item(
            TableName=TABLE,
            Item={"pk": {"S": f"e{n}"}, "queue": {"S": "q"}, "at": {"N": str(n)}},
        )


READS: dict[str, Callable[[Any], int]] = {
    "get_item": lambda ddb: len(
        ddb.get_item(TableName=TABLE, Key={"pk": {"S": "e0"}}, ConsistentRead=True)["Item"]
    ),
    "query": lambda ddb: len(
        ddb.query(
            TableName=TABLE,
            IndexName="waiting",
            KeyConditionExpression="#q = :q",
            ExpressionAttributeNames={"#q": "queue"},
            ExpressionAttributeValues={":q": {"S": "q"}},
            Limit=2,
        )["Items"]
    ),
    "scan": lambda ddb: len(ddb.scan(TableName=TABLE)["Items"]),
    "batch_get_item": lambda ddb: len(
        ddb.batch_get_item(RequestItems={TABLE: {"Keys": [{"pk": {"S": "e1"}}]}})["Responses"][
            TABLE
        ]
    ),
    "transact_get_items": lambda ddb: len(
        ddb.transact_get_items(
            TransactItems=[{"Get": {"TableName": TABLE, "Key": {"pk": {"S": "e2"}}}}]
        )["Responses"]
    ),
}


@pytest.mark.parametrize("name", sorted(READS))
def test_a_read_waits_for_the_write_in_progress_and_then_answers(aws, name):
    from chalicelib.store.aws import client

    ddb = client("dynamodb")
    _table(ddb)
    answers: list[int] = []
    reader = threading.Thread(target=lambda: answers.append(READS[name](ddb)), daemon=True)
    with write_lock():  # a write in progress, as moto_atomic's patched writes hold it
        reader.start()
        reader.join(timeout=0.5)
        # Held: the read cannot have answered (were it unlocked, it would have by now,
        # or, on a slow machine, the test would pass without proving it: never flake).
        assert reader.is_alive() and answers == []
    reader.join(timeout=30)
    assert not reader.is_alive() and answers and answers[0] >= 1


def test_the_reads_and_writes_are_patched_once():
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.responses import DynamoHandler

    from devstack import moto_atomic

    moto_atomic.make_dynamodb_atomic()
    before = {n: getattr(DynamoHandler, n) for n in moto_atomic._READERS}
    moto_atomic.make_dynamodb_atomic()
    for name in moto_atomic._READERS:
        assert getattr(DynamoHandler, name) is before[name]
        assert getattr(DynamoHandler, name)._cronhook_atomic
    for name in moto_atomic._MUTATORS:
        assert getattr(DynamoDBBackend, name)._cronhook_atomic
