"""LinkedIn: ``X-LI-Signature`` on notifications, and the endpoint validation answer."""

from __future__ import annotations

from chalicelib.domain.signatures.macs import hmac_sha256, match, required, unhex, utf8

__all__ = ["verify_linkedin", "linkedin_challenge"]


def verify_linkedin(keys: list[str], headers: dict[str, str], body: bytes, now: float) -> None:
    """LinkedIn, "Webhook validation" (Requirements for Processing Notifications)."""
    # X-LI-Signature is the HMAC-SHA256 of the POST body prefixed by "hmacsha256=", keyed
    # with the app's clientSecret, hex. Some senders (and proxies) put the "hmacsha256="
    # prefix on the header value too; both forms are read. No timestamp is signed:
    # redeliveries are caught by the notification id (dedupe).
    value = required(headers.get("x-li-signature"), "x-li-signature").strip()
    if value.lower().startswith("hmacsha256="):
        value = value[len("hmacsha256=") :]
    signed = b"hmacsha256=" + body
    match(keys, [unhex(value)], lambda key: hmac_sha256(utf8(key), signed))


def linkedin_challenge(code: str, *, secrets: list[str]) -> dict[str, str] | None:
    """LinkedIn's endpoint validation answer for ``?challengeCode=``, or None without a secret.

    LinkedIn, "Webhook validation": ``challengeResponse`` is the hex HMAC-SHA256 of the
    challengeCode keyed with the app's clientSecret; answer both as JSON within 3 s.
    LinkedIn re-validates every 2 hours; during a rotation the newest secret answers.
    """
    keys = [s for s in secrets if isinstance(s, str) and s]
    if not keys or not isinstance(code, str) or not code or len(code) > 256:
        return None
    return {
        "challengeCode": code,
        "challengeResponse": hmac_sha256(utf8(keys[0]), utf8(code)).hex(),
    }
