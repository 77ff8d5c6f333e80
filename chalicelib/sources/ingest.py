"""The ingest queue's consumer: each message becomes the event its trigger stores.

Two shapes arrive (see ``wiring``):

1. ``{"trigger_id", "event"}``: an EventBridge rule's input transformer wrapped the event
   exactly as AWS sends it (``eventbridge``, and S3's "Object Created" for ``s3``).
2. An SNS notification (``"Type": "Notification"``) whose ``Message`` is SES's "Received"
   notification: the message is in the mail bucket under ``inbound/<trigger id>/``.

A message is done (deleted) once its event is stored, deduped, filtered out, or can never
be stored (trigger gone or disabled, not ours); it is handed back for a retry only when
storing failed for a reason that may pass (``ServiceUnavailable``, AWS errors).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from chalicelib.domain.errors import Gone, ServiceUnavailable
from chalicelib.domain.records import Trigger
from chalicelib.domain.trigger_spec import TriggerSpec
from chalicelib.observability import logger, record_metric
from chalicelib.services import events
from chalicelib.sources.payloads import email_payload, s3_matches, s3_payload
from chalicelib.sources.wiring import mail_prefix
from chalicelib.store import triggers
from chalicelib.store.aws import client

__all__ = ["handle_batch", "handle_message"]


class _Retry(Exception):
    """Internal: hand the message back to the queue."""


def handle_batch(event: dict, *, now: datetime | None = None) -> dict:
    """An SQS batch (Lambda's shape); partial failures as ``batchItemFailures``."""
    failures = []
    for record in event.get("Records", []):
        try:
            handle_message(record.get("body") or "", now=now or datetime.now(UTC))
        except _Retry:
            failures.append({"itemIdentifier": record.get("messageId")})
    return {"batchItemFailures": failures}


def handle_message(body: str, *, now: datetime) -> str:
    """Ingest one message; returns the outcome (for logs and tests)."""
    try:
        doc = json.loads(body)
    except ValueError:
        return _dropped("not_json")
    if not isinstance(doc, dict):
        return _dropped("not_an_object")
    try:
        if doc.get("Type") == "Notification" and isinstance(doc.get("Message"), str):
            return _from_ses(json.loads(doc["Message"]), now=now)
        if isinstance(doc.get("trigger_id"), str) and isinstance(doc.get("event"), dict):
            return _from_eventbridge(doc["trigger_id"], doc["event"], now=now)
    except ServiceUnavailable as exc:
        logger.warning("ingest will retry", extra={"error": str(exc)})
        raise _Retry from None
    except (ClientError, BotoCoreError) as exc:
        logger.warning("ingest will retry", extra={"error": repr(exc)})
        raise _Retry from None
    except ValueError:
        return _dropped("malformed")
    return _dropped("unknown_shape")


def _dropped(why: str) -> str:
    record_metric("IngestDropped", reason=why)
    logger.info("ingest message dropped", extra={"reason": why})
    return why


def _trigger(trigger_id: str, source: str) -> tuple[Trigger, dict] | None:
    item = triggers.get_trigger(trigger_id)
    if item is None or item.kind != "event":
        return None
    event = TriggerSpec.from_json(item.spec).event or {}
    if event.get("source") != source:
        return None
    return item, event


def _store(item: Trigger, source: str, payload: dict, *, now: datetime) -> str:
    try:
        status, answer = events.ingest(item, source=source, payload=payload, now=now)
    except Gone:
        return _dropped("trigger_disabled")
    if answer.get("duplicate"):
        return "duplicate"
    if answer.get("ignored"):
        return "filtered"
    return "accepted" if status == 202 else f"status_{status}"


def _from_eventbridge(trigger_id: str, event: dict, *, now: datetime) -> str:
    item = triggers.get_trigger(trigger_id)
    if item is None:
        return _dropped("trigger_gone")
    source = TriggerSpec.from_json(item.spec).event_source
    if source == "eventbridge":
        return _store(item, "eventbridge", event, now=now)
    if source == "s3":
        found = _trigger(trigger_id, "s3")
        assert found is not None
        _, spec = found
        payload = s3_payload(event)
        if payload is None:
            return _dropped("not_object_created")
        if not s3_matches(
            payload, bucket=spec.get("bucket"), prefix=spec.get("prefix"), suffix=spec.get("suffix")
        ):
            return "filtered"
        return _store(item, "s3", payload, now=now)
    return _dropped("not_an_eventbridge_trigger")


def _from_ses(notification: Any, *, now: datetime) -> str:
    if not isinstance(notification, dict) or notification.get("notificationType") != "Received":
        return _dropped("not_a_received_mail")
    action = (notification.get("receipt") or {}).get("action") or {}
    bucket, key = action.get("bucketName"), action.get("objectKey")
    if action.get("type") != "S3" or not isinstance(bucket, str) or not isinstance(key, str):
        return _dropped("not_an_s3_action")
    prefix = action.get("objectKeyPrefix") or ""
    trigger_id = prefix.removeprefix("inbound/").rstrip("/")
    if not prefix or mail_prefix(trigger_id) != prefix:
        return _dropped("not_a_trigger_prefix")
    found = _trigger(trigger_id, "email")
    if found is None:
        return _dropped("trigger_gone")
    item, _ = found
    try:
        raw = client("s3").get_object(Bucket=bucket, Key=key)["Body"].read()
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
            return _dropped("mail_gone")
        raise
    payload = email_payload(notification, raw, s3_bucket=bucket, s3_key=key)
    return _store(item, "email", payload, now=now)
