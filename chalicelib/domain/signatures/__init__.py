"""Webhook signatures: verify each provider's documented recipe, sign cronhook's own calls.

- ``inbound``: ``verify`` (the table of schemes, one per source) and ``generate_secret``;
- one module per provider family: ``github`` (and cronhook's generic ``webhook``),
  ``stripe``, ``slack``, ``standard`` (Standard Webhooks, also ``sign_outbound``),
  ``shopify``, ``linkedin``;
- ``macs``: the shared HMAC helpers (strict decoding, constant-time comparison);
- ``deliveries``: what names a delivery (signed ids, the dedupe key);
- ``headers``: lower-cased names, and what a workflow may see of them.

Everything other modules use is named here (callers write ``signatures.verify``, so a
test may replace it on this package); the submodules never import this package.
"""

from chalicelib.domain.signatures.deliveries import (
    dedupe_key,
    delivery_id,
    idempotency_key,
    shown_key,
)
from chalicelib.domain.signatures.headers import SENSITIVE_HEADERS, clip_headers
from chalicelib.domain.signatures.inbound import SECRET_REQUIRED, SOURCES, generate_secret, verify
from chalicelib.domain.signatures.linkedin import linkedin_challenge
from chalicelib.domain.signatures.macs import TOLERANCE_S
from chalicelib.domain.signatures.slack import slack_challenge
from chalicelib.domain.signatures.standard import sign_outbound

__all__ = [
    "SOURCES",
    "SECRET_REQUIRED",
    "TOLERANCE_S",
    "SENSITIVE_HEADERS",
    "generate_secret",
    "verify",
    "delivery_id",
    "dedupe_key",
    "idempotency_key",
    "shown_key",
    "slack_challenge",
    "linkedin_challenge",
    "sign_outbound",
    "clip_headers",
]
