"""Standard Webhooks: verify a delivery, and sign cronhook's own outbound calls.

A Standard Webhooks secret is ``whsec_`` + base64 of the key; the signed content is
``<webhook-id>.<webhook-timestamp>.<raw body>``.
"""

from __future__ import annotations

from chalicelib.domain.signatures.macs import (
    Rejected,
    b64,
    fresh_timestamp,
    hmac_sha256,
    match,
    required,
    unb64,
    utf8,
)

__all__ = ["SECRET_PREFIX", "verify_standard", "sign_outbound", "standard_key"]

SECRET_PREFIX = "whsec_"


def standard_key(secret: str) -> bytes | None:
    """The HMAC key of a Standard Webhooks secret: base64 after the ``whsec_`` prefix."""
    encoded = secret.removeprefix(SECRET_PREFIX)
    # Some issuers drop the base64 padding; the reference libraries add it back.
    encoded += "=" * (-len(encoded) % 4)
    key = unb64(encoded)
    return key or None


def _standard_mac(key: bytes, msg_id: str, ts: str, body: bytes) -> bytes:
    return hmac_sha256(key, utf8(msg_id) + b"." + ts.encode("ascii") + b"." + body)


def verify_standard(keys: list[str], headers: dict[str, str], body: bytes, now: float) -> None:
    """Standard Webhooks spec, "Verifying webhooks"."""
    # Signed content is "<webhook-id>.<webhook-timestamp>.<raw body>", HMAC-SHA256 keyed
    # with the base64 part of the "whsec_" secret; webhook-signature is a space-delimited
    # list of "<version>,<base64>" and any "v1" may match (others, e.g. v1a, are ignored);
    # timestamps outside the tolerance are rejected.
    msg_id = required(headers.get("webhook-id"), "webhook-id")
    ts = fresh_timestamp(required(headers.get("webhook-timestamp"), "webhook-timestamp"), now)
    value = required(headers.get("webhook-signature"), "webhook-signature")
    candidates: list[bytes | None] = []
    for entry in value.split():
        version, sep, signature = entry.partition(",")
        if sep and version == "v1":
            candidates.append(unb64(signature))
    if not candidates:
        raise Rejected("webhook-signature has no v1")

    def expected(secret: str) -> bytes | None:
        key = standard_key(secret)
        return None if key is None else _standard_mac(key, msg_id, ts, body)

    match(keys, candidates, expected)


def sign_outbound(secret: str, *, msg_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """Standard Webhooks headers signing ``body`` for one of cronhook's outbound HTTP calls."""
    key = standard_key(secret)
    if key is None:
        raise ValueError("secret is not a Standard Webhooks secret (whsec_ + base64)")
    ts = str(int(timestamp))
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": ts,
        "webhook-signature": "v1," + b64(_standard_mac(key, msg_id, ts, body)),
    }
