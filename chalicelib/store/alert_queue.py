"""The alerts queue: transitions, digest flushes and test sends, off the fire path."""

from __future__ import annotations

import json

from chalicelib.settings import get_settings
from chalicelib.store.aws import client

__all__ = ["send_alert_messages", "MAX_DELAY_S"]

MAX_DELAY_S = 900  # SQS's longest DelaySeconds


def send_alert_messages(bodies: list[dict], *, delay_s: int = 0) -> bool:
    """Send ``bodies`` (ten a batch); False when no alerts queue is configured.

    Raises if SQS refuses any of them: the caller decides whether that may fail its work.
    """
    url = get_settings().alerts_queue_url
    if not url:
        return False
    sqs = client("sqs")
    delay = max(0, min(MAX_DELAY_S, int(delay_s)))
    for start in range(0, len(bodies), 10):
        chunk = bodies[start : start + 10]
        entries = [
            {
                "Id": str(n),
                "MessageBody": json.dumps(body, separators=(",", ":"), default=str),
                "DelaySeconds": delay,
            }
            for n, body in enumerate(chunk)
        ]
        answer = sqs.send_message_batch(QueueUrl=url, Entries=entries)
        if answer.get("Failed"):
            raise RuntimeError(f"alerts queue refused {len(answer['Failed'])} message(s)")
    return True
