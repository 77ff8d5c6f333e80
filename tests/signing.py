"""Webhook deliveries as each provider sends them, signed with the providers' own SDKs.

Shared by the functional ingress tests and the end-to-end webhook tests.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from datetime import UTC, datetime

import standardwebhooks
import stripe
from slack_sdk.signature import SignatureVerifier

SOURCES = ("webhook", "github", "stripe", "slack", "standard", "shopify")

# Secrets the provider issues (event.secret is required for these on create).
ISSUED_SECRETS = {
    "stripe": "whsec_test_5bZy3nSfO2iNrR1ZyQd3Zc9G",
    "slack": "8f742231b10e8888abcd99yyyzzz85a5",
    "shopify": "shpss_0123456789abcdef0123456789abcdef",
}

# The GitHub docs' test vector ("Validating webhook deliveries").
GITHUB_VECTOR = {
    "secret": "It's a Secret to Everybody",
    "body": b"Hello, World!",
    "signature": "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
}


def delivery_body(source: str, delivery: str, **extra: object) -> bytes:
    """A realistic JSON body for ``source`` whose provider delivery id is ``delivery``."""
    if source == "stripe":
        doc: dict = {"id": delivery, "object": "event", "type": "invoice.paid"}
    elif source == "slack":
        doc = {
            "type": "event_callback",
            "event_id": delivery,
            "event": {"type": "app_mention", "text": "hi ☕"},
        }
    elif source == "github":
        doc = {"ref": "refs/heads/main", "repository": {"full_name": "acme/widgets"}}
    elif source == "shopify":
        doc = {"id": 820982911946154508, "currency": "EUR", "financial_status": "paid"}
    else:
        doc = {"type": "build.finished", "status": "success", "note": "café ☕"}
    doc.update(extra)
    return json.dumps(doc).encode()


def signed_headers(
    source: str, secret: str, body: bytes, *, ts: int, delivery: str | None = None
) -> dict[str, str]:
    """The headers the provider would send with ``body``, signed at ``ts`` (epoch seconds)."""
    headers = {"Content-Type": "application/json"}
    if source == "webhook":
        digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        headers["X-Signature-256"] = f"sha256={digest}"
        if delivery:
            headers["Idempotency-Key"] = delivery
    elif source == "github":
        digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        headers.update(
            {
                "X-Hub-Signature-256": f"sha256={digest}",
                "X-GitHub-Event": "push",
                "X-GitHub-Delivery": delivery or "72d3162e-cc78-11e3-81ab-4c9367dc0958",
            }
        )
    elif source == "stripe":
        headers["Stripe-Signature"] = stripe.WebhookSignature.generate_signature_header(
            payload=body.decode(), secret=secret, timestamp=ts
        )
    elif source == "slack":
        signature = SignatureVerifier(secret).generate_signature(timestamp=str(ts), body=body)
        assert signature is not None
        headers.update({"X-Slack-Request-Timestamp": str(ts), "X-Slack-Signature": signature})
    elif source == "standard":
        msg_id = delivery or "msg_2mVvRj8NhC2bbmdyEQkKwyZlCtH"
        signature = standardwebhooks.Webhook(secret).sign(
            msg_id, datetime.fromtimestamp(ts, UTC), body.decode()
        )
        headers.update(
            {"webhook-id": msg_id, "webhook-timestamp": str(ts), "webhook-signature": signature}
        )
    elif source == "shopify":
        digest = hmac.new(secret.encode(), body, hashlib.sha256).digest()
        headers.update(
            {
                "X-Shopify-Hmac-Sha256": base64.b64encode(digest).decode(),
                "X-Shopify-Topic": "orders/paid",
                "X-Shopify-Webhook-Id": delivery or "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043",
            }
        )
    else:
        raise ValueError(source)
    return headers
