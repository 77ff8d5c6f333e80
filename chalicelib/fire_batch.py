"""The runner's Lambda: a batch of fire messages, run concurrently, with partial failures.

``wiring.handle_sqs_batch`` (the Lambda handler) sets up and calls ``run_batch``.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from botocore.exceptions import BotoCoreError, ClientError

from chalicelib import assembly
from chalicelib.observability import (
    ID_KEYS,
    FireMetrics,
    fire_metrics_batch,
    logger,
    record_metric,
)
from chalicelib.services.runner import RESEND_FROM_RECEIVE, start_margin_ms, time_left_ms
from chalicelib.settings import get_settings
from chalicelib.store.aws import client
from chalicelib.store.sqs import FireMessage, send_fires

__all__ = ["NotStarted", "HAND_BACK_VISIBILITY_S", "run_batch"]


class NotStarted(Exception):
    """A fire message handed back to the queue un-started: a batch item failure, not a run."""


# A message handed back becomes visible again at once (ChangeMessageVisibility), for
# another invocation to run with its full time: waiting out the queue's own visibility
# timeout (settings.queue_visibility_s, counted from the receive) would eat into the
# claim's lease, and the claim could be reaped as lost.
HAND_BACK_VISIBILITY_S = 0


def run_batch(
    event: dict, context: Any = None, *, runner: Any = None, concurrency: int | None = None
) -> dict:
    """Run a batch of fire messages with partial batch failures (powertools' batch utility).

    The messages run concurrently, each on a thread of its own (at most ``concurrency``,
    by default one per message) and each behind its own fences (the start fence, the
    settle): a message that fails is reported alone, the others are not held up.
    Before a thread starts any message but the invocation's first, the time left in the
    invocation (``context``; no context, no limit) must be at least
    ``runner.start_margin_ms()``; a message with less is handed back un-started (see
    ``_hand_back``). With a thread per message they all start at once; with fewer, a
    message that waited for a thread may find too little time left.
    """
    runner = runner or assembly.build_runner()
    records = list(event.get("Records") or [])
    start = _StartGate(context, margin_ms=start_margin_ms(), time_left_ms=time_left_ms)
    # The fires' metrics, printed once for the whole batch (``observability``).
    gathered = FireMetrics()
    try:
        outcomes = _run_concurrently(
            [
                functools.partial(_run_record, r, runner=runner, start=start, gathered=gathered)
                for r in records
            ],
            threads=concurrency or len(records),
        )
    finally:
        gathered.flush()
    by_id = {r.get("messageId"): outcome for r, outcome in zip(records, outcomes, strict=True)}

    def record_handler(record: Any) -> str:
        outcome = by_id[record.message_id]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    processor = BatchProcessor(event_type=EventType.SQS)
    return dict(
        process_partial_response(
            event=event, record_handler=record_handler, processor=processor, context=context
        )
    )


class _StartGate:
    """The time-budget rule, shared by a batch's threads: the invocation's first message
    always starts; any other only with ``margin_ms`` left."""

    def __init__(self, context: Any, *, margin_ms: int, time_left_ms: Callable[[Any], int | None]):
        self.context, self.margin_ms, self._time_left_ms = context, margin_ms, time_left_ms
        self._lock = threading.Lock()
        self.attempted = 0  # messages this invocation went on to run

    def left_ms(self) -> int | None:
        """None if the message may start (and counts it started), else the time left."""
        with self._lock:
            left = self._time_left_ms(self.context) if self.attempted else None
            if left is not None and left < self.margin_ms:
                return left
            self.attempted += 1
            return None


def _run_concurrently(jobs: list[Callable[[], Any]], *, threads: int) -> list[Any]:
    """Each job's result, or the exception it raised, in order; at most ``threads`` at once."""
    if not jobs:
        return []

    def guarded(job: Callable[[], Any]) -> Any:
        try:
            return job()
        except Exception as exc:  # reported as this record's failure, after all ran
            return exc

    if threads <= 1 or len(jobs) == 1:
        return [guarded(job) for job in jobs]
    with ThreadPoolExecutor(max_workers=min(threads, len(jobs))) as pool:
        return list(pool.map(guarded, jobs))


def _run_record(
    raw: dict, *, runner: Any, start: _StartGate, gathered: FireMetrics | None = None
) -> str:
    with fire_metrics_batch(gathered):
        return _run_one(raw, runner=runner, start=start)


def _run_one(raw: dict, *, runner: Any, start: _StartGate) -> str:
    record = SQSRecord(raw)
    message = FireMessage.parse(record.body)
    # Every log line of this run carries its ids (context keys: thread-safe).
    ids = {"trigger_id": message.trigger_id, "run_id": message.run_id}
    if message.event_id:
        ids["event_id"] = message.event_id
    logger.thread_safe_append_keys(**ids)
    try:
        left_ms = start.left_ms()
        if left_ms is not None:
            return _hand_back(record, message, left_ms=left_ms, margin_ms=start.margin_ms)
        status = runner.handle(message)
        logger.info("fire handled", extra={"status": status, "surface": message.surface})
        return str(status)
    finally:
        # All of them: the runner may have named another run (a standing row's pointer
        # slot, the queue's head) or event than the message did.
        logger.thread_safe_remove_keys(list(ID_KEYS))


def _hand_back(record: Any, message: Any, *, left_ms: int, margin_ms: int) -> str:
    """Give a message back to the queue without starting it (too little time left).

    Nothing of the run is touched: no start fence, no claim, no run recorded or counted;
    the claim (taken by the heartbeat or the ingress) stays as it was, un-started, and
    the message's next delivery starts it as if it were the first. Usually the message is
    made visible again at once and reported as a batch item failure. One received
    ``RESEND_FROM_RECEIVE`` times already is sent again as a fresh message and this one
    acknowledged instead (a receive count that only grows would dead-letter it).
    """
    receives = _receive_count(record)
    how = "visibility"
    if receives >= RESEND_FROM_RECEIVE and not send_fires([message]):
        how = "resent"
    elif not _visible_again(record):
        how = "visibility_timeout"  # comes back when the queue's visibility timeout ends
    record_metric("RunsHandedBack", surface=message.surface)
    logger.warning(
        "too little time left in this invocation to start the fire: handed back to the "
        "queue, not started",
        extra={
            "surface": message.surface,
            "time_left_ms": left_ms,
            "margin_ms": margin_ms,
            "receive_count": receives,
            "how": how,
        },
    )
    if how == "resent":
        return "handed_back"
    raise NotStarted(f"handed back un-started: {left_ms} ms left, {margin_ms} ms needed")


def _receive_count(record: Any) -> int:
    try:
        return int(record.attributes.approximate_receive_count)
    except (AttributeError, KeyError, TypeError, ValueError):
        return 1


def _visible_again(record: Any) -> bool:
    """Make a received message visible again now; False if that could not be done."""
    queue_url = get_settings().queue_url
    if not queue_url:
        return False
    try:
        client("sqs").change_message_visibility(
            QueueUrl=queue_url,
            ReceiptHandle=record.receipt_handle,
            VisibilityTimeout=HAND_BACK_VISIBILITY_S,
        )
    except (BotoCoreError, ClientError) as exc:
        logger.warning(
            "could not make a handed-back message visible again", extra={"error": str(exc)}
        )
        return False
    return True
