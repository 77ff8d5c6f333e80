"""The local stack's inbound mail: SMTP on ``CRONHOOK_SMTP_PORT`` (2525), received the way SES does.

SES, for a message whose recipient matches a rule of the active receipt rule set, runs
the rule's S3 action: it stores the raw message at ``<prefix><SES message id>`` in the
bucket and publishes a "Received" notification (``mail`` and ``receipt``, no content) to
the action's topic. Here the listener does the same against the embedded AWS, reading
the rules from its SES, so ``smtplib.SMTP("127.0.0.1", 2525).send_message(...)`` runs an
``email`` trigger through the same ingest as in AWS.
"""

from __future__ import annotations

import email
import email.policy
import json
import secrets
import sys
from datetime import UTC, datetime
from typing import Any

__all__ = ["MailListener", "recipient_matches", "ses_notification"]


def recipient_matches(rule_recipient: str, address: str) -> bool:
    """SES's rule recipients: an address, a domain, or ``.domain`` for its subdomains."""
    wanted = rule_recipient.casefold()
    address = address.casefold()
    domain = address.rpartition("@")[2]
    if "@" in wanted:
        return address == wanted
    if wanted.startswith("."):
        return domain.endswith(wanted)
    return domain == wanted


def ses_notification(
    raw: bytes,
    *,
    mail_from: str,
    recipients: list[str],
    matched: list[str],
    message_id: str,
    action: dict,
    now: datetime,
) -> dict:
    """SES's "Received" notification for a message stored by an S3 action."""
    message = email.message_from_bytes(raw, policy=email.policy.default)
    headers = [{"name": k, "value": str(v)} for k, v in message.items()]

    def addrs(name: str) -> list[str]:
        return [str(v) for v in message.get_all(name, [])]

    stamp = now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"
    common: dict[str, Any] = {
        "returnPath": mail_from,
        "from": addrs("from"),
        "date": str(message.get("date") or ""),
        "to": addrs("to"),
        "messageId": str(message.get("message-id") or ""),
        "subject": str(message.get("subject") or ""),
    }
    if message.get("cc"):
        common["cc"] = addrs("cc")
    pass_ = {"status": "PASS"}
    return {
        "notificationType": "Received",
        "mail": {
            "timestamp": stamp,
            "source": mail_from,
            "messageId": message_id,
            "destination": recipients,
            "headersTruncated": False,
            "headers": headers,
            "commonHeaders": common,
        },
        "receipt": {
            "timestamp": stamp,
            "processingTimeMillis": 1,
            "recipients": matched,
            "spamVerdict": pass_,
            "virusVerdict": pass_,
            "spfVerdict": {"status": "GRAY"},
            "dkimVerdict": {"status": "GRAY"},
            "dmarcVerdict": {"status": "GRAY"},
            "action": action,
        },
    }


class _Handler:
    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        try:
            deliver(
                envelope.content if isinstance(envelope.content, bytes) else b"",
                mail_from=envelope.mail_from or "",
                recipients=list(envelope.rcpt_tos),
            )
        except Exception as exc:  # a 451 makes the sender retry, as SES's would
            print(f"inbound mail failed: {exc!r}", file=sys.stderr)
            return "451 Requested action aborted: local error in processing"
        return "250 OK"


def deliver(raw: bytes, *, mail_from: str, recipients: list[str]) -> int:
    """Run the active rule set's S3 actions for one message; how many rules matched."""
    from chalicelib.store.aws import client

    ses, s3, sns = client("ses"), client("s3"), client("sns")
    active = ses.describe_active_receipt_rule_set()
    matched_rules = 0
    now = datetime.now(UTC)
    for rule in active.get("Rules", []):
        if not rule.get("Enabled", True):
            continue
        wanted = rule.get("Recipients") or []
        matched = [
            r for r in recipients if not wanted or any(recipient_matches(w, r) for w in wanted)
        ]
        if not matched:
            continue
        for action in rule.get("Actions", []):
            s3_action = action.get("S3Action")
            if not s3_action:
                continue
            message_id = secrets.token_hex(20)
            prefix = s3_action.get("ObjectKeyPrefix", "")
            key = prefix + message_id
            s3.put_object(Bucket=s3_action["BucketName"], Key=key, Body=raw)
            matched_rules += 1
            topic = s3_action.get("TopicArn")
            if not topic:
                continue
            notification = ses_notification(
                raw,
                mail_from=mail_from,
                recipients=recipients,
                matched=matched,
                message_id=message_id,
                action={
                    "type": "S3",
                    "topicArn": topic,
                    "bucketName": s3_action["BucketName"],
                    "objectKeyPrefix": prefix,
                    "objectKey": key,
                },
                now=now,
            )
            sns.publish(
                TopicArn=topic,
                Subject="Amazon SES Email Receipt Notification",
                Message=json.dumps(notification),
            )
    return matched_rules


class MailListener:
    """aiosmtpd on a port, in its own thread; ``stop`` closes it."""

    def __init__(self, host: str, port: int):
        from aiosmtpd.controller import Controller

        self.controller = Controller(_Handler(), hostname=host, port=port)

    def start(self) -> None:
        self.controller.start()

    def stop(self) -> None:
        self.controller.stop()
