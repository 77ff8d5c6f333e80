"""Shopify's scheme: base64 HMAC-SHA256 of the raw body in ``X-Shopify-Hmac-Sha256``."""

from __future__ import annotations

from chalicelib.domain.signatures.macs import hmac_sha256, match, required, unb64, utf8

__all__ = ["verify_shopify"]


def verify_shopify(keys: list[str], headers: dict[str, str], body: bytes, now: float) -> None:
    """Shopify, "Verify a webhook"."""
    # X-Shopify-Hmac-Sha256 is the base64 of HMAC-SHA256 of the raw body keyed with the
    # app's client secret (or the webhook signing secret shown in the admin). Shopify
    # signs no timestamp, id or topic: the body digest dedupes.
    value = required(headers.get("x-shopify-hmac-sha256"), "x-shopify-hmac-sha256")
    match(keys, [unb64(value)], lambda key: hmac_sha256(utf8(key), body))
