"""Verify a delivery with its source's documented recipe; make a secret for a source.

Pure: the clock is the keyword argument ``now`` (epoch seconds), secrets and headers are
arguments. Every rejection is a bare ``InvalidSignature()``: the client learns nothing
about *why* (unknown token, missing header, stale timestamp and wrong signature all look
alike, see CONTRACT "Ingress"). The cause is kept on the exception as ``reason`` for
logs; it never contains a secret or an expected signature.
"""

from __future__ import annotations

import base64
import secrets as _random
from collections.abc import Mapping

from chalicelib.domain.errors import ValidationError
from chalicelib.domain.event_sources import SIGNED_SOURCES
from chalicelib.domain.signatures.github import verify_github, verify_webhook
from chalicelib.domain.signatures.headers import lower
from chalicelib.domain.signatures.linkedin import verify_linkedin
from chalicelib.domain.signatures.macs import Rejected, Verifier, invalid
from chalicelib.domain.signatures.shopify import verify_shopify
from chalicelib.domain.signatures.slack import verify_slack
from chalicelib.domain.signatures.standard import SECRET_PREFIX, verify_standard
from chalicelib.domain.signatures.stripe import verify_stripe

__all__ = ["SOURCES", "SECRET_REQUIRED", "generate_secret", "verify"]

SOURCES = SIGNED_SOURCES
# Stripe, Slack and Shopify show the signing secret in their own dashboards; a secret
# cronhook made up could never verify, so the user must paste theirs on create. LinkedIn
# signs with the app's client secret.
SECRET_REQUIRED = frozenset({"stripe", "slack", "shopify", "linkedin"})

_SECRET_BYTES = 32

_VERIFIERS: dict[str, Verifier] = {
    "webhook": verify_webhook,
    "github": verify_github,
    "stripe": verify_stripe,
    "slack": verify_slack,
    "standard": verify_standard,
    "shopify": verify_shopify,
    "linkedin": verify_linkedin,
}


def generate_secret(source: str) -> str:
    """A fresh signing secret: ``whsec_`` + standard base64 of 32 random bytes."""
    # One format for every source cronhook may generate for: it is a valid Standard
    # Webhooks key (the base64 part is decoded), and for `webhook`/`github` the whole
    # string, prefix included, is the opaque HMAC key, as GitHub treats its secret.
    if source not in SOURCES:
        raise ValidationError(f"unknown event source {source!r}", field="event.source")
    if source in SECRET_REQUIRED:
        raise ValidationError(
            f"{source} issues its own signing secret: pass it as event.secret",
            field="event.secret",
        )
    raw = _random.token_bytes(_SECRET_BYTES)
    return SECRET_PREFIX + base64.b64encode(raw).decode("ascii")


def verify(
    source: str,
    *,
    secrets: list[str],
    headers: Mapping[str, str],
    body: bytes,
    now: float,
) -> None:
    """Return if any of ``secrets`` signed this delivery, else raise ``InvalidSignature``."""
    try:
        verifier = _VERIFIERS.get(source)
        if verifier is None:
            raise Rejected("unknown source")
        if not isinstance(body, bytes | bytearray):
            raise Rejected("body is not bytes")
        if isinstance(secrets, str | bytes):
            # Iterating a bare string would make every character a key: fail closed.
            raise Rejected("secrets is not a list")
        keys = [s for s in (secrets or ()) if isinstance(s, str) and s]
        if not keys:
            raise Rejected("no secret")
        verifier(keys, lower(headers), bytes(body), now)
    except Rejected as exc:
        raise invalid(exc.reason) from None
    except Exception:
        # Garbage in a client's request is a 401, never a 500 (CONTRACT "Errors").
        raise invalid("unparsable input") from None
