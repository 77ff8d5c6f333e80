"""Shopify's ``X-Shopify-Hmac-Sha256``: base64 of the body's HMAC, nothing else signed."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from tests.unit.signature_cases import BODY, SECRETS, check, rejected, signed_headers

SECRET = SECRETS["shopify"]


def _digest(body: bytes = BODY, secret: str = SECRET) -> bytes:
    return hmac.new(secret.encode(), body, hashlib.sha256).digest()


def test_shopify_signs_no_timestamp_so_an_old_delivery_still_verifies():
    # Replays are caught by the body digest dedupe, not here.
    check("shopify", signed_headers("shopify", SECRET, BODY), now=0.0)


@pytest.mark.parametrize(
    "value",
    [
        _digest().hex(),  # hex, not base64
        base64.b64encode(_digest()).decode().rstrip("="),  # padding dropped
        base64.b64encode(_digest(secret="another")).decode(),
        base64.b64encode(_digest(body=BODY + b" ")).decode(),
        base64.b64encode(_digest()[:16]).decode(),  # a truncated digest
    ],
)
def test_shopify_rejects_anything_but_the_base64_digest_of_the_body(value):
    rejected("shopify", {"X-Shopify-Hmac-Sha256": value})
