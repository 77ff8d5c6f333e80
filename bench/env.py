"""The benchmarks' AWS: one moto server in this process, fresh resources per benchmark.

The same setup as the ``aws`` test fixture (tests/conftest.py), without pytest.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

__all__ = ["MotoEnv", "Clock"]

ROOT_KEY = "chr_bench_root_key"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Clock:
    """A clock the benchmark moves by hand."""

    def __init__(self, at: datetime):
        self.at = at

    def __call__(self) -> datetime:
        return self.at

    def advance(self, seconds: float) -> datetime:
        from datetime import timedelta

        self.at = self.at + timedelta(seconds=seconds)
        return self.at


@dataclass
class MotoEnv:
    """A moto server and the resources of the current benchmark."""

    endpoint: str = ""
    queue_url: str = ""
    server: Any = None

    def start(self) -> MotoEnv:
        from devstack.keep_alive import KeepAliveMotoServer
        from devstack.moto_atomic import make_dynamodb_atomic

        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        make_dynamodb_atomic()
        for name, value in {
            "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench",
            "AWS_DEFAULT_REGION": "us-east-1",
        }.items():
            os.environ.setdefault(name, value)
        os.environ.pop("AWS_PROFILE", None)
        port = _free_port()
        # Connections kept between calls, as botocore keeps them with AWS's endpoints: a
        # new connection per call was counted in the measured CPU of every invocation.
        self.server = KeepAliveMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
        self.server.start()
        self.endpoint = f"http://127.0.0.1:{port}"
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None

    def fresh(self, **settings: str) -> MotoEnv:
        """Reset the server; create tables, queue, bucket and key; point settings at them."""
        import requests

        requests.post(f"{self.endpoint}/moto-api/reset", timeout=30)
        os.environ.update(
            {
                "CRONHOOK_AWS_ENDPOINT": self.endpoint,
                "CRONHOOK_STAGE": "bench",
                # The bench drives the built-in echo workflow (off by default outside local).
                "CRONHOOK_BUILTIN_WORKFLOWS": "1",
                "CRONHOOK_TABLE_PREFIX": "cronhook-bench-",
                "CRONHOOK_API_KEY": ROOT_KEY,
                "CRONHOOK_MIN_INTERVAL_S": "60",
                "CRONHOOK_PUBLIC_URL": "http://127.0.0.1:8000",
                **settings,
            }
        )
        from chalicelib.settings import reset_settings
        from chalicelib.store.aws import client, reset_clients

        reset_settings()
        reset_clients()
        sqs = client("sqs")
        dlq = sqs.create_queue(QueueName="cronhook-fires-dlq")["QueueUrl"]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        self.queue_url = sqs.create_queue(
            QueueName="cronhook-fires",
            Attributes={
                "RedrivePolicy": json.dumps(
                    {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "5"}
                )
            },
        )["QueueUrl"]
        client("s3").create_bucket(Bucket="cronhook-bench-payloads")
        key_id = client("kms").create_key(Description="bench")["KeyMetadata"]["KeyId"]
        os.environ.update(
            {
                "CRONHOOK_QUEUE_URL": self.queue_url,
                "CRONHOOK_BUCKET": "cronhook-bench-payloads",
                "CRONHOOK_KMS_KEY_ID": key_id,
            }
        )
        reset_settings()
        from chalicelib import wiring
        from chalicelib.store.tables import create_tables

        wiring.ready()
        create_tables()
        return self

    # -- the queue, as Lambda's event source mapping sees it -------------------------

    def make_visible(self, now: Any = None) -> None:
        """Make delayed messages visible now: moto honours DelaySeconds in real time.

        With ``now`` (the bench's clock) only the fires due by then (their slot within a
        second) are made visible: a fire is never run ahead of its time.
        """
        import json

        from moto.sqs.models import sqs_backends

        due_ms = None if now is None else int(now.timestamp() * 1000) + 1000
        for backend in sqs_backends.values():
            for region_backend in backend.values():
                for queue in region_backend.queues.values():
                    for message in queue._messages:
                        if due_ms is not None:
                            body = json.loads(message.body)
                            at = body.get("at")
                            if body.get("k") == "schedule" and at is not None and at > due_ms:
                                # Not due at the bench's now: hidden, however long the
                                # run has taken in real time (moto's delay is real).
                                message.delayed_until = time.time() * 1000 + 3_600_000  # moto: ms
                                continue
                        message.delayed_until = 0

    def purge_queue(self) -> None:
        """Drop every queued message (between repeats of a measurement)."""
        from chalicelib.store.aws import client

        client("sqs").purge_queue(QueueUrl=self.queue_url)

    def poll_batches(
        self,
        handle_batch: Callable[[list[dict]], None],
        *,
        batch_size: int = 10,
        now: Any = None,
    ) -> int:
        """Receive, hand each batch to ``handle_batch``, delete it; until the queue is empty.

        Like the event source mapping: ReceiveMessage for up to ``batch_size``, one
        invocation per batch, DeleteMessageBatch for what succeeded.
        """
        from chalicelib.store.aws import client

        sqs = client("sqs")
        batches = 0
        while True:
            self.make_visible(now)
            messages = sqs.receive_message(
                QueueUrl=self.queue_url,
                MaxNumberOfMessages=batch_size,
                VisibilityTimeout=600,
                AttributeNames=["All"],
            ).get("Messages", [])
            if not messages:
                return batches
            batches += 1
            handle_batch(messages)
            sqs.delete_message_batch(
                QueueUrl=self.queue_url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                    for i, m in enumerate(messages)
                ],
            )
