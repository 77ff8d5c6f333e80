"""The local stack's consumers: the runner pool of the fire queue and the ingest consumer.

``CRONHOOK_MAX_CONCURRENCY`` runner threads share the ceiling fairly among tenants, as SQS
fair queues do (``fairness``): one poller receives into a fair buffer; each runner takes
one message at a time, the oldest of the tenant with the fewest runs in progress.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

from devstack.fairness import FairBuffer
from devstack.lambda_events import InvocationContext, lambda_record, tenant_of

__all__ = ["RunnerPool", "ingest_loop", "IDLE_POLL_S", "LONG_POLL_S"]

# How often an idle runner looks again (a message added or a run done wakes it at once).
IDLE_POLL_S = 0.2
# The consumers long-poll, as Lambda's pollers do: a receive waits up to this long and
# returns as soon as a message is sent or one turns visible (a delayed fire, a message
# whose visibility ended; the embedded AWS wakes its long polls for those too,
# ``moto_wakeup``). Idle, that is one request a second per queue instead of five; a stop
# waits at most this long for the poll in progress.
LONG_POLL_S = 1


class RunnerPool:
    """Lambda's event source mapping on the fire queue: a poller and its runners."""

    def __init__(self, queue_url: str, fair: FairBuffer, stop_event: threading.Event):
        self.queue_url = queue_url
        self.fair = fair
        self.stop_event = stop_event

    def poller_loop(self) -> None:
        """Receive fire messages into the fair buffer, as Lambda's pollers do in AWS."""
        from chalicelib.settings import get_settings
        from chalicelib.store.aws import client

        sqs = client("sqs")
        visibility = get_settings().runner_timeout_s + 60
        fair = self.fair
        while not self.stop_event.is_set():
            for held in fair.to_extend(every_s=visibility / 2):
                self._set_visibility(sqs, held.message, visibility)
            if fair.full():
                fair.wait(IDLE_POLL_S)
                continue
            try:
                answer = sqs.receive_message(
                    QueueUrl=self.queue_url,
                    MaxNumberOfMessages=10,
                    WaitTimeSeconds=LONG_POLL_S,
                    VisibilityTimeout=visibility,
                    AttributeNames=["All"],
                )
            except Exception as exc:
                if self.stop_event.is_set():
                    break
                print(f"receive failed: {exc!r}", file=sys.stderr)
                time.sleep(1)
                continue
            for message in answer.get("Messages", []):
                fair.add(tenant_of(message), message)

    def runner_loop(self) -> None:
        """One runner of the pool: one message at a time, the fairest one waiting.

        The next message is the oldest of the tenant with the fewest runs in progress
        (``local/fairness.py``), as SQS fair queues do in AWS.
        """
        from chalicelib import wiring
        from chalicelib.settings import get_settings
        from chalicelib.store.aws import client

        sqs = client("sqs")
        timeout_s = get_settings().runner_timeout_s
        fair = self.fair
        while not self.stop_event.is_set():
            held = fair.take()
            if held is None:
                fair.wait(IDLE_POLL_S)
                continue
            message = held.message
            event = {"Records": [lambda_record(message, self.queue_url)]}
            try:
                result = wiring.handle_sqs_batch(event, InvocationContext(timeout_s))
                failed = {f["itemIdentifier"] for f in result.get("batchItemFailures", [])}
            except Exception as exc:
                print(f"runner batch failed: {exc!r}", file=sys.stderr)
                failed = {message["MessageId"]}
            finally:
                fair.done(held.tenant)
            if message["MessageId"] not in failed:
                try:
                    sqs.delete_message(
                        QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"]
                    )
                except Exception as exc:  # delivered again later; the start fence drops it
                    print(f"delete failed: {exc!r}", file=sys.stderr)

    def _set_visibility(self, sqs: Any, message: dict, seconds: int) -> None:
        try:
            sqs.change_message_visibility(
                QueueUrl=self.queue_url,
                ReceiptHandle=message["ReceiptHandle"],
                VisibilityTimeout=seconds,
            )
        except Exception as exc:  # it comes back when its visibility timeout ends
            print(f"extending a held message failed: {exc!r}", file=sys.stderr)


def ingest_loop(ingest_url: str, stop_event: threading.Event) -> None:
    """The ingest queue's consumer, as Lambda's event source mapping would run it."""
    from chalicelib.store.aws import client

    sqs = client("sqs")
    while not stop_event.is_set():
        try:
            answer = sqs.receive_message(
                QueueUrl=ingest_url, MaxNumberOfMessages=10, WaitTimeSeconds=LONG_POLL_S
            )
        except Exception as exc:
            if stop_event.is_set():
                break
            print(f"ingest receive failed: {exc!r}", file=sys.stderr)
            stop_event.wait(1)
            continue
        messages = answer.get("Messages", [])
        if messages:
            _ingest_batch(sqs, ingest_url, messages)


def _ingest_batch(sqs: Any, ingest_url: str, messages: list[dict]) -> None:
    """Run one received batch; delete what succeeded (the rest comes back)."""
    from chalicelib import wiring

    event = {"Records": [lambda_record(m, ingest_url) for m in messages]}
    try:
        result = wiring.handle_ingest_batch(event)
        failed = {f["itemIdentifier"] for f in result.get("batchItemFailures", [])}
    except Exception as exc:
        print(f"ingest batch failed: {exc!r}", file=sys.stderr)
        failed = {m["MessageId"] for m in messages}
    done = [m for m in messages if m["MessageId"] not in failed]
    if done:
        sqs.delete_message_batch(
            QueueUrl=ingest_url,
            Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)
            ],
        )
