"""The embedded AWS's long poll ends when a held message turns visible (local/moto_wakeup)."""

from __future__ import annotations

import boto3
from moto import mock_aws

from devstack import moto_wakeup


def _queue(sqs, name: str):
    from moto.sqs.models import sqs_backends

    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    return url, sqs_backends["123456789012"]["us-east-1"].get_queue(name)


@mock_aws
def test_a_delayed_message_is_counted_until_it_turns_visible():
    sqs = boto3.client("sqs", region_name="us-east-1")
    url, queue = _queue(sqs, "wake")
    assert moto_wakeup._seconds_until_one_turns_visible(queue) is None  # empty: no wake-up
    sqs.send_message(QueueUrl=url, MessageBody="later", DelaySeconds=30)
    seconds = moto_wakeup._seconds_until_one_turns_visible(queue)
    assert seconds is not None and 25 < seconds <= 30.01


@mock_aws
def test_the_patched_long_poll_returns_a_delayed_message_once_visible_and_patches_once(
    monkeypatch,
):
    from moto.sqs.models import Queue

    # The patch is the embedded AWS process's; here it is undone after the test.
    monkeypatch.setattr(Queue, "wait_for_messages", Queue.wait_for_messages)
    moto_wakeup.make_long_polls_wake()

    patched = Queue.wait_for_messages
    moto_wakeup.make_long_polls_wake()
    assert Queue.wait_for_messages is patched and patched._wakes
    sqs = boto3.client("sqs", region_name="us-east-1")
    url, _queue_model = _queue(sqs, "wake2")
    sqs.send_message(QueueUrl=url, MessageBody="soon", DelaySeconds=1)
    got = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=10, MaxNumberOfMessages=1)
    assert [m["Body"] for m in got.get("Messages", [])] == ["soon"]
    # Nothing held: the wait runs out and returns nothing.
    sqs.delete_message(QueueUrl=url, ReceiptHandle=got["Messages"][0]["ReceiptHandle"])
    empty = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1)
    assert empty.get("Messages", []) == []
