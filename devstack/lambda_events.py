"""What Lambda hands a function in the local stack: SQS records and the invocation context."""

from __future__ import annotations

import time
from typing import Any

__all__ = ["InvocationContext", "lambda_record", "tenant_of"]


class InvocationContext:
    """The part of Lambda's context the runner reads: the time left in the invocation.

    Each batch gets the runner's timeout (``CRONHOOK_RUNNER_TIMEOUT_S``), as a Lambda
    invocation does, so a batch of slow workflows hands its later messages back to the
    queue here as it would in AWS (nothing kills a local batch that runs over, though).
    """

    def __init__(self, timeout_s: float, *, clock: Any = time.monotonic):
        self._clock = clock
        self._deadline = clock() + timeout_s

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - self._clock()) * 1000))


def lambda_record(message: dict, queue_url: str) -> dict:
    """An SQS message in the shape Lambda's event source mapping delivers it."""
    attributes = message.get("Attributes", {})
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": {
            "ApproximateReceiveCount": attributes.get("ApproximateReceiveCount", "1"),
            "SentTimestamp": attributes.get("SentTimestamp", "0"),
            "SenderId": attributes.get("SenderId", "local"),
            "ApproximateFirstReceiveTimestamp": attributes.get(
                "ApproximateFirstReceiveTimestamp", "0"
            ),
        },
        "messageAttributes": {},
        "md5OfBody": message.get("MD5OfBody", ""),
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:" + queue_url.rsplit("/", 1)[-1],
        "awsRegion": "us-east-1",
    }


def tenant_of(message: dict) -> str:
    """The tenant a received fire message belongs to (its message group)."""
    group = (message.get("Attributes") or {}).get("MessageGroupId")
    if group:
        return str(group)
    try:
        from chalicelib.store.sqs import FireMessage

        return FireMessage.parse(message["Body"]).tenant or ""
    except (KeyError, ValueError, TypeError):
        return ""
