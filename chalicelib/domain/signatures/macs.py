"""What every scheme shares: decode a header strictly, compute HMAC-SHA256, compare.

Signatures are compared as raw digest bytes with ``hmac.compare_digest``, after the
header has been decoded strictly (hex or base64); a header that does not decode simply
matches nothing. A failed step raises ``Rejected`` with its reason (for logs only).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from collections.abc import Callable, Iterable

from chalicelib.domain.errors import InvalidSignature

__all__ = [
    "TOLERANCE_S",
    "Rejected",
    "Verifier",
    "match",
    "fresh_timestamp",
    "required",
    "unhex",
    "unb64",
    "hmac_sha256",
    "b64",
    "utf8",
    "invalid",
]

# Stripe, Slack and Standard Webhooks all document a five-minute replay window.
TOLERANCE_S = 300

_HEX_SHA256 = re.compile(r"[0-9a-fA-F]{64}")
_TIMESTAMP = re.compile(r"[0-9]{1,15}")

# A scheme: (secrets, lower-cased headers, raw body, now) -> returns, or raises Rejected.
Verifier = Callable[[list[str], dict[str, str], bytes, float], None]


class Rejected(Exception):
    """Internal: one verification step failed, for this reason."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def match(
    keys: list[str],
    candidates: Iterable[bytes | None],
    expected_for: Callable[[str], bytes | None],
) -> None:
    """Return if any candidate equals the MAC under any key (rotation: old and new)."""
    decoded = [c for c in candidates if c]
    if not decoded:
        raise Rejected("signature not decodable")
    matched = False
    for key in keys:
        expected = expected_for(key)
        if expected is None:
            continue
        for candidate in decoded:
            # No early exit: the work done does not depend on which secret matched.
            matched |= hmac.compare_digest(expected, candidate)
    if not matched:
        raise Rejected("signature mismatch")


def fresh_timestamp(value: str, now: float) -> str:
    """The timestamp as signed (ASCII digits) if within TOLERANCE_S of ``now``."""
    ts = value.strip()
    if not _TIMESTAMP.fullmatch(ts):
        raise Rejected("timestamp not numeric")
    # Written as "not within" so that a NaN `now` fails closed instead of passing.
    if not abs(now - int(ts)) <= TOLERANCE_S:
        raise Rejected("timestamp outside tolerance")
    return ts


def required(value: str | None, what: str) -> str:
    """A header's value, or ``Rejected`` if it is missing or blank."""
    if value is None or not value.strip():
        raise Rejected(f"{what} missing")
    return value


def unhex(value: str) -> bytes | None:
    """A hex SHA-256 digest decoded, or None if it is not one."""
    value = value.strip()
    return bytes.fromhex(value) if _HEX_SHA256.fullmatch(value) else None


def unb64(value: str) -> bytes | None:
    """Strict base64 decoded, or None if it is not base64."""
    try:
        return base64.b64decode(value.strip(), validate=True)
    except (binascii.Error, ValueError):
        return None


def hmac_sha256(key: bytes, message: bytes) -> bytes:
    """The raw HMAC-SHA256 digest."""
    return hmac.new(key, message, hashlib.sha256).digest()


def b64(raw: bytes) -> str:
    """Standard base64, as text."""
    return base64.b64encode(raw).decode("ascii")


def utf8(text: str) -> bytes:
    """UTF-8 bytes of a text that may hold lone surrogates."""
    # surrogatepass: a header decoded with surrogateescape must not raise here.
    return text.encode("utf-8", "surrogatepass")


def invalid(reason: str) -> InvalidSignature:
    """The one answer for every failure; ``reason`` is for logs only."""
    exc = InvalidSignature()
    exc.reason = reason  # type: ignore[attr-defined]
    return exc
