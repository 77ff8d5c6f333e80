"""Webhook ingress (``POST /hooks/{token}``) and delivered events, in the contract's order.

1. A body over 1 MiB is 413, before anything is read or verified.
2. The token names its trigger, so finding it is one GetItem. An unknown token, a
   missing or wrong signature and a stale timestamp all get the same 401.
3. Triggers switched off: 503. A disabled or expired trigger: 410. Nothing is stored.
4. Slack's ``url_verification`` is answered with its challenge. A provider's goodbye
   disables the trigger, the first time it is seen only; a delivery the filter does not
   want is 202 ``ignored``.
5. The dedupe key rests on signed content only: the provider's signed delivery id, else
   the SHA-256 of the signed body (``signatures.dedupe_key``), so no unsigned header can
   make a captured request new again. Then the event is accepted (``accept``): stored
   (the put is the dedupe) and dispatched, 202.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from chalicelib.domain import filters, ids, signatures
from chalicelib.domain.errors import (
    CronhookError,
    Gone,
    InvalidSignature,
    PayloadTooLarge,
    ServiceUnavailable,
)
from chalicelib.domain.event_rules import expired, source_of
from chalicelib.domain.records import Trigger
from chalicelib.observability import logger, record_metric
from chalicelib.services import audit, deliveries, switch
from chalicelib.services.alerts import detect as alerts
from chalicelib.services.events.accept import accept, duplicate, put_mark, refused
from chalicelib.services.events.rotation import secrets_of
from chalicelib.services.events.spec import event_spec, ms, parse_json
from chalicelib.store import triggers as triggers_store

__all__ = [
    "MAX_BODY_BYTES",
    "delivery_hooks",
    "receive",
    "ingest",
    "disable_source_gone",
    "trigger_for_token",
]

MAX_BODY_BYTES = 1024 * 1024

# Called once per delivery, accepted or refused: hook(trigger_id | None, *, outcome,
# status, answer, body, headers, now). Outcomes: accepted, duplicate, filtered,
# invalid_signature, stale, too_large, throttled, and gone, unavailable, challenge,
# source_gone. A failing hook is logged and never changes the answer.
delivery_hooks: list[Callable[..., None]] = []

_FILTERED = {"event_id": None, "run_id": None, "ignored": "filter"}


def trigger_for_token(token: str) -> Trigger | None:
    """The event trigger a hook token names (compared in constant time), or None."""
    trigger_id = ids.trigger_id_of_token(token) if len(token) <= 128 else None
    if trigger_id is None:
        return None
    item = triggers_store.get_trigger(trigger_id)
    if item is None or item.kind != "event" or not item.webhook_token:
        return None
    expected = item.webhook_token.encode("utf-8", "surrogatepass")
    if not hmac.compare_digest(expected, token.encode("utf-8", "surrogatepass")):
        return None
    return item


def _reject(reason: str, trigger_id: str | None) -> CronhookError:
    record_metric("WebhooksRejected", reason=reason)
    logger.info("webhook rejected", extra={"trigger_id": trigger_id, "reason": reason})
    # The caller gets the same 401 either way; only the delivery record tells them apart.
    stale = reason == "timestamp outside tolerance"
    return refused(InvalidSignature(), "stale" if stale else "invalid_signature", trigger_id)


@deliveries.recorded
def receive(
    token: str, *, body: bytes, headers: Mapping[str, str], now: datetime
) -> tuple[int, dict]:
    """Verify, filter, dedupe, store and dispatch one webhook delivery: (status, body).

    Every delivery, answered or refused, ends at one point with its outcome (the
    ``outcome`` names of ``GET /v1/triggers/{id}/deliveries``): ``delivery_hooks`` are
    called there, with the trigger (None for an unknown token) and why it was refused.
    """
    try:
        status, answer, outcome, trigger_id = _receive(token, body=body, headers=headers, now=now)
    except CronhookError as exc:
        _delivered(
            getattr(exc, "trigger_id", None),
            outcome=getattr(exc, "outcome", exc.CODE),
            status=exc.STATUS_CODE,
            answer=exc.to_body(),
            body=body,
            headers=headers,
            now=now,
        )
        raise
    _delivered(
        trigger_id,
        outcome=outcome,
        status=status,
        answer=answer,
        body=body,
        headers=headers,
        now=now,
    )
    return status, answer


def _delivered(trigger_id: str | None, *, outcome: str, **delivery: Any) -> None:
    """The one point every delivery passes: hand its outcome to ``delivery_hooks``."""
    for hook in delivery_hooks:
        try:
            hook(trigger_id, outcome=outcome, **delivery)
        except Exception:  # recording a delivery must never change its answer
            logger.exception("a delivery hook failed", extra={"trigger_id": trigger_id})


def _verified(token: str, *, body: bytes, headers: Mapping[str, str], now: datetime) -> Any:
    """Size, then token and signature (one 401 for all): the trigger, its spec, its source."""
    if len(body) > MAX_BODY_BYTES:
        record_metric("WebhooksRejected", reason="too_large")
        raise refused(PayloadTooLarge("the body is larger than 1 MiB"), "too_large", None)
    item = trigger_for_token(token)
    if item is None:
        raise _reject("unknown_token", None)
    spec, event = event_spec(item)
    source = source_of(event)
    try:
        signatures.verify(
            source,
            secrets=secrets_of(item, now=now),
            headers=headers,
            body=body,
            now=now.timestamp(),
        )
    except InvalidSignature as exc:
        raise _reject(getattr(exc, "reason", "invalid"), item.id) from None
    return item, spec, event, source


def _check_open(item: Trigger, spec: dict, *, now: datetime, webhook: bool) -> None:
    """503 if triggers are switched off; 410 if the trigger is disabled or has expired.

    A ``webhook`` refusal is labelled for its delivery record and counted; a delivered
    event's (``ingest``) is only raised: its queue retries or drops it.
    """

    def refuse(exc: CronhookError, outcome: str, reason: str | None = None) -> CronhookError:
        if not webhook:
            return exc
        if reason is not None:
            record_metric("WebhooksRefused", reason=reason)
        return refused(exc, outcome, item.id)

    if not switch.triggers_enabled(now=now):
        raise refuse(
            ServiceUnavailable("triggers are switched off; nothing was stored, retry later"),
            "unavailable",
        )
    if item.status != "active":
        gone = Gone(f"trigger is disabled ({item.disabled_reason or 'manual'})")
        raise refuse(gone, "gone", "disabled")
    if expired(spec.get("limits") or {}, now=now):
        if triggers_store.disable_trigger(item.id, reason="expired", now_ms=ms(now)) is not None:
            alerts.note_disabled(item, reason="expired", now=now)
        raise refuse(Gone("trigger has expired"), "gone", "expired")


def _receive(
    token: str, *, body: bytes, headers: Mapping[str, str], now: datetime
) -> tuple[int, dict, str, str]:
    """``receive`` without the bookkeeping: (status, answer, outcome, trigger id), or raise.

    1. Size, then token and signature (one 401 for all), then switch, status, expiry.
    2. The dedupe key is computed from signed content only (``signatures.dedupe_key``).
    3. A goodbye (signed content only, ``filters.source_gone``) disables the trigger only
       if this is the first time its key is seen; a filtered-out body that *could* be a
       goodbye leaves a mark under its key, so a replay of it under another unsigned
       topic header is a duplicate, never a first-seen goodbye.
    4. Otherwise the event is stored (the put is the dedupe) and dispatched.
    """
    item, spec, event, source = _verified(token, body=body, headers=headers, now=now)
    _check_open(item, spec, now=now, webhook=True)
    body_json = parse_json(body)
    if source == "slack":
        challenge = signatures.slack_challenge(body_json)
        if challenge is not None:
            return 200, {"challenge": challenge}, "challenge", item.id
    key = signatures.dedupe_key(source, headers=headers, body=body, body_json=body_json)
    gone = filters.source_gone(source, headers=headers, body_json=body_json)
    if gone is not None:
        return _source_gone(item, spec, source, key, gone, body=body, headers=headers, now=now)
    if not filters.matches(source, event.get("filter"), headers=headers, body_json=body_json):
        if filters.may_be_goodbye(source, body_json=body_json):
            put_mark(item, spec, source, key, body=body, headers=headers, now=now)
        record_metric("WebhooksIgnored", source=source)
        return 202, dict(_FILTERED), "filtered", item.id
    status, answer = accept(
        item, spec, source, key=key, body=body, body_json=body_json, headers=headers, now=now
    )
    return status, answer, "duplicate" if answer.get("duplicate") else "accepted", item.id


def ingest(item: Trigger, *, source: str, payload: dict, now: datetime) -> tuple[int, dict]:
    """A delivered event (EventBridge, S3, email, a file): the webhook path after its signature.

    AWS (or the file adapter) delivered it, so there is nothing to verify; the rest is
    the same: switched off 503, disabled or expired 410, filtered 202 ``ignored``, a
    duplicate 200, else stored, dispatched and 202. ``payload`` is what the run gets;
    its dedupe key is the one CONTRACT "Event sources" names (``signatures.delivery_id``).
    """
    spec, event = event_spec(item)
    _check_open(item, spec, now=now, webhook=False)
    if not filters.matches(source, event.get("filter"), headers={}, body_json=payload):
        record_metric("WebhooksIgnored", source=source)
        return 202, dict(_FILTERED)
    body = json.dumps(payload, separators=(",", ":")).encode()
    key = signatures.dedupe_key(source, headers={}, body=body, body_json=payload)
    return accept(item, spec, source, key=key, body=body, body_json=payload, headers={}, now=now)


def disable_source_gone(item: Trigger, why: str, *, now: datetime) -> None:
    """The source went away for good (a watched directory vanished): disable, say why."""
    spec, event = event_spec(item)
    source = source_of(event, default="file")
    key = "gone:" + why
    _source_gone(item, spec, source, key, why, body=b"", headers={}, now=now)


def _source_gone(
    item: Trigger,
    spec: dict,
    source: str,
    key: str,
    why: str,
    *,
    body: bytes,
    headers: Mapping[str, str],
    now: datetime,
) -> tuple[int, dict, str, str]:
    """The provider removed the webhook (or the app): disable the trigger, say why, 202.

    Only the first time this signed delivery is seen: its mark goes first, and a
    delivery whose key is already there (a replay of this goodbye, or of an event that
    was accepted or filtered out under another unsigned topic) is a duplicate that
    changes nothing. Nothing else is stored or run: no delivery can follow, and the
    trigger shows ``disabled_reason: source_gone`` (with an audit entry by ``system``)
    instead of waiting for events that never come. Re-enabling it is an operator's
    decision, and a replay of the goodbye cannot undo it.
    """
    original = put_mark(item, spec, source, key, body=body, headers=headers, now=now)
    if original is not None:
        record_metric("WebhooksDuplicate", source=source)
        logger.warning(
            "a goodbye seen before was sent again: nothing changed",
            extra={"trigger_id": item.id},
        )
        return 200, duplicate(original), "duplicate", item.id
    if triggers_store.disable_trigger(item.id, reason="source_gone", now_ms=ms(now)) is not None:
        record_metric("Disables", reason="source_gone")
        alerts.note_disabled(item, reason="source_gone", now=now, note=why)
        audit.record(
            None,
            "disable",
            tenant=item.tenant,
            trigger_id=item.id,
            now=now,
            detail={"reason": "source_gone", "why": why},
        )
        logger.warning(
            "the provider removed the webhook: trigger disabled",
            extra={"trigger_id": item.id, "why": why},
        )
    return 202, {"event_id": None, "run_id": None, "ignored": "source_gone"}, "source_gone", item.id
