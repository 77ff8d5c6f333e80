"""GitHub's scheme, and cronhook's generic ``webhook`` scheme (GitHub's, under a neutral name)."""

from __future__ import annotations

from chalicelib.domain.signatures.macs import Rejected, hmac_sha256, match, required, unhex, utf8

__all__ = ["verify_webhook", "verify_github"]


def verify_webhook(keys: list[str], headers: dict[str, str], body: bytes, now: float) -> None:
    """cronhook's generic scheme: ``X-Signature-256: sha256=<hex HMAC-SHA256(secret, body)>``."""
    # GitHub's format under a neutral name.
    _verify_sha256_hex_header(keys, headers.get("x-signature-256"), body)


def verify_github(keys: list[str], headers: dict[str, str], body: bytes, now: float) -> None:
    """GitHub, "Validating webhook deliveries"."""
    # X-Hub-Signature-256 is "sha256=" + hex HMAC-SHA256 of the raw payload keyed with the
    # webhook secret; compare in constant time. GitHub signs no timestamp and no id:
    # replays are caught by the body digest dedupe.
    _verify_sha256_hex_header(keys, headers.get("x-hub-signature-256"), body)


def _verify_sha256_hex_header(keys: list[str], header: str | None, body: bytes) -> None:
    value = required(header, "signature header")
    scheme, sep, hexdigest = value.partition("=")
    if not sep or scheme.strip().lower() != "sha256":
        raise Rejected("signature header malformed")
    match(keys, [unhex(hexdigest)], lambda key: hmac_sha256(utf8(key), body))
