"""LinkedIn: ``X-LI-Signature`` on notifications, and the endpoint validation answer."""

from __future__ import annotations

import re

from chalicelib.domain.signatures.macs import hmac_sha256, match, required, unhex, utf8

__all__ = ["verify_linkedin", "linkedin_challenge", "is_challenge_code"]

# LinkedIn, "Webhook validation": the challengeCode is "a randomly generated type-4 UUID
# string". Only that shape is answered. The answer is an HMAC under the same key as a
# notification's X-LI-Signature, whose signed input always starts with "hmacsha256=";
# a UUID never does, so no answer can ever verify a notification (domain separation by
# format). Any version nibble is accepted, the canonical 8-4-4-4-12 hex form only.
_CHALLENGE_CODE = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)
_SIGNED_PREFIX = b"hmacsha256="


def verify_linkedin(keys: list[str], headers: dict[str, str], body: bytes, now: float) -> None:
    """LinkedIn, "Webhook validation" (Requirements for Processing Notifications)."""
    # X-LI-Signature is the HMAC-SHA256 of the POST body prefixed by "hmacsha256=", keyed
    # with the app's clientSecret, hex. Some senders (and proxies) put the "hmacsha256="
    # prefix on the header value too; both forms are read. No timestamp is signed:
    # redeliveries are caught by the notification id (dedupe).
    value = required(headers.get("x-li-signature"), "x-li-signature").strip()
    if value.lower().startswith("hmacsha256="):
        value = value[len("hmacsha256=") :]
    signed = _SIGNED_PREFIX + body
    match(keys, [unhex(value)], lambda key: hmac_sha256(utf8(key), signed))


def linkedin_challenge(code: str, *, secrets: list[str]) -> dict[str, str] | None:
    """LinkedIn's endpoint validation answer for ``?challengeCode=``, or None without a secret.

    LinkedIn, "Webhook validation": ``challengeResponse`` is the hex HMAC-SHA256 of the
    challengeCode keyed with the app's clientSecret; answer both as JSON within 3 s.
    LinkedIn re-validates every 2 hours; during a rotation the newest secret answers.
    Anything but a UUID gets no answer: the endpoint must never sign chosen text.
    """
    keys = [s for s in secrets if isinstance(s, str) and s]
    if not keys or not is_challenge_code(code):
        return None
    return {
        "challengeCode": code,
        "challengeResponse": hmac_sha256(utf8(keys[0]), utf8(code)).hex(),
    }


def is_challenge_code(code: object) -> bool:
    """Whether ``code`` has the shape of LinkedIn's challengeCode (a UUID, nothing else)."""
    if not isinstance(code, str) or _CHALLENGE_CODE.fullmatch(code) is None:
        return False
    # The format alone excludes it; kept as the rule itself, should the format ever widen.
    return not utf8(code).startswith(_SIGNED_PREFIX)
