"""Stripe's scheme: a timestamp and one or more v1 signatures in ``Stripe-Signature``."""

from __future__ import annotations

from chalicelib.domain.signatures.macs import (
    Rejected,
    fresh_timestamp,
    hmac_sha256,
    match,
    required,
    unhex,
    utf8,
)

__all__ = ["verify_stripe"]


def verify_stripe(keys: list[str], headers: dict[str, str], body: bytes, now: float) -> None:
    """Stripe, "Verify webhook signatures manually"."""
    # Stripe-Signature is "t=<unix>,v1=<hex>[,v1=<hex>...][,v0=...]"; the signed payload is
    # "<t>.<raw body>"; the key is the endpoint secret (the whole "whsec_..." string, as
    # Stripe's SDKs use it); any v1 may match (several appear while a secret is being
    # rolled); v0 is not a live-mode signature and is ignored; reject if t is more than 5
    # minutes from now.
    value = required(headers.get("stripe-signature"), "stripe-signature")
    timestamps: list[str] = []
    candidates: list[bytes | None] = []
    for item in value.split(","):
        name, sep, part = item.partition("=")
        name = name.strip()
        if not sep:
            raise Rejected("stripe-signature malformed")
        if name == "t":
            timestamps.append(part)
        elif name == "v1":
            candidates.append(unhex(part))
    if len(timestamps) != 1:
        raise Rejected("stripe-signature timestamp missing or repeated")
    ts = fresh_timestamp(timestamps[0], now)
    if not candidates:
        raise Rejected("stripe-signature has no v1")
    signed = ts.encode("ascii") + b"." + body
    match(keys, candidates, lambda key: hmac_sha256(utf8(key), signed))
