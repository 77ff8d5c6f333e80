"""Slack's scheme (``X-Slack-Signature`` over a timestamped basestring) and its URL handshake."""

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

__all__ = ["verify_slack", "slack_challenge"]


def verify_slack(keys: list[str], headers: dict[str, str], body: bytes, now: float) -> None:
    """Slack, "Verifying requests from Slack"."""
    # Basestring "v0:<X-Slack-Request-Timestamp>:<raw body>", HMAC-SHA256 with the app's
    # signing secret, compared with X-Slack-Signature "v0=<hex>"; drop requests whose
    # timestamp is > 5 minutes off.
    ts = fresh_timestamp(
        required(headers.get("x-slack-request-timestamp"), "x-slack-request-timestamp"), now
    )
    value = required(headers.get("x-slack-signature"), "x-slack-signature")
    version, sep, hexdigest = value.partition("=")
    if not sep or version.strip() != "v0":
        raise Rejected("x-slack-signature malformed")
    signed = b"v0:" + ts.encode("ascii") + b":" + body
    match(keys, [unhex(hexdigest)], lambda key: hmac_sha256(utf8(key), signed))


def slack_challenge(body_json: object | None) -> str | None:
    """The ``challenge`` of a Slack ``url_verification`` request, else None."""
    # Slack Events API: answer the handshake with the challenge value; only call this
    # after verify() succeeded, so the URL cannot be claimed by an unsigned request.
    if isinstance(body_json, dict) and body_json.get("type") == "url_verification":
        challenge = body_json.get("challenge")
        if isinstance(challenge, str):
            return challenge
    return None
