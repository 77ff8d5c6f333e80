"""What names a delivery: the id its provider signs, else the digest of the signed body."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from chalicelib.domain.event_sources import DELIVERED_SOURCES
from chalicelib.domain.signatures.headers import lower
from chalicelib.domain.signatures.macs import utf8

__all__ = ["delivery_id", "dedupe_key", "idempotency_key", "shown_key"]

_DELIVERY_ID_MAX = 256


def delivery_id(source: str, *, headers: Mapping[str, str], body_json: object | None) -> str | None:
    """The delivery id the provider *signs*, or None: only that may name a delivery.

    Standard Webhooks signs ``webhook-id`` (it is part of the signed content); Stripe and
    Slack sign the body, which carries the event's ``id`` / ``event_id``. GitHub's
    ``X-GitHub-Delivery``, Shopify's ``X-Shopify-Webhook-Id`` and ``Idempotency-Key`` are
    not signed: anyone holding a captured request can change them, so they name nothing.
    """
    if source == "standard":
        # Exactly as verified: the raw header value is what the signature covers.
        return _nonblank(lower(headers).get("webhook-id"))
    if source == "stripe" and isinstance(body_json, dict):
        # Stripe retries a delivery with the same Event object, so `id` (evt_...) is stable.
        return _nonblank(body_json.get("id"))
    if source == "slack" and isinstance(body_json, dict):
        # Events API retries carry the same `event_id` (plus X-Slack-Retry-Num).
        return _nonblank(body_json.get("event_id"))
    if source == "linkedin":
        # The notification id is in the signed body (X-LI-Signature covers it).
        return _linkedin_notification_id(body_json)
    if source in DELIVERED_SOURCES and isinstance(body_json, dict):
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


def idempotency_key(headers: Mapping[str, str]) -> str | None:
    """The sender's ``Idempotency-Key`` header as a second dedupe key, or None.

    Unsigned, so it never replaces the signed key (``dedupe_key``): a replay with a new
    ``Idempotency-Key`` is still a duplicate of its content. It adds what the sender asks
    for: a delivery with a key seen within the window is a duplicate too, whatever its
    body (a retry that rebuilt its payload). Its own namespace, so it can never equal a
    signed id or a digest.
    """
    value = _nonblank(lower(headers).get("idempotency-key"))
    return None if value is None else f"idempotency-key:{value}"


def shown_key(key: str) -> str:
    """A dedupe key as stored for people to read: whole up to 256 characters, else clipped.

    Display only; identity is the hash of the whole key (``ids.event_id_for``).
    """
    if len(key) <= _DELIVERY_ID_MAX:
        return key
    tail = "...sha256:" + hashlib.sha256(utf8(key)).hexdigest()
    return key[: _DELIVERY_ID_MAX - len(tail)] + tail


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


def _nonblank(value: object) -> str | None:
    """A signed id as signed (not stripped: the bytes are what the sender signed)."""
    if isinstance(value, str) and value.strip():
        return value
    return None
