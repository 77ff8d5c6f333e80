"""The embedded AWS's SQS scans (local/moto_sqs_speed) answer as stock moto does.

Each scenario runs twice on fresh in-process moto, stock then patched, and the two
answers must be equal. The patch is undone after each test, so other tests see stock moto.
"""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from moto import mock_aws

from devstack import moto_sqs_speed

QUEUE = "speed"


@pytest.fixture
def patch_later(monkeypatch):
    """A function that applies the patch; whatever it replaced is restored after the test."""
    for owner, name in moto_sqs_speed.patched_sqs_names():
        monkeypatch.setattr(owner, name, owner.__dict__[name])
    return moto_sqs_speed.make_sqs_fast


def _queue(sqs, **attributes: str):
    from moto.sqs.models import sqs_backends

    url = sqs.create_queue(QueueName=QUEUE, Attributes=attributes)["QueueUrl"]
    return url, sqs_backends["123456789012"]["us-east-1"]


def _fill(sqs, url: str) -> None:
    """Visible, delayed and (after a receive) in-flight messages, in a known order."""
    for i in range(0, 30, 10):
        entries = [
            {"Id": str(j), "MessageBody": f"delayed {i + j}", "DelaySeconds": 900}
            for j in range(10)
        ]
        sqs.send_message_batch(QueueUrl=url, Entries=entries)
    for i in range(12):
        sqs.send_message(QueueUrl=url, MessageBody=f"visible {i}")
    sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=3, VisibilityTimeout=600)


def _observe(sqs, url: str, backend: Any) -> dict:
    """Everything a client and the wake-up patch read of the queue."""
    queue = backend.get_queue(QUEUE)
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    for name in ("CreatedTimestamp", "LastModifiedTimestamp", "QueueArn"):
        attributes.pop(name)  # differ between the two fresh queues, not between the scans
    some = sqs.get_queue_attributes(
        QueueUrl=url,
        AttributeNames=["ApproximateNumberOfMessagesDelayed", "MessageRetentionPeriod"],
    )["Attributes"]
    received = []
    for _ in range(3):
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=4, VisibilityTimeout=600)
        received.append([m["Body"] for m in got.get("Messages", [])])
    return {
        "attributes": attributes,
        "some": some,
        "messages": [m.body for m in queue.messages],
        "counts": (
            queue.approximate_number_of_messages,
            queue.approximate_number_of_messages_delayed,
            queue.approximate_number_of_messages_not_visible,
        ),
        "received": received,
        "after": sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"][
            "ApproximateNumberOfMessagesNotVisible"
        ],
    }


def _scenario() -> dict:
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        url, backend = _queue(sqs)
        _fill(sqs, url)
        return _observe(sqs, url, backend)


def test_receives_counts_and_attributes_are_those_of_stock_moto(patch_later):
    stock = _scenario()
    patch_later()
    patched = _scenario()
    assert patched == stock
    # After the receives: the 12 visible ones in flight, the 30 delayed still delayed.
    assert stock["counts"] == (0, 30, 12)
    assert stock["received"] == [
        [f"visible {i}" for i in range(3, 7)],
        ["visible 7", "visible 8", "visible 9", "visible 10"],
        ["visible 11"],
    ]


def _expired_scenario() -> dict:
    """A retention of 60 s, one message sent 2 minutes ago and one just now."""
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        url, backend = _queue(sqs, MessageRetentionPeriod="60")
        sqs.send_message(QueueUrl=url, MessageBody="old")
        sqs.send_message(QueueUrl=url, MessageBody="new")
        old = backend.get_queue(QUEUE)._messages[0]
        old.sent_timestamp -= 120_000
        first = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=600)
        # Retention read the queue's attribute: change it and the old one is kept again.
        sqs.set_queue_attributes(QueueUrl=url, Attributes={"MessageRetentionPeriod": "3600"})
        old.visible_at = 0
        second = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=600)
        return {
            "first": [m["Body"] for m in first.get("Messages", [])],
            "second": [m["Body"] for m in second.get("Messages", [])],
        }


def test_retention_still_drops_an_expired_message_as_stock_moto_does(patch_later):
    stock = _expired_scenario()
    patch_later()
    patched = _expired_scenario()
    assert patched == stock
    # moto stops at the expired message (the first of the queue): nothing that receive.
    assert stock == {"first": [], "second": ["old", "new"]}


def _delete_scenario() -> list:
    from moto.sqs.exceptions import ReceiptHandleIsInvalid

    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        url, backend = _queue(sqs)
        for body in ("a", "b", "c"):
            sqs.send_message(QueueUrl=url, MessageBody=body)
        queue = backend.get_queue(QUEUE)
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=3, VisibilityTimeout=0)
        handles = {m["Body"]: m["ReceiptHandle"] for m in got["Messages"]}
        again = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1, VisibilityTimeout=600)
        seen = [[m.body for m in queue._messages], len(queue.pending_messages)]
        queue.delete_message(handles[again["Messages"][0]["Body"]])  # an older handle
        queue.delete_message(handles["c"])
        queue.delete_message(handles["c"])  # twice: accepted, as SQS does
        seen += [[m.body for m in queue._messages], len(queue.pending_messages)]
        with pytest.raises(ReceiptHandleIsInvalid):
            queue.delete_message("not a handle")
        return seen


def test_delete_by_current_or_older_handle_is_that_of_stock_moto(patch_later):
    stock = _delete_scenario()
    patch_later()
    assert _delete_scenario() == stock
    assert stock == [["a", "b", "c"], 3, ["b"], 1]  # moto keeps b pending (received once)


def test_the_patch_applies_once(patch_later):
    from moto.sqs.models import Queue, SQSBackend

    patch_later()
    messages, check = (
        Queue.__dict__["messages"],
        SQSBackend.is_message_valid_based_on_retention_period,
    )
    patch_later()
    assert Queue.__dict__["messages"] is messages
    assert SQSBackend.is_message_valid_based_on_retention_period is check
