"""The local stack's enqueuers: the tick queue's consumers when fan-out is on.

With ``CRONHOOK_FANOUT_SHARDS`` set, the heartbeat sends one message per due shard to the
tick queue (``services/heartbeat/fanout.py``); here, threads of their own take them one
at a time, as the enqueuer's event source mapping does in AWS (batch size 1), and run
the enqueuer's handler with an invocation context of its timeout.
"""

from __future__ import annotations

import sys
import threading

from devstack.lambda_events import InvocationContext, lambda_record

__all__ = [
    "TICK_QUEUE",
    "ENQUEUER_TIMEOUT_S",
    "create_tick_queue",
    "enqueuer_count",
    "enqueuer_loop",
]

TICK_QUEUE = "cronhook-ticks"
ENQUEUER_TIMEOUT_S = 60  # .chalice/config.json's enqueuer timeout
# The tick queue is short-polled like the fire queue (local/pool.py: moto's long poll).
IDLE_POLL_S = 0.2


def create_tick_queue() -> str:
    """The tick queue in the embedded AWS; its URL."""
    from chalicelib.store.aws import client

    return client("sqs").create_queue(
        QueueName=TICK_QUEUE,
        Attributes={"VisibilityTimeout": str(ENQUEUER_TIMEOUT_S + 30)},
    )["QueueUrl"]


def enqueuer_count(due_shards: int) -> int:
    """Enqueuer threads: one per due shard, at most 4 (the local stack shares one machine)."""
    return max(1, min(4, due_shards))


def enqueuer_loop(queue_url: str, stop_event: threading.Event) -> None:
    """Take tick messages one at a time and run the enqueuer's handler on each."""
    from chalicelib import wiring
    from chalicelib.store.aws import client

    sqs = client("sqs")
    while not stop_event.is_set():
        try:
            answer = sqs.receive_message(
                QueueUrl=queue_url, MaxNumberOfMessages=1, WaitTimeSeconds=0
            )
        except Exception as exc:
            if stop_event.is_set():
                break
            print(f"tick receive failed: {exc!r}", file=sys.stderr)
            stop_event.wait(1)
            continue
        messages = answer.get("Messages", [])
        if not messages:
            stop_event.wait(IDLE_POLL_S)
            continue
        (message,) = messages
        event = {"Records": [lambda_record(message, queue_url)]}
        try:
            wiring.handle_tick_batch(event, InvocationContext(ENQUEUER_TIMEOUT_S))
        except Exception as exc:  # the next tick reads the shard again
            print(f"enqueuer failed: {exc!r}", file=sys.stderr)
        try:
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
        except Exception as exc:  # delivered again later: dropped as older than a tick
            print(f"tick delete failed: {exc!r}", file=sys.stderr)
