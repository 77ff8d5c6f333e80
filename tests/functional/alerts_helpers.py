"""Helpers of the alert tests: the alerts queue on the moto server, driven by hand, and a
local HTTP receiver standing in for Slack and a team's webhook."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from email import message_from_bytes
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from chalicelib.services.alerts import worker
from chalicelib.store.aws import client

__all__ = ["AlertsQueue", "Receiver", "outbox", "subjects"]


class AlertsQueue:
    """The alerts queue: drained through the worker at an explicit ``now``."""

    def __init__(self, url: str):
        self.url = url
        self.done: list[str] = []

    def _make_visible(self) -> None:
        from moto.sqs.models import sqs_backends

        for backend in sqs_backends.values():
            for region in backend.values():
                for queue in region.queues.values():
                    if queue.name == "cronhook-alerts":
                        for message in queue._messages:
                            message.delayed_until = 0

    def drain(self, now: datetime, *, rounds: int = 200) -> list[str]:
        """Handle every message (delays ignored) at ``now``; an early flush stays queued."""
        sqs = client("sqs")
        handled: list[str] = []
        for _ in range(rounds):
            self._make_visible()
            answer = sqs.receive_message(
                QueueUrl=self.url, MaxNumberOfMessages=10, VisibilityTimeout=600
            )
            messages = answer.get("Messages", [])
            if not messages:
                break
            progressed = False
            for m in messages:
                try:
                    handled.append(worker.handle_message(m["Body"], now=now, sleep=lambda s: None))
                    sqs.delete_message(QueueUrl=self.url, ReceiptHandle=m["ReceiptHandle"])
                    progressed = True
                except worker.Retry:  # a flush before its minute ended: it stays queued
                    sqs.change_message_visibility(
                        QueueUrl=self.url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0
                    )
            if not progressed:
                break
        self.done.extend(handled)
        return handled

    def deliver(self, now: datetime) -> list[str]:
        """The transitions at ``now``, then their minute's flushes (70 s later)."""
        first = self.drain(now)
        return first + self.drain(now + timedelta(seconds=70))

    def depth(self) -> int:
        attrs = client("sqs").get_queue_attributes(
            QueueUrl=self.url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesDelayed"],
        )["Attributes"]
        return int(attrs["ApproximateNumberOfMessages"]) + int(
            attrs["ApproximateNumberOfMessagesDelayed"]
        )


Answer = Callable[[str, dict, bytes], int]


class Receiver:
    """A local HTTP server keeping every POST; its status comes from ``answer``."""

    def __init__(self, answer: Answer | None = None):
        self.requests: list[tuple[str, dict, bytes]] = []
        self.answer = answer or (lambda path, headers, body: 200)
        outer = self

        class _Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                outer.requests.append((self.path, headers, body))
                status = outer.answer(self.path, headers, body)
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def bodies(self) -> list[Any]:
        return [json.loads(body) for _, _, body in self.requests]


def outbox(data_dir: Path) -> list[Path]:
    """The ``.eml`` files written, oldest first."""
    folder = data_dir / "outbox"
    return sorted(folder.glob("*.eml")) if folder.exists() else []


def subjects(data_dir: Path) -> list[str]:
    return [str(message_from_bytes(p.read_bytes())["Subject"]) for p in outbox(data_dir)]
