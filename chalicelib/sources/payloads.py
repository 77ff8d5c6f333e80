"""What a run of a delivered-source trigger gets as its payload (pure; no AWS, no clock).

- ``eventbridge``: the event exactly as EventBridge delivered it.
- ``s3``: bucket, key, size, etag, version, sequencer, reason and time of the object
  created (never its bytes), and the "Object Created" event as delivered (``event``).
- ``email``: sender, recipients, subject, date, Message-ID, the text body clipped to
  ``TEXT_LIMIT_CHARS``, attachments listed (name, type, size), and SES's ``mail`` and
  ``receipt`` objects from its notification. The message itself stays in S3 (``s3``).
"""

from __future__ import annotations

import email
import email.policy
from email.message import EmailMessage
from email.utils import getaddresses
from typing import Any

__all__ = ["TEXT_LIMIT_CHARS", "s3_payload", "s3_matches", "email_payload"]

# The text of a message a run sees: enough for a workflow to act on, small enough that
# the event is stored inline and fits a prompt (attachments are only listed).
TEXT_LIMIT_CHARS = 16 * 1024


def s3_payload(event: dict) -> dict | None:
    """The payload of an S3 "Object Created" EventBridge event, or None for anything else."""
    if event.get("source") != "aws.s3" or event.get("detail-type") != "Object Created":
        return None
    detail = event.get("detail") or {}
    obj = detail.get("object") or {}
    bucket = (detail.get("bucket") or {}).get("name")
    key = obj.get("key")
    if not isinstance(bucket, str) or not isinstance(key, str):
        return None
    return {
        "bucket": bucket,
        "key": key,
        "size": obj.get("size"),
        "etag": obj.get("etag"),
        "version": obj.get("version-id"),
        "sequencer": obj.get("sequencer"),
        "reason": detail.get("reason"),
        "time": event.get("time"),
        "event": event,
    }


def s3_matches(
    payload: dict, *, bucket: str | None, prefix: str | None, suffix: str | None
) -> bool:
    """The trigger's bucket, prefix and suffix (the rule's pattern holds only one of them)."""
    key = payload.get("key") or ""
    return (
        payload.get("bucket") == bucket
        and key.startswith(prefix or "")
        and key.endswith(suffix or "")
    )


def _addresses(message: EmailMessage, *names: str) -> list[str]:
    values = [str(v) for name in names for v in message.get_all(name, [])]
    return [addr.lower() for _, addr in getaddresses(values) if addr]


def email_payload(notification: dict, raw: bytes, *, s3_bucket: str, s3_key: str) -> dict:
    """The payload of a message SES received (its notification and the stored message)."""
    message = email.message_from_bytes(raw, policy=email.policy.default)
    assert isinstance(message, EmailMessage)
    mail = notification.get("mail") or {}
    common = mail.get("commonHeaders") or {}
    senders = _addresses(message, "from") or [str(mail.get("source", "")).lower()]
    recipients = list(dict.fromkeys([*(a.lower() for a in mail.get("destination", []))]))
    for addr in _addresses(message, "to", "cc"):
        if addr not in recipients:
            recipients.append(addr)
    text, attachments = _text_and_attachments(message)
    message_id = (message.get("message-id") or common.get("messageId") or "").strip()
    return {
        "message_id": message_id or str(mail.get("messageId", "")),
        "from": senders[0] if senders else None,
        "to": recipients,
        "subject": str(message.get("subject") or common.get("subject") or ""),
        "date": str(message.get("date") or common.get("date") or ""),
        "text": text[:TEXT_LIMIT_CHARS],
        "text_truncated": len(text) > TEXT_LIMIT_CHARS,
        "attachments": attachments,
        "s3": {"bucket": s3_bucket, "key": s3_key},
        "mail": mail,
        "receipt": notification.get("receipt") or {},
    }


def _text_and_attachments(message: EmailMessage) -> tuple[str, list[dict[str, Any]]]:
    body = message.get_body(preferencelist=("plain", "html"))
    text = ""
    if body is not None:
        try:
            text = body.get_content()
        except (LookupError, ValueError):  # an unknown charset: show what decodes
            payload = body.get_payload(decode=True)
            text = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else ""
    attachments = []
    for part in message.iter_attachments():
        data = part.get_payload(decode=True)
        attachments.append(
            {
                "filename": part.get_filename(),
                "content_type": part.get_content_type(),
                "size": len(data) if isinstance(data, bytes) else 0,
            }
        )
    return str(text), attachments
