"""Sending one message on one channel: email, Slack, a signed webhook, an SNS topic.

Each ``send_*`` raises ``ChannelFailed`` with a cause a person can act on (never a URL
or a secret); the worker retries, then records the notification ``failed`` with it.

- email: in AWS through SES from the stack's ``AlertSender``; in the local and test
  stages one ``.eml`` file a message in ``$CRONHOOK_DATA_DIR/outbox/``.
- slack: an incoming webhook (the URL is sealed in the policy), a readable message.
- webhook: a JSON POST signed with Standard Webhooks headers (the policy's secret).
- sns: ``Publish`` with the same JSON as the webhook and a subject.

Slack and webhook URLs go through the address policy of ``http:`` targets at the moment
of sending too (resolved once, pinned), not only when the policy was written.
"""

from __future__ import annotations

import json
import time
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from pathlib import Path
from typing import Any

from chalicelib.domain.alerts import describe, message_subject, message_text
from chalicelib.domain.signatures import sign_outbound
from chalicelib.settings import get_settings
from chalicelib.store import kms
from chalicelib.store.aws import client
from chalicelib.workflows.remote.addresses import TargetRefused
from chalicelib.workflows.remote.http_target import USER_AGENT, post_pinned

__all__ = ["ChannelFailed", "send", "channel_name", "seal_context", "payload_of"]

LOCAL_SENDER = "cronhook@localhost"


class ChannelFailed(Exception):
    """A channel did not take the message; the text says why."""


def seal_context(policy_id: str) -> str:
    """The KMS encryption context of a policy's secrets (never opens for a trigger)."""
    return f"alert:{policy_id}"


def channel_name(channel: dict, index: int) -> str:
    """How a notification names its channel: ``<type>#<position in the policy>``."""
    return f"{channel.get('type')}#{index}"


def payload_of(policy: dict, items: list[dict], *, test: bool = False) -> dict:
    """The JSON a webhook and an SNS topic receive."""
    console = get_settings().public_url
    return {
        "type": "cronhook.alert.test" if test else "cronhook.alert",
        "policy": {"id": policy.get("id"), "name": policy.get("name")},
        "count": len(items),
        "notifications": [describe(i) for i in items[:100]],
        "subject": message_subject(str(policy.get("name")), items),
        "text": message_text(str(policy.get("name")), items, console_url=console),
    }


def send(channel: dict, policy: dict, items: list[dict], *, message_id: str) -> None:
    """Send ``items`` (one notification, or a digest) on ``channel``."""
    kind = channel.get("type")
    try:
        if kind == "email":
            _email(channel, policy, items, message_id=message_id)
        elif kind == "slack":
            _slack(channel, policy, items)
        elif kind == "webhook":
            _webhook(channel, policy, items, message_id=message_id)
        elif kind == "sns":
            _sns(channel, policy, items)
        else:
            raise ChannelFailed(f"unknown channel type {kind!r}")
    except ChannelFailed:
        raise
    except TargetRefused as exc:
        raise ChannelFailed(f"address refused: {exc}") from None
    except TimeoutError:
        raise ChannelFailed("the channel did not answer in time") from None
    except Exception as exc:  # AWS errors, sockets, TLS: the type says why
        raise ChannelFailed(f"{type(exc).__name__}: {exc}"[:500]) from None


def _email(channel: dict, policy: dict, items: list[dict], *, message_id: str) -> None:
    settings = get_settings()
    name = str(policy.get("name"))
    subject = message_subject(name, items)
    text = message_text(name, items, console_url=settings.public_url)
    recipients = list(channel.get("to") or [])
    if settings.stage in ("local", "test"):
        _write_eml(settings.outbox_dir, recipients, subject, text, message_id=message_id)
        return
    if not settings.alert_sender:
        raise ChannelFailed("no AlertSender is configured for email alerts")
    client("ses").send_email(
        Source=settings.alert_sender,
        Destination={"ToAddresses": recipients},
        Message={
            "Subject": {"Data": subject, "Charset": "UTF-8"},
            "Body": {"Text": {"Data": text, "Charset": "UTF-8"}},
        },
    )


def _write_eml(outbox: str, to: list[str], subject: str, text: str, *, message_id: str) -> Path:
    """One ``.eml`` file a message (written whole, then renamed: a reader never sees half)."""
    message = EmailMessage()
    message["From"] = get_settings().alert_sender or LOCAL_SENDER
    message["To"] = ", ".join(to)
    message["Subject"] = subject
    message["Date"] = formatdate(usegmt=True)
    message["Message-ID"] = make_msgid(idstring=message_id, domain="cronhook.local")
    message.set_content(text)
    folder = Path(outbox)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{int(time.time() * 1000):013d}-{message_id}.eml"
    partial = path.with_suffix(".part")
    partial.write_bytes(bytes(message))
    partial.replace(path)
    return path


def _unsealed(policy: dict, sealed: str | None) -> str:
    if not sealed:
        raise ChannelFailed("the channel's secret is missing; set the channel again")
    try:
        return kms.unseal(sealed, trigger_id=seal_context(str(policy["id"])), now_s=time.time())
    except ValueError:
        raise ChannelFailed("the channel's secret does not open; set the channel again") from None


def _post_json(url: str, body: bytes, headers: dict[str, str]) -> None:
    status, answer = post_pinned(
        url, body, {**headers, "Content-Type": "application/json", "User-Agent": USER_AGENT}
    )
    if not 200 <= status < 300:
        snippet = answer[:200].decode("utf-8", "replace").strip()
        raise ChannelFailed(f"answered {status}{': ' + snippet if snippet else ''}")


def _slack(channel: dict, policy: dict, items: list[dict]) -> None:
    url = _unsealed(policy, channel.get("webhook_url_sealed"))
    name = str(policy.get("name"))
    text = message_text(name, items, console_url=get_settings().public_url)
    subject = message_subject(name, items)
    body = {
        "text": subject,
        "blocks": [
            {"type": "header", "text": {"type": "plain_text", "text": subject[:150]}},
            {"type": "section", "text": {"type": "mrkdwn", "text": text[:2900]}},
        ],
    }
    _post_json(url, json.dumps(body).encode(), {})


def _webhook(channel: dict, policy: dict, items: list[dict], *, message_id: str) -> None:
    secret = _unsealed(policy, policy.get("signing_secret_sealed"))
    body = json.dumps(payload_of(policy, items, test=_is_test(items))).encode()
    # The signature's timestamp is the wall clock at sending (receivers refuse a stale one).
    headers = sign_outbound(secret, msg_id=message_id, timestamp=int(time.time()), body=body)
    _post_json(str(channel.get("url")), body, headers)


def _sns(channel: dict, policy: dict, items: list[dict]) -> None:
    payload = payload_of(policy, items, test=_is_test(items))
    client("sns").publish(
        TopicArn=str(channel.get("topic_arn")),
        Subject=_sns_subject(payload["subject"]),
        Message=json.dumps(payload),
        MessageAttributes={
            "kind": {"DataType": "String", "StringValue": str(items[0].get("kind"))},
        },
    )


def _sns_subject(subject: str) -> str:
    # SNS subjects: at most 100 ASCII characters, no line breaks.
    ascii_only = subject.encode("ascii", "replace").decode("ascii").replace("\n", " ")
    return ascii_only[:100]


def _is_test(items: list[Any]) -> bool:
    return bool(items) and all(i.get("kind") == "test" for i in items)
