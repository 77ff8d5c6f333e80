"""The local stack's alerts queue and its consumer (the ``alerts`` Lambda in AWS)."""

from __future__ import annotations

import sys
import threading
from typing import Any

from devstack.lambda_events import lambda_record

__all__ = ["create_alerts_queue", "alerts_loop"]

LONG_POLL_S = 1


def create_alerts_queue() -> str:
    """The alerts queue in the embedded AWS; its URL."""
    from chalicelib.store.aws import client

    return client("sqs").create_queue(
        QueueName="cronhook-alerts", Attributes={"VisibilityTimeout": "120"}
    )["QueueUrl"]


def alerts_loop(url: str, stop_event: threading.Event) -> None:
    """Take the alerts queue's messages as Lambda's event source mapping would."""
    from chalicelib.store.aws import client

    sqs = client("sqs")
    while not stop_event.is_set():
        try:
            answer = sqs.receive_message(
                QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=LONG_POLL_S
            )
        except Exception as exc:
            if stop_event.is_set():
                break
            print(f"alerts receive failed: {exc!r}", file=sys.stderr)
            stop_event.wait(1)
            continue
        messages = answer.get("Messages", [])
        if messages:
            _batch(sqs, url, messages)


def _batch(sqs: Any, url: str, messages: list[dict]) -> None:
    """Run one batch; delete what was handled (the rest comes back after its visibility)."""
    from chalicelib import wiring

    event = {"Records": [lambda_record(m, url) for m in messages]}
    try:
        result = wiring.handle_alerts_batch(event)
        failed = {f["itemIdentifier"] for f in result.get("batchItemFailures", [])}
    except Exception as exc:
        print(f"alerts batch failed: {exc!r}", file=sys.stderr)
        failed = {m["MessageId"] for m in messages}
    done = [m for m in messages if m["MessageId"] not in failed]
    if done:
        sqs.delete_message_batch(
            QueueUrl=url,
            Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)
            ],
        )
    for m in messages:
        if m["MessageId"] in failed:  # a flush before its minute ended: back in a few seconds
            sqs.change_message_visibility(
                QueueUrl=url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=5
            )
