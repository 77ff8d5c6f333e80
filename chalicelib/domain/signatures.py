"""Webhook signatures: verify each provider's documented recipe, sign cronhook's own calls.

Pure: the clock is the keyword argument ``now`` (epoch seconds), secrets and headers are
arguments. Every rejection is a bare ``InvalidSignature()``: the client learns nothing
about *why* (unknown token, missing header, stale timestamp and wrong signature all look
alike, see CONTRACT "Ingress"). The cause is kept on the exception as ``reason`` for
logs; it never contains a secret or an expected signature.

Signatures are compared as raw digest bytes with ``hmac.compare_digest``, after the
header has been decoded strictly (hex or base64); a header that does not decode simply
matches nothing.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets as _random
from collections.abc import Callable, Iterable, Mapping

from chalicelib.domain.errors import InvalidSignature, ValidationError

__all__ = [
    "SOURCES",
    "SECRET_REQUIRED",
    "TOLERANCE_S",
    "SENSITIVE_HEADERS",
    "generate_secret",
    "verify",
    "delivery_id",
    "dedupe_key",
    "shown_key",
    "slack_challenge",
    "linkedin_challenge",
    "sign_outbound",
    "clip_headers",
]

SOURCES = ("webhook", "github", "stripe", "slack", "standard", "shopify", "linkedin")
# Stripe, Slack and Shopify show the signing secret in their own dashboards; a secret
# cronhook made up could never verify, so the user must paste theirs on create. LinkedIn
# signs with the app's client secret.
SECRET_REQUIRED = frozenset({"stripe", "slack", "shopify", "linkedin"})
# Stripe, Slack and Standard Webhooks all document a five-minute replay window.
TOLERANCE_S = 300

_SECRET_PREFIX = "whsec_"
_SECRET_BYTES = 32
_DELIVERY_ID_MAX = 256
_HEADER_VALUE_MAX = 1024

# Headers that carry a credential or a signature: never shown to a workflow or logged.
SENSITIVE_HEADERS: frozenset[str] = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "cookie",
        "set-cookie",
        "x-api-key",
        "x-amz-security-token",
        "x-signature-256",
        "x-hub-signature",
        "x-hub-signature-256",
        "stripe-signature",
        "x-slack-signature",
        "webhook-signature",
        "x-shopify-hmac-sha256",
        "x-li-signature",
    }
)
# Defence in depth for headers we do not know by name (other providers, proxies).
_SENSITIVE_MARKERS = ("signature", "secret", "token", "hmac", "auth", "cookie", "api-key", "apikey")

_HEX_SHA256 = re.compile(r"[0-9a-fA-F]{64}")
_TIMESTAMP = re.compile(r"[0-9]{1,15}")


class _Rejected(Exception):
    """Internal: one verification step failed, for this reason."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def generate_secret(source: str) -> str:
    """A fresh signing secret: ``whsec_`` + standard base64 of 32 random bytes."""
    # One format for every source cronhook may generate for: it is a valid Standard
    # Webhooks key (the base64 part is decoded), and for `webhook`/`github` the whole
    # string, prefix included, is the opaque HMAC key, as GitHub treats its secret.
    if source not in SOURCES:
        raise ValidationError(f"unknown event source {source!r}", field="event.source")
    if source in SECRET_REQUIRED:
        raise ValidationError(
            f"{source} issues its own signing secret: pass it as event.secret",
            field="event.secret",
        )
    raw = _random.token_bytes(_SECRET_BYTES)
    return _SECRET_PREFIX + base64.b64encode(raw).decode("ascii")


def verify(
    source: str,
    *,
    secrets: list[str],
    headers: Mapping[str, str],
    body: bytes,
    now: float,
) -> None:
    """Return if any of ``secrets`` signed this delivery, else raise ``InvalidSignature``."""
    try:
        verifier = _VERIFIERS.get(source)
        if verifier is None:
            raise _Rejected("unknown source")
        if not isinstance(body, bytes | bytearray):
            raise _Rejected("body is not bytes")
        if isinstance(secrets, str | bytes):
            # Iterating a bare string would make every character a key: fail closed.
            raise _Rejected("secrets is not a list")
        keys = [s for s in (secrets or ()) if isinstance(s, str) and s]
        if not keys:
            raise _Rejected("no secret")
        verifier(keys, _lower(headers), bytes(body), now)
    except _Rejected as exc:
        raise _invalid(exc.reason) from None
    except Exception:
        # Garbage in a client's request is a 401, never a 500 (CONTRACT "Errors").
        raise _invalid("unparsable input") from None


def delivery_id(source: str, *, headers: Mapping[str, str], body_json: object | None) -> str | None:
    """The delivery id the provider *signs*, or None: only that may name a delivery.

    Standard Webhooks signs ``webhook-id`` (it is part of the signed content); Stripe and
    Slack sign the body, which carries the event's ``id`` / ``event_id``. GitHub's
    ``X-GitHub-Delivery``, Shopify's ``X-Shopify-Webhook-Id`` and ``Idempotency-Key`` are
    not signed: anyone holding a captured request can change them, so they name nothing.
    """
    if source == "standard":
        # Exactly as verified: the raw header value is what the signature covers.
        return _nonblank(_lower(headers).get("webhook-id"))
    if source == "stripe" and isinstance(body_json, dict):
        # Stripe retries a delivery with the same Event object, so `id` (evt_...) is stable.
        return _nonblank(body_json.get("id"))
    if source == "slack" and isinstance(body_json, dict):
        # Events API retries carry the same `event_id` (plus X-Slack-Retry-Num).
        return _nonblank(body_json.get("event_id"))
    if source == "linkedin":
        # The notification id is in the signed body (X-LI-Signature covers it).
        return _linkedin_notification_id(body_json)
    if source in _DELIVERED and isinstance(body_json, dict):
        # AWS (or the file adapter) delivered it: the payload is built by cronhook.
        return _delivered_id(source, body_json)
    return None


def dedupe_key(
    source: str, *, headers: Mapping[str, str], body: bytes, body_json: object | None
) -> str:
    """What makes two verified deliveries the same one: signed content only, never cut.

    The provider's signed delivery id (``delivery_id``) where there is one, else the
    SHA-256 of the signed body: a replay of a captured request, whatever unsigned header
    it changes (``Idempotency-Key``, ``X-GitHub-Delivery``...), has the same key. Two
    namespaces, so a signed id can never equal a digest. The whole key is hashed into the
    event id by the caller: a long key is never truncated into another one.
    """
    signed_id = delivery_id(source, headers=headers, body_json=body_json)
    if signed_id is not None:
        return f"id:{signed_id}"
    return "sha256:" + hashlib.sha256(bytes(body)).hexdigest()


def shown_key(key: str) -> str:
    """A dedupe key as stored for people to read: whole up to 256 characters, else clipped.

    Display only; identity is the hash of the whole key (``ids.event_id_for``).
    """
    if len(key) <= _DELIVERY_ID_MAX:
        return key
    tail = "...sha256:" + hashlib.sha256(_utf8(key)).hexdigest()
    return key[: _DELIVERY_ID_MAX - len(tail)] + tail


def slack_challenge(body_json: object | None) -> str | None:
    """The ``challenge`` of a Slack ``url_verification`` request, else None."""
    # Slack Events API: answer the handshake with the challenge value; only call this
    # after verify() succeeded, so the URL cannot be claimed by an unsigned request.
    if isinstance(body_json, dict) and body_json.get("type") == "url_verification":
        challenge = body_json.get("challenge")
        if isinstance(challenge, str):
            return challenge
    return None


def linkedin_challenge(code: str, *, secrets: list[str]) -> dict[str, str] | None:
    """LinkedIn's endpoint validation answer for ``?challengeCode=``, or None without a secret.

    LinkedIn, "Webhook validation": ``challengeResponse`` is the hex HMAC-SHA256 of the
    challengeCode keyed with the app's clientSecret; answer both as JSON within 3 s.
    LinkedIn re-validates every 2 hours; during a rotation the newest secret answers.
    """
    keys = [s for s in secrets if isinstance(s, str) and s]
    if not keys or not isinstance(code, str) or not code or len(code) > 256:
        return None
    return {"challengeCode": code, "challengeResponse": _hmac(_utf8(keys[0]), _utf8(code)).hex()}


def sign_outbound(secret: str, *, msg_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """Standard Webhooks headers signing ``body`` for one of cronhook's outbound HTTP calls."""
    key = _standard_key(secret)
    if key is None:
        raise ValueError("secret is not a Standard Webhooks secret (whsec_ + base64)")
    ts = str(int(timestamp))
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": ts,
        "webhook-signature": "v1," + _b64(_standard_mac(key, msg_id, ts, body)),
    }


def clip_headers(headers: Mapping[str, str], *, max_total: int = 4096) -> dict[str, str]:
    """What a workflow sees of request headers: lower-case, no credentials, size-capped."""
    clipped: dict[str, str] = {}
    total = 0
    for name, value in _lower(headers).items():
        if _is_sensitive(name):
            continue
        value = value[:_HEADER_VALUE_MAX]
        size = len(name) + len(value)
        # Skip what does not fit rather than stop: a later short header may still fit.
        if total + size > max_total:
            continue
        clipped[name] = value
        total += size
    return clipped


# --- the schemes -------------------------------------------------------------------
# Each takes (secrets, lower-cased headers, raw body, now) and returns or raises _Rejected.


def _verify_webhook(keys: list[str], headers: dict[str, str], body: bytes, now: float) -> None:
    # cronhook's generic scheme, GitHub's format under a neutral name:
    # X-Signature-256: sha256=<hex HMAC-SHA256(secret, raw body)>.
    _verify_sha256_hex_header(keys, headers.get("x-signature-256"), body)


def _verify_github(keys: list[str], headers: dict[str, str], body: bytes, now: float) -> None:
    # GitHub, "Validating webhook deliveries": X-Hub-Signature-256 is "sha256=" + hex
    # HMAC-SHA256 of the raw payload keyed with the webhook secret; compare in constant
    # time. GitHub signs no timestamp and no id: replays are caught by the body digest dedupe.
    _verify_sha256_hex_header(keys, headers.get("x-hub-signature-256"), body)


def _verify_sha256_hex_header(keys: list[str], header: str | None, body: bytes) -> None:
    value = _required(header, "signature header")
    scheme, sep, hexdigest = value.partition("=")
    if not sep or scheme.strip().lower() != "sha256":
        raise _Rejected("signature header malformed")
    _match(keys, [_unhex(hexdigest)], lambda key: _hmac(_utf8(key), body))


def _verify_stripe(keys: list[str], headers: dict[str, str], body: bytes, now: float) -> None:
    # Stripe, "Verify webhook signatures manually": Stripe-Signature is
    # "t=<unix>,v1=<hex>[,v1=<hex>...][,v0=...]"; the signed payload is "<t>.<raw body>";
    # the key is the endpoint secret (the whole "whsec_..." string, as Stripe's SDKs use
    # it); any v1 may match (several appear while a secret is being rolled); v0 is not a
    # live-mode signature and is ignored; reject if t is more than 5 minutes from now.
    value = _required(headers.get("stripe-signature"), "stripe-signature")
    timestamps: list[str] = []
    candidates: list[bytes | None] = []
    for item in value.split(","):
        name, sep, part = item.partition("=")
        name = name.strip()
        if not sep:
            raise _Rejected("stripe-signature malformed")
        if name == "t":
            timestamps.append(part)
        elif name == "v1":
            candidates.append(_unhex(part))
    if len(timestamps) != 1:
        raise _Rejected("stripe-signature timestamp missing or repeated")
    ts = _fresh_timestamp(timestamps[0], now)
    if not candidates:
        raise _Rejected("stripe-signature has no v1")
    signed = ts.encode("ascii") + b"." + body
    _match(keys, candidates, lambda key: _hmac(_utf8(key), signed))


def _verify_slack(keys: list[str], headers: dict[str, str], body: bytes, now: float) -> None:
    # Slack, "Verifying requests from Slack": basestring "v0:<X-Slack-Request-Timestamp>:
    # <raw body>", HMAC-SHA256 with the app's signing secret, compared with
    # X-Slack-Signature "v0=<hex>"; drop requests whose timestamp is > 5 minutes off.
    ts = _fresh_timestamp(
        _required(headers.get("x-slack-request-timestamp"), "x-slack-request-timestamp"), now
    )
    value = _required(headers.get("x-slack-signature"), "x-slack-signature")
    version, sep, hexdigest = value.partition("=")
    if not sep or version.strip() != "v0":
        raise _Rejected("x-slack-signature malformed")
    signed = b"v0:" + ts.encode("ascii") + b":" + body
    _match(keys, [_unhex(hexdigest)], lambda key: _hmac(_utf8(key), signed))


def _verify_standard(keys: list[str], headers: dict[str, str], body: bytes, now: float) -> None:
    # Standard Webhooks spec, "Verifying webhooks": signed content is
    # "<webhook-id>.<webhook-timestamp>.<raw body>", HMAC-SHA256 keyed with the base64
    # part of the "whsec_" secret; webhook-signature is a space-delimited list of
    # "<version>,<base64>" and any "v1" may match (others, e.g. v1a, are ignored);
    # timestamps outside the tolerance are rejected.
    msg_id = _required(headers.get("webhook-id"), "webhook-id")
    ts = _fresh_timestamp(_required(headers.get("webhook-timestamp"), "webhook-timestamp"), now)
    value = _required(headers.get("webhook-signature"), "webhook-signature")
    candidates: list[bytes | None] = []
    for entry in value.split():
        version, sep, signature = entry.partition(",")
        if sep and version == "v1":
            candidates.append(_unb64(signature))
    if not candidates:
        raise _Rejected("webhook-signature has no v1")

    def expected(secret: str) -> bytes | None:
        key = _standard_key(secret)
        return None if key is None else _standard_mac(key, msg_id, ts, body)

    _match(keys, candidates, expected)


def _verify_shopify(keys: list[str], headers: dict[str, str], body: bytes, now: float) -> None:
    # Shopify, "Verify a webhook": X-Shopify-Hmac-Sha256 is the base64 of HMAC-SHA256 of
    # the raw body keyed with the app's client secret (or the webhook signing secret
    # shown in the admin). Shopify signs no timestamp, id or topic: the body digest dedupes.
    value = _required(headers.get("x-shopify-hmac-sha256"), "x-shopify-hmac-sha256")
    _match(keys, [_unb64(value)], lambda key: _hmac(_utf8(key), body))


def _verify_linkedin(keys: list[str], headers: dict[str, str], body: bytes, now: float) -> None:
    # LinkedIn, "Webhook validation" (Requirements for Processing Notifications):
    # X-LI-Signature is the HMAC-SHA256 of the POST body prefixed by "hmacsha256=",
    # keyed with the app's clientSecret, hex. Some senders (and proxies) put the
    # "hmacsha256=" prefix on the header value too; both forms are read. No timestamp is
    # signed: redeliveries are caught by the notification id (dedupe).
    value = _required(headers.get("x-li-signature"), "x-li-signature").strip()
    if value.lower().startswith("hmacsha256="):
        value = value[len("hmacsha256=") :]
    signed = b"hmacsha256=" + body
    _match(keys, [_unhex(value)], lambda key: _hmac(_utf8(key), signed))


def _linkedin_notification_id(body_json: object | None) -> str | None:
    """The notification id of a LinkedIn POST (one, or the ids of a batch, joined)."""
    if not isinstance(body_json, dict):
        return None
    one = body_json.get("notificationId")
    if isinstance(one, str | int) and not isinstance(one, bool):
        return _nonblank(str(one))
    batch = body_json.get("notifications")
    if isinstance(batch, list):
        ids = [
            str(n.get("notificationId"))
            for n in batch
            if isinstance(n, dict) and isinstance(n.get("notificationId"), str | int)
        ]
        return _nonblank(",".join(ids)) if ids else None
    return None


_DELIVERED = frozenset({"eventbridge", "s3", "email", "file"})


def _delivered_id(source: str, payload: dict) -> str | None:
    """The dedupe key of a payload built by chalicelib.sources (CONTRACT "Event sources")."""
    if source == "eventbridge":
        return _nonblank(payload.get("id"))  # the event's id: a redelivery keeps it
    if source == "s3":
        # S3's sequencer orders the events of one key: bucket + key + sequencer is one
        # object version landing, however often EventBridge delivers it.
        parts = [payload.get("bucket"), payload.get("key"), payload.get("sequencer")]
        if all(isinstance(p, str) and p for p in parts):
            return f"{parts[0]}/{parts[1]}#{parts[2]}"
        return None
    if source == "email":
        return _nonblank(payload.get("message_id"))
    if source == "file":
        parts = [payload.get("path"), payload.get("size"), payload.get("mtime_ns")]
        return ":".join(str(p) for p in parts) if all(p is not None for p in parts) else None
    return None


_VERIFIERS: dict[str, Callable[[list[str], dict[str, str], bytes, float], None]] = {
    "webhook": _verify_webhook,
    "github": _verify_github,
    "stripe": _verify_stripe,
    "slack": _verify_slack,
    "standard": _verify_standard,
    "shopify": _verify_shopify,
    "linkedin": _verify_linkedin,
}


# --- helpers -------------------------------------------------------------------------


def _match(
    keys: list[str],
    candidates: Iterable[bytes | None],
    expected_for: Callable[[str], bytes | None],
) -> None:
    """Return if any candidate equals the MAC under any key (rotation: old and new)."""
    decoded = [c for c in candidates if c]
    if not decoded:
        raise _Rejected("signature not decodable")
    matched = False
    for key in keys:
        expected = expected_for(key)
        if expected is None:
            continue
        for candidate in decoded:
            # No early exit: the work done does not depend on which secret matched.
            matched |= hmac.compare_digest(expected, candidate)
    if not matched:
        raise _Rejected("signature mismatch")


def _fresh_timestamp(value: str, now: float) -> str:
    """The timestamp as signed (ASCII digits) if within TOLERANCE_S of ``now``."""
    ts = value.strip()
    if not _TIMESTAMP.fullmatch(ts):
        raise _Rejected("timestamp not numeric")
    # Written as "not within" so that a NaN `now` fails closed instead of passing.
    if not abs(now - int(ts)) <= TOLERANCE_S:
        raise _Rejected("timestamp outside tolerance")
    return ts


def _required(value: str | None, what: str) -> str:
    if value is None or not value.strip():
        raise _Rejected(f"{what} missing")
    return value


def _unhex(value: str) -> bytes | None:
    value = value.strip()
    return bytes.fromhex(value) if _HEX_SHA256.fullmatch(value) else None


def _unb64(value: str) -> bytes | None:
    try:
        return base64.b64decode(value.strip(), validate=True)
    except (binascii.Error, ValueError):
        return None


def _standard_key(secret: str) -> bytes | None:
    """The HMAC key of a Standard Webhooks secret: base64 after the ``whsec_`` prefix."""
    encoded = secret.removeprefix(_SECRET_PREFIX)
    # Some issuers drop the base64 padding; the reference libraries add it back.
    encoded += "=" * (-len(encoded) % 4)
    key = _unb64(encoded)
    return key or None


def _standard_mac(key: bytes, msg_id: str, ts: str, body: bytes) -> bytes:
    return _hmac(key, _utf8(msg_id) + b"." + ts.encode("ascii") + b"." + body)


def _hmac(key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, hashlib.sha256).digest()


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def _utf8(text: str) -> bytes:
    # surrogatepass: a header decoded with surrogateescape must not raise here.
    return text.encode("utf-8", "surrogatepass")


def _lower(headers: Mapping[str, str] | None) -> dict[str, str]:
    """Header names lower-cased (HTTP names are case-insensitive); non-strings dropped."""
    if not isinstance(headers, Mapping):
        return {}
    return {
        name.lower(): value
        for name, value in headers.items()
        if isinstance(name, str) and isinstance(value, str)
    }


def _nonblank(value: object) -> str | None:
    """A signed id as signed (not stripped: the bytes are what the sender signed)."""
    if isinstance(value, str) and value.strip():
        return value
    return None


def _is_sensitive(name: str) -> bool:
    return name in SENSITIVE_HEADERS or any(marker in name for marker in _SENSITIVE_MARKERS)


def _invalid(reason: str) -> InvalidSignature:
    """The one answer for every failure; ``reason`` is for logs only."""
    exc = InvalidSignature()
    exc.reason = reason  # type: ignore[attr-defined]
    return exc
