"""Deliveries signed as each provider signs them (its own SDK where there is one), for the
signature tests: the secrets, the clock, the bodies, and ``check``/``rejected`` around ``verify``."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from datetime import UTC, datetime

import pytest
import standardwebhooks
import standardwebhooks.webhooks
import stripe
from slack_sdk.signature import SignatureVerifier

from chalicelib.domain.errors import InvalidSignature
from chalicelib.domain.signatures import (
    verify,
)

NOW = 1_750_000_000.0  # 2025-06-15T15:06:40Z, a constant: the domain never reads the clock
SIGNED_AT = int(NOW) - 42
BODY = json.dumps({"id": "evt_1", "type": "push", "note": "café ☕"}).encode()
BODY_IDS = json.dumps({"id": "evt_1", "event_id": "Ev1", "type": "x"}).encode()

SECRETS = {
    "webhook": "whsec_generic-cronhook-secret",
    "github": "It's a Secret to Everybody",
    "stripe": "whsec_test_5bZy3nSfO2iNrR1ZyQd3Zc9G",
    "slack": "8f742231b10e8888abcd99yyyzzz85a5",
    "standard": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    "shopify": "shpss_0123456789abcdef0123456789abcdef",
    "linkedin": "WPL_AP1.li-client-secret.AbC123==",
}
OTHER_SECRETS = {
    "webhook": "whsec_another-secret",
    "github": "not the secret",
    "stripe": "whsec_test_otherOtherOtherOther",
    "slack": "00000000000000000000000000000000",
    "standard": "whsec_" + base64.b64encode(b"k" * 32).decode(),
    "shopify": "shpss_ffffffffffffffffffffffffffffffff",
    "linkedin": "WPL_AP1.another-client-secret==",
}
TIMESTAMPED = ("stripe", "slack", "standard")


def signed_headers(source: str, secret: str, body: bytes, *, ts: int = SIGNED_AT) -> dict[str, str]:
    """Headers as the provider would send them, signed with the provider's own tooling."""
    if source == "webhook":
        digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        return {"X-Signature-256": f"sha256={digest}"}
    if source == "github":
        # GitHub docs, "Validating webhook deliveries": sha256= + hex HMAC of the payload.
        digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        return {"X-Hub-Signature-256": f"sha256={digest}", "X-GitHub-Delivery": "d-1"}
    if source == "stripe":
        header = stripe.WebhookSignature.generate_signature_header(
            payload=body.decode(), secret=secret, timestamp=ts
        )
        return {"Stripe-Signature": header}
    if source == "slack":
        signature = SignatureVerifier(secret).generate_signature(timestamp=str(ts), body=body)
        assert signature is not None
        return {"X-Slack-Request-Timestamp": str(ts), "X-Slack-Signature": signature}
    if source == "standard":
        msg_id = "msg_2mVvRj8NhC2bbmdyEQkKwyZlCtH"
        signature = standardwebhooks.Webhook(secret).sign(
            msg_id, datetime.fromtimestamp(ts, UTC), body.decode()
        )
        return {"webhook-id": msg_id, "webhook-timestamp": str(ts), "webhook-signature": signature}
    if source == "shopify":
        # Shopify docs, "Verify a webhook": base64 of the HMAC-SHA256 digest of the raw body.
        digest = hmac.new(secret.encode(), body, hashlib.sha256).digest()
        return {"X-Shopify-Hmac-Sha256": base64.b64encode(digest).decode()}
    if source == "linkedin":
        # LinkedIn, "Webhook validation": hex HMAC-SHA256 of "hmacsha256=" + the POST body,
        # keyed with the app's clientSecret.
        digest = hmac.new(secret.encode(), b"hmacsha256=" + body, hashlib.sha256).hexdigest()
        return {"X-LI-Signature": digest}
    raise AssertionError(source)


def check(source: str, headers: dict[str, str], *, body: bytes = BODY, secrets=None, now=NOW):
    verify(
        source,
        secrets=[SECRETS[source]] if secrets is None else secrets,
        headers=headers,
        body=body,
        now=now,
    )


def rejected(source: str, headers: dict[str, str], **kwargs) -> InvalidSignature:
    with pytest.raises(InvalidSignature) as info:
        check(source, headers, **kwargs)
    return info.value
