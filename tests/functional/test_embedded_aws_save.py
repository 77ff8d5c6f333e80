"""The embedded AWS's snapshot of its tables loads back into the same items."""

from __future__ import annotations

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
