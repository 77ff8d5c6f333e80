"""Event triggers: signed webhook ingress, event runs, retries, replay and the safety sweep.

Ingress (``POST /hooks/{token}``) answers in the contract's order:

1. A body over 1 MiB is 413, before anything is read or verified.
2. The token names its trigger, so finding it is one GetItem. An unknown token, a
   missing or wrong signature and a stale timestamp all get the same 401.
3. Triggers switched off: 503. A disabled or expired trigger: 410. Nothing is stored.
4. Slack's ``url_verification`` is answered with its challenge. A provider's goodbye
   disables the trigger, the first time it is seen only; a delivery the filter does not
   want is 202 ``ignored``.
5. One conditional PutItem is both the event and its dedupe record: the event id is
   derived from the dedupe key, so a second delivery fails the condition and is
   answered 200 with the original ids (DynamoDB returns the old item with the failure).
   The key rests on signed content only: the provider's signed delivery id, else the
   SHA-256 of the signed body (``signatures.dedupe_key``), so no unsigned header can
   make a captured request new again. A full trigger with ``max_waiting_events``
   waiting answers 429 ``quota`` and stores nothing.
6. Only then is the event dispatched, and the answer is 202: its fire message is sent
   at once, unless the trigger is full, in which case a run in flight pulls it when it
   settles. If the send fails the event stays pending and the heartbeat's sweep
   dispatches it.

An event run is claimed and started in one write (``claim_and_start``, capacity =
the trigger's ``concurrency``), then the event flips pending → running with a
conditional update that is the start fence of this event. A full trigger leaves the
event pending: every settled event run pulls the oldest ready pending event of its
trigger, so a burst drains run after run without waiting for heartbeat ticks.

When a run ends, the runner settles the trigger and then the finish hook ``_on_finish``
records the attempt on the event. If that hook never runs (the process died, or the write
failed) the event would stay ``running`` for ever; the event stays in the sweep's index
(``pending_all``) until it ends, so the heartbeat's ``sweep`` finds it once its run's
lease is over and finishes its bookkeeping from the run record (``_recover``). Keeping the
index entry through the run costs no write: the start no longer removes it, the end does.
"""

from __future__ import annotations

import hmac
import json
import secrets as _random
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError
from pynamodb.exceptions import DoesNotExist, PutError, UpdateError

from chalicelib.domain import filters, ids, signatures
from chalicelib.domain.errors import (
    Conflict,
    CronhookError,
    Gone,
    InvalidSignature,
    NotFound,
    PayloadTooLarge,
    QuotaExceeded,
    ServiceUnavailable,
    ValidationError,
)
from chalicelib.domain.settle import retry_delay_s
from chalicelib.observability import logger, record_metric
from chalicelib.services import audit, deliveries, runs, switch
from chalicelib.services.auth import Principal
from chalicelib.services.lookup import load_owned
from chalicelib.services.pages import decode_cursor, encode_cursor, parse_limit
from chalicelib.services.pipeline import RunContext, RunPolicy
from chalicelib.services.runs import iso_ms
from chalicelib.settings import get_settings
from chalicelib.store import dynamo, kms, s3
from chalicelib.store.aws import client
from chalicelib.store.models import EventModel, RunModel, TriggerModel
from chalicelib.store.sqs import FireMessage, send_fires

if TYPE_CHECKING:
    from chalicelib.domain.spec import EventIn

__all__ = [
    "MAX_BODY_BYTES",
    "QUOTA_RETRY_AFTER_S",
    "delivery_hooks",
    "validate_event",
    "prepare",
    "receive",
    "ingest",
    "disable_source_gone",
    "start_event_run",
    "dispatch_pending",
    "sweep",
    "rotate_secret",
    "list_events",
    "replay_event",
    "event_view",
]

MAX_BODY_BYTES = 1024 * 1024
# A trigger at its cap of waiting events drains about one event per run: a sender told
# 429 retries after this long (Retry-After).
QUOTA_RETRY_AFTER_S = 30
# A pending event this long past its ready time has lost its message: the sweep resends.
SWEEP_GRACE_S = 30
SWEEP_ROWS_PER_SHARD = 1000
# SQS DelaySeconds are whole seconds, rounded up: a retry message may land this early.
_EARLY_MS = 1000
_TERMINAL = ("succeeded", "failed", "skipped", "refused", "budget_exceeded")
# How a run record (or a trigger's last_run) may end: the event statuses, and lost.
_RUN_ENDED = (*_TERMINAL, "lost")
_LOST_AFTER_SETTLE = (
    "lost: the runner stopped after giving the run's slot back, before recording how it ended"
)


# Called once per delivery, accepted or refused: hook(trigger_id | None, *, outcome,
# status, answer, body, headers, now). Outcomes: accepted, duplicate, filtered,
# invalid_signature, stale, too_large, throttled, and gone, unavailable, challenge,
# source_gone. A failing hook is logged and never changes the answer.
delivery_hooks: list[Callable[..., None]] = []


def _ms(at: datetime) -> int:
    return int(round(at.timestamp() * 1000))


def _webhook_url(token: str) -> str:
    return f"{get_settings().public_url}/hooks/{token}"


def _event_spec(item: TriggerModel) -> tuple[dict, dict]:
    spec = json.loads(item.spec or "{}")
    return spec, spec.get("event") or {}


# --- create, view, rotate -----------------------------------------------------------

# Secrets verifying at once besides the current one (rotations inside each other's grace).
MAX_PREVIOUS_SECRETS = 3


def _check_secret(source: str, secret: str, *, field: str) -> None:
    if source == "standard":
        # A Standard Webhooks key is whsec_ + base64; anything else could never verify.
        try:
            signatures.sign_outbound(secret, msg_id="check", timestamp=0, body=b"")
        except ValueError:
            raise ValidationError(
                "a Standard Webhooks secret is whsec_ followed by base64", field=field
            ) from None


def validate_event(event_in: EventIn) -> None:
    """What create and PATCH both check beyond the request model: 422 naming the field.

    The filter's keys and values are checked against its source (``event.filter.<key>``).
    The secret is not checked here: create takes one (``prepare``), PATCH refuses one
    (rotation is ``POST /v1/triggers/{id}/rotate-secret``).
    """
    filters.validate_filter(event_in.source, event_in.filter)


def prepare(item: TriggerModel, event_in: EventIn, *, now: datetime) -> dict:
    """Give a new event trigger its token and sealed secret; the part shown once on create."""
    source = event_in.source
    validate_event(event_in)
    if event_in.secret is not None:
        secret = event_in.secret
        _check_secret(source, secret, field="event.secret")
    else:
        secret = signatures.generate_secret(source)  # 422 event.secret where the provider issues it
    item.webhook_token = ids.new_webhook_token(item.id)
    item.secret_sealed = kms.seal(secret, trigger_id=item.id)
    return {"webhook": {"url": _webhook_url(item.webhook_token), "secret": secret}}


def webhook_view(item: TriggerModel) -> dict:
    """On a webhook trigger's view: ``webhook_url``."""
    if item.kind != "event" or not item.webhook_token:
        return {}
    return {"webhook_url": _webhook_url(item.webhook_token)}


def rotate_secret(principal: Principal, trigger_id: str, body: Any, *, now: datetime) -> dict:
    """A new signing secret, shown once; the previous one keeps verifying for ``grace_s``."""
    item = load_owned(principal, trigger_id)
    if item.kind != "event":
        raise Conflict("only event triggers have a signing secret")
    # Cold start: the request models load pydantic, which the fire path never needs.
    from chalicelib.domain.spec import RotateSecretIn, parse_model

    data = parse_model(RotateSecretIn, body if body else {})
    _, event = _event_spec(item)
    source = event.get("source", "webhook")
    if data.secret is not None:
        secret = data.secret
        _check_secret(source, secret, field="secret")
    elif source in signatures.SECRET_REQUIRED:
        raise ValidationError(
            f"{source} issues its own signing secret: pass the new one as secret", field="secret"
        )
    else:
        secret = signatures.generate_secret(source)
    now_ms = _ms(now)
    sealed = kms.seal(secret, trigger_id=item.id)
    t = TriggerModel
    actions = [t.secret_sealed.set(sealed), t.updated_ms.set(now_ms), t.version.add(1)]
    # Each previous secret keeps its own grace: a second rotation inside the first one's
    # grace does not cut it short. grace_s 0 is "it leaked": every older secret stops now.
    previous = _previous_secrets(item, now_ms=now_ms) if data.grace_s > 0 else []
    if data.grace_s > 0 and item.secret_sealed:
        previous = [(item.secret_sealed, now_ms + data.grace_s * 1000), *previous]
    previous = previous[:MAX_PREVIOUS_SECRETS]
    if previous:
        actions += [
            t.secret_prev_sealed.set(previous[0][0]),
            t.secret_prev_until.set(previous[0][1]),
        ]
    else:
        actions += [t.secret_prev_sealed.remove(), t.secret_prev_until.remove()]
    if len(previous) > 1:
        actions.append(t.secret_older.set(json.dumps(previous[1:], separators=(",", ":"))))
    else:
        actions.append(t.secret_older.remove())
    condition = (
        t.secret_sealed == item.secret_sealed
        if item.secret_sealed
        else t.secret_sealed.does_not_exist()
    )
    try:
        item.update(actions=actions, condition=condition & t.id.exists())
    except UpdateError as exc:
        if getattr(exc, "cause_response_code", None) == "ConditionalCheckFailedException":
            raise Conflict("the secret was changed at the same time; try again") from None
        raise
    audit.record(
        principal,
        "rotate",
        tenant=item.tenant,
        trigger_id=item.id,
        now=now,
        detail={"grace_s": data.grace_s, "provided": data.secret is not None},
    )
    logger.info("webhook secret rotated", extra={"trigger_id": item.id})
    until = now_ms + data.grace_s * 1000 if data.grace_s > 0 and item.secret_sealed else None
    return {
        "secret": secret,
        "previous_valid_until": iso_ms(until),
        # Every older secret that still verifies, and until when (newest first).
        "previous_secrets_valid_until": [iso_ms(u) for _, u in previous],
    }


def _previous_secrets(item: TriggerModel, *, now_ms: int) -> list[tuple[str, int]]:
    """The previous secrets still in their grace at ``now_ms``, newest first."""
    found: list[tuple[str, int]] = []
    if item.secret_prev_sealed and int(item.secret_prev_until or 0) > now_ms:
        found.append((item.secret_prev_sealed, int(item.secret_prev_until)))
    try:
        older = json.loads(item.secret_older or "[]")
    except ValueError:
        older = []
    for entry in older if isinstance(older, list) else []:
        if (
            isinstance(entry, list)
            and len(entry) == 2
            and isinstance(entry[0], str)
            and int(entry[1]) > now_ms
        ):
            found.append((entry[0], int(entry[1])))
    return found


# --- ingress --------------------------------------------------------------------------


def _trigger_for_token(token: str) -> TriggerModel | None:
    trigger_id = ids.trigger_id_of_token(token) if len(token) <= 128 else None
    if trigger_id is None:
        return None
    item = dynamo.get_trigger(trigger_id)
    if item is None or item.kind != "event" or not item.webhook_token:
        return None
    expected = item.webhook_token.encode("utf-8", "surrogatepass")
    if not hmac.compare_digest(expected, token.encode("utf-8", "surrogatepass")):
        return None
    return item


def _secrets_of(item: TriggerModel, *, now: datetime) -> list[str]:
    """The secrets that verify now: the current one, and the previous one in its grace period."""
    sealed = [item.secret_sealed, *(s for s, _ in _previous_secrets(item, now_ms=_ms(now)))]
    opened = []
    for text in sealed:
        if not text:
            continue
        try:
            opened.append(kms.unseal(text, trigger_id=item.id, now_s=now.timestamp()))
        except ValueError:
            logger.error("a sealed webhook secret does not open", extra={"trigger_id": item.id})
        except ServiceUnavailable:
            # KMS down, or its key gone: the caller is not authenticated yet, so it gets
            # the same 401 as an unknown token (a 503 would tell it the token is real).
            record_metric("WebhooksRejected", reason="secret_unavailable")
            logger.error(
                "a webhook secret could not be unsealed; deliveries are refused (401)",
                extra={"trigger_id": item.id},
            )
    return opened


def _reject(reason: str, trigger_id: str | None) -> CronhookError:
    record_metric("WebhooksRejected", reason=reason)
    logger.info("webhook rejected", extra={"trigger_id": trigger_id, "reason": reason})
    # The caller gets the same 401 either way; only the delivery record tells them apart.
    stale = reason == "timestamp outside tolerance"
    return _refused(InvalidSignature(), "stale" if stale else "invalid_signature", trigger_id)


def _expired(spec: dict, *, now: datetime) -> bool:
    expires_at = (spec.get("limits") or {}).get("expires_at")
    if not isinstance(expires_at, str):
        return False
    try:
        at = datetime.fromisoformat(expires_at.replace("Z", "+00:00"))
    except ValueError:
        return False
    return now >= at


def _parse_json(body: bytes) -> Any:
    if body.lstrip()[:1] not in (b"{", b"["):
        return None
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


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


def _refused(exc: CronhookError, outcome: str, trigger_id: str | None) -> CronhookError:
    exc.outcome = outcome  # type: ignore[attr-defined]
    exc.trigger_id = trigger_id  # type: ignore[attr-defined]
    return exc


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
    if len(body) > MAX_BODY_BYTES:
        record_metric("WebhooksRejected", reason="too_large")
        raise _refused(PayloadTooLarge("the body is larger than 1 MiB"), "too_large", None)
    item = _trigger_for_token(token)
    if item is None:
        raise _reject("unknown_token", None)
    spec, event = _event_spec(item)
    source = event.get("source", "webhook")
    try:
        signatures.verify(
            source,
            secrets=_secrets_of(item, now=now),
            headers=headers,
            body=body,
            now=now.timestamp(),
        )
    except InvalidSignature as exc:
        raise _reject(getattr(exc, "reason", "invalid"), item.id) from None
    if not switch.triggers_enabled(now=now):
        raise _refused(
            ServiceUnavailable("triggers are switched off; nothing was stored, retry later"),
            "unavailable",
            item.id,
        )
    if item.status != "active":
        record_metric("WebhooksRefused", reason="disabled")
        raise _refused(
            Gone(f"trigger is disabled ({item.disabled_reason or 'manual'})"), "gone", item.id
        )
    if _expired(spec, now=now):
        dynamo.disable_trigger(item.id, reason="expired", now_ms=_ms(now))
        record_metric("WebhooksRefused", reason="expired")
        raise _refused(Gone("trigger has expired"), "gone", item.id)
    body_json = _parse_json(body)
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
            _put_mark(item, spec, source, key, body=body, headers=headers, now=now)
        record_metric("WebhooksIgnored", source=source)
        return 202, {"event_id": None, "run_id": None, "ignored": "filter"}, "filtered", item.id
    status, answer = _accept(
        item, spec, source, key=key, body=body, body_json=body_json, headers=headers, now=now
    )
    return status, answer, "duplicate" if answer.get("duplicate") else "accepted", item.id


def ingest(item: TriggerModel, *, source: str, payload: dict, now: datetime) -> tuple[int, dict]:
    """A delivered event (EventBridge, S3, email, a file): the webhook path after its signature.

    AWS (or the file adapter) delivered it, so there is nothing to verify; the rest is
    the same: switched off 503, disabled or expired 410, filtered 202 ``ignored``, a
    duplicate 200, else stored, dispatched and 202. ``payload`` is what the run gets;
    its dedupe key is the one CONTRACT "Event sources" names (``signatures.delivery_id``).
    """
    spec, event = _event_spec(item)
    if not switch.triggers_enabled(now=now):
        raise ServiceUnavailable("triggers are switched off; nothing was stored, retry later")
    if item.status != "active":
        raise Gone(f"trigger is disabled ({item.disabled_reason or 'manual'})")
    if _expired(spec, now=now):
        dynamo.disable_trigger(item.id, reason="expired", now_ms=_ms(now))
        raise Gone("trigger has expired")
    if not filters.matches(source, event.get("filter"), headers={}, body_json=payload):
        record_metric("WebhooksIgnored", source=source)
        return 202, {"event_id": None, "run_id": None, "ignored": "filter"}
    body = json.dumps(payload, separators=(",", ":")).encode()
    key = signatures.dedupe_key(source, headers={}, body=body, body_json=payload)
    return _accept(item, spec, source, key=key, body=body, body_json=payload, headers={}, now=now)


def disable_source_gone(item: TriggerModel, why: str, *, now: datetime) -> None:
    """The source went away for good (a watched directory vanished): disable, say why."""
    spec, event = _event_spec(item)
    source = event.get("source", "file")
    key = "gone:" + why
    _source_gone(item, spec, source, key, why, body=b"", headers={}, now=now)


def _put_mark(
    item: TriggerModel,
    spec: dict,
    source: str,
    key: str,
    *,
    body: bytes,
    headers: Mapping[str, str],
    now: datetime,
) -> EventModel | None:
    """Remember a delivery that stores no event (a goodbye, or one that could be one).

    The mark is an events item under the delivery's event id, with no body, no run and
    none of the index keys (no listing, no queue, no sweep shows it): only a later
    delivery with the same key finds it, and is a duplicate. Returns the item that was
    there already (a replay), else None.
    """
    now_ms = _ms(now)
    window_s = _window_s(spec)
    kind = filters.event_type(source, headers=headers, body_json=_parse_json(body))
    mark = EventModel(
        ids.event_id_for(item.id, key),
        trigger_id=item.id,
        tenant=item.tenant,
        received_ms=now_ms,
        status="ignored",
        source=source,
        event_type=kind[:256] if kind else None,
        dedupe_key=signatures.shown_key(key),
        body_size=len(body),
        dedupe_until=now_ms + window_s * 1000,
        expires=now_ms // 1000 + window_s,
    )
    return _put_event(mark, now_ms=now_ms, mark=True)


def _window_s(spec: dict) -> int:
    return int((spec.get("event") or {}).get("dedupe_window_s") or 7 * 86400)


def _duplicate(original: EventModel) -> dict:
    """The answer to a delivery seen before: the original ids (none for a mark)."""
    if original.status == "ignored":
        return {"event_id": None, "run_id": None, "duplicate": True}
    return {"event_id": original.id, "run_id": original.run_id, "duplicate": True}


def _source_gone(
    item: TriggerModel,
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
    original = _put_mark(item, spec, source, key, body=body, headers=headers, now=now)
    if original is not None:
        record_metric("WebhooksDuplicate", source=source)
        logger.warning(
            "a goodbye seen before was sent again: nothing changed",
            extra={"trigger_id": item.id},
        )
        return 200, _duplicate(original), "duplicate", item.id
    if dynamo.disable_trigger(item.id, reason="source_gone", now_ms=_ms(now)) is not None:
        record_metric("Disables", reason="source_gone")
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


def _accept(
    item: TriggerModel,
    spec: dict,
    source: str,
    *,
    key: str,
    body: bytes,
    body_json: Any,
    headers: Mapping[str, str],
    now: datetime,
) -> tuple[int, dict]:
    settings = get_settings()
    now_ms = _ms(now)
    event_id = ids.event_id_for(item.id, key)
    run_id = ids.event_run_id(item.id, now_ms, event_id)
    original = _check_waiting_quota(item, spec, event_id=event_id, now_ms=now_ms)
    if original is not None:
        record_metric("WebhooksDuplicate", source=source)
        return 200, _duplicate(original)
    window_s = _window_s(spec)
    keep_s = max(window_s, settings.event_retention_days * 86400)
    kind = filters.event_type(source, headers=headers, body_json=body_json)
    record = EventModel(
        event_id,
        trigger_id=item.id,
        tenant=item.tenant,
        received_ms=now_ms,
        received_sk=f"{now_ms:013d}#{event_id}",
        status="pending",
        run_id=run_id,
        attempt=0,
        source=source,
        event_type=kind[:256] if kind else None,
        dedupe_key=signatures.shown_key(key),
        body_size=len(body),
        headers=json.dumps(signatures.clip_headers(headers), separators=(",", ":")),
        pending_trigger=item.id,
        pending_shard=dynamo.shard_of(event_id, settings.due_shards),
        pending_sk=f"{now_ms:013d}#{run_id}",
        dedupe_until=now_ms + window_s * 1000,
        expires=now_ms // 1000 + keep_s,
    )
    text = _utf8_or_none(body)
    if text is not None and len(body) <= settings.inline_body_limit:
        record.body = text
    else:
        # Too big for an item (or not text): the body goes to S3 first, then the item
        # that points at it, so a stored event always has its body.
        record.body_s3_key = f"events/{item.id}/{event_id}/{now_ms}-{_random.token_hex(4)}"
        s3.put_body(record.body_s3_key, body)
    original = _put_event(record, now_ms=now_ms)
    if original is not None:
        if record.body_s3_key:
            s3.delete_body(record.body_s3_key)
        record_metric("WebhooksDuplicate", source=source)
        return 200, _duplicate(original)
    if _full_after_store(item, capacity=int(spec.get("concurrency") or 1)) or _older_waits(
        item.id, event_id
    ):
        record_metric("EventsQueued")
    else:
        _dispatch_new(item.id, run_id=run_id, event_id=event_id, tenant=item.tenant)
    record_metric("WebhooksAccepted", source=source)
    logger.info(
        "webhook accepted",
        extra={"trigger_id": item.id, "event_id": event_id, "run_id": run_id, "bytes": len(body)},
    )
    return 202, {"event_id": event_id, "run_id": run_id}


def _check_waiting_quota(
    item: TriggerModel, spec: dict, *, event_id: str, now_ms: int
) -> EventModel | None:
    """429 ``quota`` (nothing stored) if the trigger already has its cap of waiting events.

    Only a full trigger has a queue, so only then (the GetItem read its runs in flight)
    is the queue counted: one KEYS_ONLY count of at most ``max_waiting_events`` keys; the
    accepted path of a trigger with room costs nothing more. A delivery stored before is
    a duplicate, not refused (one GetItem, on this path only): a provider retrying it
    learns that it arrived. Deliveries counted at the same instant each see the queue
    before the others' puts, so the cap can be passed by that many, never more.
    """
    cap = get_settings().max_waiting_events
    if len(dynamo.in_flight_of(item)) < int(spec.get("concurrency") or 1):
        return None
    if EventModel.pending_by_trigger.count(item.id, limit=cap) < cap:
        return None
    try:
        stored = EventModel.get(event_id, consistent_read=True)
    except DoesNotExist:
        stored = None
    if stored is not None and int(stored.dedupe_until or 0) >= now_ms:
        return stored
    record_metric("WebhooksRefused", reason="quota")
    raise _refused(
        QuotaExceeded(
            f"the trigger already has {cap} events waiting to run; nothing was stored, "
            f"retry after {QUOTA_RETRY_AFTER_S} s",
            retry_after_s=QUOTA_RETRY_AFTER_S,
        ),
        "throttled",
        item.id,
    )


def _full_after_store(item: TriggerModel, *, capacity: int) -> bool:
    """True if the trigger is full now that the event is stored: then it needs no message.

    Race, drawn (concurrency 1, run R in flight):

        ingress:  GetItem (R in flight) ── PutItem(event) ── GetItem again: R still in flight?
        runner:                                   R settles ── pulls the oldest ready event

    If the second read still sees R, R settles after the event was stored, so R's pull
    finds it (or an older one, whose run pulls in turn): the event is reached without a
    message of its own, and a burst does not flood the queue with messages that could
    only find the trigger full. If R settled in between, the event is sent as usual.
    """
    if len(dynamo.in_flight_of(item)) < capacity:
        return False  # room when we looked: send (the common case costs no extra read)
    fresh = dynamo.get_trigger(item.id)
    return fresh is not None and len(dynamo.in_flight_of(fresh)) >= capacity


def _older_waits(trigger_id: str, event_id: str) -> bool:
    """True if an older event waits in the trigger's queue: then this one needs no message.

    The older event has its message (or a run in flight pulls it), its run pulls the
    next when it settles, and so on down to this one: a burst sends one message per
    run, not one per event that could only find the trigger busy (or not its turn).
    """
    head = _queue_of(trigger_id, limit=1)
    return bool(head) and head[0].id != event_id


def _dispatch_new(
    trigger_id: str, *, run_id: str, event_id: str, tenant: str | None = None
) -> None:
    """Send a stored event's message; if that fails it stays pending for the sweep."""
    message = FireMessage(
        run_id=run_id, trigger_id=trigger_id, surface="event", event_id=event_id, tenant=tenant
    )
    try:
        failed = send_fires([message])
    except Exception:  # the event is stored: a failed send must not turn into an error answer
        logger.exception("event dispatch raised", extra={"trigger_id": trigger_id})
        failed = [message]
    if failed:
        record_metric("EventDispatchFailed")
        logger.warning(
            "event stored but not dispatched; the heartbeat will dispatch it",
            extra={"trigger_id": trigger_id, "event_id": event_id},
        )


def _utf8_or_none(body: bytes) -> str | None:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _put_event(record: EventModel, *, now_ms: int, mark: bool = False) -> EventModel | None:
    """Store a new event; if its id is taken within the dedupe window, return that event.

    One PutItem: the condition is the dedupe, and ``ReturnValuesOnConditionCheckFailure``
    hands back the original (pynamodb cannot ask for it, so this uses the client). A
    ``mark`` (``_put_mark``) lacks the run and index attributes on purpose.
    """
    try:
        client("dynamodb").put_item(
            TableName=EventModel.Meta.table_name,
            Item=record.serialize(null_check=not mark),
            ConditionExpression="attribute_not_exists(#id) OR #until < :now",
            ExpressionAttributeNames={"#id": "id", "#until": "dedupe_until"},
            ExpressionAttributeValues={":now": {"N": str(now_ms)}},
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
        return None
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
            raise ServiceUnavailable("the event could not be stored; try again") from None
        old = exc.response.get("Item")
    except BotoCoreError:
        raise ServiceUnavailable("the event could not be stored; try again") from None
    if old:
        return EventModel.from_raw_data(old)
    try:
        return EventModel.get(record.id, consistent_read=True)
    except DoesNotExist:
        raise ServiceUnavailable("the event could not be stored; try again") from None


# --- event runs -----------------------------------------------------------------------


def _message_for(row: EventModel, *, waited: bool = False) -> FireMessage | None:
    """The fire message of a pending-index row (its sort key carries the run id).

    ``waited`` marks the message of an event that waited out of the queue (a retry, a
    deferral, or one the sweep resends): it carries its ready time as ``scheduled_ms``,
    which tells the runner to put the event back in its trigger's queue first.
    """
    ready, sep, run_id = (row.pending_sk or "").partition("#")
    trigger_id = ids.trigger_id_of_run(run_id) if sep else None
    if trigger_id is None:
        return None
    return FireMessage(
        run_id=run_id,
        trigger_id=trigger_id,
        surface="event",
        event_id=row.id,
        scheduled_ms=int(ready) if waited and ready.isdigit() else None,
    )


def _queue_of(trigger_id: str, *, limit: int) -> list[EventModel]:
    """The first ``limit`` events in a trigger's queue, the longest waiting first."""
    return list(EventModel.pending_by_trigger.query(trigger_id, limit=limit, page_size=limit))


PULL_ATTEMPTS = 3


class PullFailed(Exception):
    """The next event of a trigger's queue could not be sent (the chain would stall)."""


def dispatch_pending(trigger_id: str, *, limit: int = 1) -> int:
    """Enqueue the first event(s) of a trigger's queue; returns how many were sent.

    The send is tried ``PULL_ATTEMPTS`` times; if it still fails, ``PullFailed`` is
    raised: a pull is what keeps the queue moving, and a silent failure would leave the
    chain to the sweep (30 s or more later).
    """
    messages = [m for m in map(_message_for, _queue_of(trigger_id, limit=limit)) if m]
    if not messages:
        return 0
    pending = messages
    for _attempt in range(PULL_ATTEMPTS):
        try:
            pending = send_fires(pending)
        except Exception:  # send_fires answers failures; anything else is retried too
            logger.exception("pull send raised", extra={"trigger_id": trigger_id})
        if not pending:
            return len(messages)
    record_metric("EventPullFailed")
    raise PullFailed(f"{len(pending)} pull message(s) for {trigger_id} could not be sent")


def _requeue(event_id: str, *, run_id: str, trigger_id: str, now_ms: int) -> bool:
    """Put an event that waited (retry backoff, deferral) back in its trigger's queue.

    Not before its backoff is over: a queued event must be able to start, or pulling it
    would only drop it and pull it again.
    """
    e = EventModel
    try:
        EventModel(event_id).update(
            actions=[e.pending_trigger.set(trigger_id)],
            condition=(e.status == "pending")
            & (e.run_id == run_id)
            & e.pending_trigger.does_not_exist()
            & (e.retry_at.does_not_exist() | (e.retry_at <= now_ms + _EARLY_MS)),
        )
    except UpdateError as exc:
        if getattr(exc, "cause_response_code", None) == "ConditionalCheckFailedException":
            return False
        raise
    return True


def _flip_running(event_id: str, *, run_id: str, now_ms: int, lease_ms: int) -> EventModel | None:
    """pending → running for this run id: the event's start fence (None if fenced out).

    The event leaves its trigger's queue but stays in ``pending_all`` (same key) until it
    ends, and records when this attempt started and its run's lease: that is what lets
    the sweep finish the bookkeeping of a run whose finish hook never ran, at no cost
    to the happy path (see ``sweep``).
    """
    e = EventModel
    event = EventModel(event_id)
    try:
        event.update(
            actions=[
                e.status.set("running"),
                e.attempt.add(1),
                e.pending_trigger.remove(),
                e.retry_at.remove(),
                e.started_ms.set(now_ms),
                e.lease_ms.set(lease_ms),
            ],
            condition=(e.status == "pending")
            & (e.run_id == run_id)
            & (e.retry_at.does_not_exist() | (e.retry_at <= now_ms + _EARLY_MS)),
        )
    except UpdateError as exc:
        if getattr(exc, "cause_response_code", None) == "ConditionalCheckFailedException":
            return None
        raise
    return event


def _end_pending(event_id: str, *, run_id: str, status: str, now_ms: int) -> bool:
    """A pending event that will never run (its trigger is disabled or gone): terminal."""
    e = EventModel
    try:
        EventModel(event_id).update(
            actions=[
                e.status.set(status),
                e.finished_ms.set(now_ms),
                e.pending_trigger.remove(),
                e.pending_shard.remove(),
                e.pending_sk.remove(),
                e.retry_at.remove(),
            ],
            condition=(e.status == "pending") & (e.run_id == run_id),
        )
    except UpdateError as exc:
        if getattr(exc, "cause_response_code", None) == "ConditionalCheckFailedException":
            return False
        raise
    return True


def start_event_run(
    message: FireMessage, *, lease_ms: int, now: datetime
) -> tuple[TriggerModel, EventModel] | None:
    """Claim and start an event run; None if it must not run now (full, duplicate, gone).

    1. Read the trigger: a disabled or deleted one ends the event ``skipped``; a full one
       leaves it pending (every run in flight pulls the next event when it settles).
    2. Arrival order: if an older event of this trigger is ready, send that one instead;
       this one is pulled in its turn.
    3. Claim a slot and start in one write (capacity = the trigger's ``concurrency``).
    4. Flip the event pending → running for this run id. A duplicate delivery fails
       here: the slot is given back (fenced on our lease) and the next event pulled.
    """
    settings = get_settings()
    now_ms = _ms(now)
    event_id = message.event_id
    if not event_id:
        return None
    item = dynamo.get_trigger(message.trigger_id)
    if item is None or item.status != "active":
        if _end_pending(event_id, run_id=message.run_id, status="skipped", now_ms=now_ms):
            record_metric("EventsSkipped")
        if item is not None:
            dispatch_pending(item.id)  # skip the rest of the queue in turn
        return None
    if message.scheduled_ms is not None:
        # A retry or deferral whose wait is over (or the sweep's resend): back in the queue,
        # so that if it cannot start now, a run in flight pulls it in its turn.
        _requeue(event_id, run_id=message.run_id, trigger_id=item.id, now_ms=now_ms)
    spec = json.loads(item.spec or "{}")
    capacity = int(spec.get("concurrency") or 1)
    in_flight = dynamo.in_flight_of(item)
    if len(in_flight) >= capacity and message.run_id not in in_flight:
        # A slot freed since our read was freed by a run that pulls the next event.
        return None
    queue = _queue_of(item.id, limit=1)
    if queue and queue[0].id != event_id:
        # Not our turn, but the trigger has room: run the queue's head in this message's
        # place (this event waits its turn and is pulled by a run before it). Dropping the
        # message would leave the room empty until the head's own message came round.
        # This message's own event is not waiting: if it is a redelivery whose run ended
        # without its bookkeeping (a finish hook failed), finish that first.
        if message.run_id not in in_flight:
            _finish_if_run_over(event_id, run_id=message.run_id, now=now)
        head = _message_for(queue[0])
        if head is None:
            return None
        message, event_id = head, queue[0].id
    outcome, claimed = dynamo.claim_and_start(
        item.id,
        run_id=message.run_id,
        surface="event",
        lease_ms=lease_ms,
        capacity=capacity,
        shard=dynamo.shard_of(item.id, settings.due_shards),
        event_id=event_id,
    )
    if outcome != dynamo.ClaimResult.CLAIMED or claimed is None:
        if len(in_flight) < capacity:
            # There was room when we read the trigger, so the claim lost a race: maybe to
            # a second message of the same event. Nobody may be left to pull the next
            # event into that room, so pull it (at worst an extra, harmless message).
            dispatch_pending(item.id)
        return None
    event = _flip_running(event_id, run_id=message.run_id, now_ms=now_ms, lease_ms=lease_ms)
    if event is None:
        dynamo.drop_claim(item.id, run_id=message.run_id, lease_ms=lease_ms)
        _finish_if_run_over(event_id, run_id=message.run_id, now=now)
        dispatch_pending(item.id)
        return None
    if len(dynamo.in_flight_of(claimed)) < capacity:
        # Room for more (concurrency > 1): start the next event too, so that a queue
        # runs as many events at once as the trigger allows, each pulling its successor.
        dispatch_pending(item.id)
    return claimed, event


def _finish_if_run_over(event_id: str, *, run_id: str, now: datetime) -> None:
    """A message of an event still ``running`` whose run is no longer in flight: the run
    settled but its bookkeeping failed (the finish hook raised, so the message came back).
    Finish it now, from the run's record, instead of waiting for the sweep."""
    try:
        event = EventModel.get(event_id, consistent_read=True)
    except DoesNotExist:
        return
    if event.status == "running" and event.run_id == run_id:
        _recover(event, now=now)


def started_message(message: FireMessage, event: EventModel) -> FireMessage:
    """The message of the event that was started (the queue's head may have replaced it)."""
    if event.id == message.event_id:
        return message
    return FireMessage(
        run_id=event.run_id, trigger_id=event.trigger_id, surface="event", event_id=event.id
    )


def _payload_of(raw: bytes) -> Any:
    text = raw.decode("utf-8", "replace")
    parsed = _parse_json(raw)
    return parsed if parsed is not None else text


def _fire_extras(ctx: RunContext) -> dict:
    """The whole body as the payload (parsed if JSON), and the clipped headers."""
    event = ctx.event
    if event is None or ctx.message.surface != "event":
        return {}
    if event.body is not None:
        raw = event.body.encode("utf-8")
    elif event.body_s3_key:
        raw = s3.get_body(event.body_s3_key)
    else:
        raw = b""
    return {"payload": _payload_of(raw), "headers": json.loads(event.headers or "{}")}


def _settle_event(
    event_id: str,
    *,
    run_id: str,
    trigger_id: str,
    status: str,
    attempt: int | None,
    max_attempts: int,
    now_ms: int,
    defer_s: int | None = None,
) -> str | None:
    """Record how an attempt ended: terminal, or back to pending for a retry. Fenced on the run.

    Called by the finish hook, by the reaper's lost hook, and by the sweep's ``_recover``
    for a run whose hook never ran: the fence (running, this run id) makes exactly one of
    them count. A terminal end also takes the event out of the sweep's index.

    A failed attempt waits out its backoff (``retry_at``, enforced by the start fence).
    ``defer_s`` is a run a guard asked to wait (its serialize_key is held): the attempt
    does not count, and the event may start as soon as a message comes (the key's
    release sends one), or at ``defer_s`` at the latest.
    """
    e = EventModel
    fence = (e.status == "running") & (e.run_id == run_id)
    counted = defer_s is None
    ready_ms: int | None = None
    if defer_s is not None:
        ready_ms = now_ms + max(1, int(defer_s)) * 1000
    elif status == "failed":
        ready_ms = now_ms + int(retry_delay_s(max(1, attempt or 1)) * 1000)
    if ready_ms is not None:
        # Out of the trigger's queue while it waits (its message puts it back, see
        # _requeue); in the sweep's index, so that a lost message is resent.
        actions = [
            e.status.set("pending"),
            e.retry_at.remove() if not counted else e.retry_at.set(ready_ms),
            e.pending_trigger.remove(),
            e.pending_shard.set(dynamo.shard_of(event_id, get_settings().due_shards)),
            e.pending_sk.set(f"{ready_ms:013d}#{run_id}"),
        ]
        if not counted:
            actions.append(e.attempt.add(-1))
            condition = fence
        else:
            condition = fence & (e.attempt < max_attempts)
        try:
            EventModel(event_id).update(actions=actions, condition=condition)
            message = FireMessage(
                run_id=run_id,
                trigger_id=trigger_id,
                surface="event",
                event_id=event_id,
                scheduled_ms=ready_ms,
                delay_s=max(0, (ready_ms - now_ms + 999) // 1000),
            )
            if send_fires([message]):
                logger.warning(
                    "event retry not queued; the heartbeat will dispatch it",
                    extra={"trigger_id": trigger_id, "event_id": event_id},
                )
            return "retry" if counted else "deferred"
        except UpdateError as exc:
            if getattr(exc, "cause_response_code", None) != "ConditionalCheckFailedException":
                raise
            if not counted:
                return None
            # attempts used up (or fenced out): fall through to the terminal write
    try:
        EventModel(event_id).update(
            actions=[
                e.status.set(status),
                e.finished_ms.set(now_ms),
                # Out of the sweep's index: the event's bookkeeping is over.
                e.pending_shard.remove(),
                e.pending_sk.remove(),
            ],
            condition=fence,
        )
    except UpdateError as exc:
        if getattr(exc, "cause_response_code", None) == "ConditionalCheckFailedException":
            return None
        raise
    return status


def _on_finish(ctx: RunContext) -> None:
    """After a run of an event trigger settled: record the attempt, retry or finish, pull the next."""
    if ctx.item.kind != "event":
        return
    now_ms = _ms(ctx.finished_at or ctx.now)
    # The slot is free: pull the next event first, it is what a waiting burst waits for.
    # A pull that failed is raised after the attempt is recorded (the runner retries the
    # hook, then hands the message back to the queue): never swallowed.
    pull_error: Exception | None = None
    try:
        dispatch_pending(ctx.item.id)
    except Exception as exc:
        pull_error = exc
    if ctx.message.surface != "event" or ctx.event is None:
        if pull_error is not None:
            raise pull_error
        return  # a manual run held the slot
    event = ctx.spec.get("event") or {}
    status = ctx.status or "failed"
    outcome = _settle_event(
        ctx.event.id,
        run_id=ctx.message.run_id,
        trigger_id=ctx.item.id,
        status=status if status in _TERMINAL else "failed",
        attempt=int(ctx.event.attempt or 1),
        max_attempts=int(event.get("max_attempts") or 3),
        now_ms=now_ms,
        defer_s=(ctx.defer_s or 1) if ctx.deferred else None,
    )
    if outcome is not None:
        record_metric("EventAttempts", outcome=outcome)
    if pull_error is not None:
        raise pull_error


def _on_lost(*, item: TriggerModel, run_id: str, entry: Any, now: datetime) -> None:
    """A reaped event run is a failed attempt: retried, or the event fails."""
    if item.kind != "event":
        return
    try:
        _record_lost_attempt(item, run_id=run_id, entry=entry, now=now)
    except Exception:  # never break the heartbeat's reaping; the sweep keeps pending events moving
        logger.exception("event bookkeeping after a lost run failed", extra={"trigger_id": item.id})


def _record_lost_attempt(item: TriggerModel, *, run_id: str, entry: Any, now: datetime) -> None:
    now_ms = _ms(now)
    if not isinstance(entry, dict) or entry.get("k") != "e" or not entry.get("e"):
        dispatch_pending(item.id)  # a slot was freed: pull the next event
        return
    _, event = _event_spec(item)
    _settle_event(
        str(entry["e"]),
        run_id=run_id,
        trigger_id=item.id,
        status="failed",
        attempt=None,
        max_attempts=int(event.get("max_attempts") or 3),
        now_ms=now_ms,
    )
    dispatch_pending(item.id)


def sweep(*, now: datetime, report: Any) -> None:
    """The safety net of event bookkeeping, run by every heartbeat tick.

    ``pending_all`` holds every event whose bookkeeping is not over: pending (waiting for
    a slot, a retry or a deferral) and running. Rows whose ready time is more than
    ``SWEEP_GRACE_S`` past are read, grouped by trigger, and sorted out with one
    (eventually consistent) GetItem of the trigger:

    - its run is in the trigger's ``in_flight``: it runs. If its runner died, the
      reaper settles it when the lease expires (``_on_lost``).
    - it is in the trigger's queue (``pending_by_trigger``, one KEYS_ONLY query per
      trigger with such rows): it waits its turn while a run is in flight, which pulls
      the next event when it settles. With no run in flight its message was lost: one
      message per trigger restarts the queue (each settled run pulls the next).
    - neither: the event is read. A pending one is a retry or deferral whose message
      was lost: it gets its message again (the runner puts it back in its queue). A
      running one whose lease is ``SWEEP_GRACE_S`` past had its run end (or vanish)
      without its bookkeeping: ``_recover`` finishes it.

    A message that was not lost after all is harmless: the start fence drops it.
    """
    settings = get_settings()
    cutoff = f"{_ms(now) - SWEEP_GRACE_S * 1000:013d}~"
    rows: dict[str, list[tuple[EventModel, str]]] = {}
    for shard in range(settings.due_shards):
        for row in EventModel.pending_all.query(
            str(shard),
            EventModel.pending_sk <= cutoff,
            limit=SWEEP_ROWS_PER_SHARD,
            page_size=500,
        ):
            _, sep, run_id = (row.pending_sk or "").partition("#")
            trigger_id = ids.trigger_id_of_run(run_id) if sep else None
            if trigger_id is not None:
                rows.setdefault(trigger_id, []).append((row, run_id))
    messages: list[FireMessage] = []
    for trigger_id, found in rows.items():
        found.sort(key=lambda pair: pair[0].pending_sk or "")
        try:
            messages += _sweep_trigger(trigger_id, found, now=now, report=report)
        except Exception:  # one trigger's trouble must not stop the sweep of the others
            report.errors += 1
            logger.exception("event sweep of a trigger failed", extra={"trigger_id": trigger_id})
    if not messages:
        return
    failed = send_fires(messages)
    sent = len(messages) - len(failed)
    report.events_dispatched += sent
    record_metric("EventsSwept", sent)
    logger.info("pending events redispatched", extra={"sent": sent, "failed": len(failed)})


def _sweep_trigger(
    trigger_id: str, found: list[tuple[EventModel, str]], *, now: datetime, report: Any
) -> list[FireMessage]:
    """The sweep of one trigger's overdue rows (oldest first): the messages to send."""
    item = dynamo.get_trigger(trigger_id, consistent=False)
    in_flight = dynamo.in_flight_of(item) if item is not None else {}
    loose = [(row, run_id) for row, run_id in found if run_id not in in_flight]
    if not loose:
        return []
    last_sk = loose[-1][0].pending_sk or ""
    queued = {
        row.id
        for row in EventModel.pending_by_trigger.query(
            trigger_id,
            EventModel.pending_sk <= last_sk,
            limit=len(loose),
            page_size=min(500, len(loose)),
        )
    }
    now_ms = _ms(now)
    messages: list[FireMessage] = []
    head: EventModel | None = None
    for row, run_id in loose:
        if row.id in queued:
            head = head or row
            continue
        try:
            event = EventModel.get(row.id, consistent_read=True)
        except DoesNotExist:
            continue
        if event.run_id != run_id:
            continue  # replayed since the index row was read
        if event.status == "pending":
            if event.pending_trigger:
                head = head or row  # queued after all (the query ran behind the index)
                continue
            # A retry or a deferral overdue by SWEEP_GRACE_S: its message was lost.
            message = _message_for(row, waited=True)
            if message is not None:
                messages.append(message)
        elif event.status == "running":
            ready_ms = int((row.pending_sk or "0").partition("#")[0] or 0)
            lease_ms = (
                int(event.lease_ms)
                if event.lease_ms is not None
                else ready_ms + (get_settings().runner_timeout_s + 60) * 1000
            )
            if now_ms < lease_ms + SWEEP_GRACE_S * 1000:
                continue  # its run may still be settling: give it its lease and the grace
            if _recover(event, now=now) is not None:
                report.events_recovered += 1
    if head is not None and not in_flight:
        # The queue has nobody to pull it: its first event's message was lost.
        message = _message_for(head, waited=True)
        if message is not None:
            messages.append(message)
    return messages


def _last_run_of(item: TriggerModel | None) -> dict:
    if item is None or item.last_run is None:
        return {}
    last = item.last_run.as_dict() if hasattr(item.last_run, "as_dict") else item.last_run
    return last if isinstance(last, dict) else {}


def _outcome_of_run(item: TriggerModel | None, event: EventModel, *, now: datetime) -> str:
    """How the attempt of ``event`` ended, from what its run left behind.

    1. Its run record, if it was written after this attempt started (the runner writes
       it after settling the trigger and before the finish hooks; the reaper writes
       ``lost``). Retries keep the run id, so an older record is an older attempt's.
    2. Else the trigger's ``last_run``, written by the same write that settled the run,
       if it names this run and is not older than the attempt: the runner died between
       settling and recording. The record is written from it.
    3. Else the run is lost (its runner died after giving its slot back, e.g. while
       deferring): ``lost``, recorded so.
    """
    trigger_id, run_id = event.trigger_id, event.run_id
    started_ms = int(event.started_ms or 0)
    try:
        run = RunModel.get(trigger_id, run_id, consistent_read=True)
    except DoesNotExist:
        run = None
    if run is not None and run.status in _RUN_ENDED and int(run.finished_at or 0) >= started_ms:
        return str(run.status)
    last = _last_run_of(item)
    if (
        last.get("id") == run_id
        and last.get("status") in _RUN_ENDED
        and int(last.get("finished_at") or 0) >= started_ms
    ):
        status, error = str(last["status"]), last.get("error")
        finished_ms = int(last["finished_at"])
    else:
        status, error, finished_ms = "lost", _LOST_AFTER_SETTLE, _ms(now)
    if item is None:
        return status  # the trigger is gone: its runs are only kept, no new record
    record = runs.new_run_record(
        item,
        run_id=run_id,
        surface="event",
        scheduled_ms=None,
        now=datetime.fromtimestamp(started_ms / 1000, tz=UTC) if started_ms else now,
        event_id=event.id,
    )
    record.status = status
    record.error = error
    record.started_at = started_ms or None
    record.finished_at = finished_ms
    record.attempt = int(event.attempt or 1)
    r = RunModel
    try:
        # Never over a record of this attempt (a late runner's own is the better one).
        record.save(
            condition=r.run_id.does_not_exist()
            | r.finished_at.does_not_exist()
            | (r.finished_at < started_ms)
        )
        record_metric("Runs", status=status, surface="event")
    except PutError as exc:
        if getattr(exc, "cause_response_code", None) != "ConditionalCheckFailedException":
            raise
        written = RunModel.get(trigger_id, run_id, consistent_read=True)
        if written.status in _RUN_ENDED:
            return str(written.status)
    return status


def _recover(event: EventModel, *, now: datetime) -> str | None:
    """Finish the bookkeeping of a running event whose run is over; None if not ours to do.

    The runner settles the trigger (the slot is free), records the run, then its finish
    hook records the attempt on the event. A runner that dies between the first and the
    last of these (or a hook that fails) leaves the event ``running`` with no run in
    flight: never retried, never finished, and refused by replay. The sweep finds it
    past its lease (the lease is what a live run could still take) and applies what the
    hook would have: the run's outcome, with the same fenced ``_settle_event``, so if the
    hook does run after all only one of the two counts. A failed or lost attempt is
    retried while attempts are left. The workflow is never run again for an attempt
    that is on record as finished.
    """
    trigger_id, run_id = event.trigger_id, event.run_id
    item = dynamo.get_trigger(trigger_id)  # consistent: a run still in flight is the reaper's
    if item is not None and run_id in dynamo.in_flight_of(item):
        return None
    status = _outcome_of_run(item, event, now=now)
    attempt = int(event.attempt or 1)
    if item is not None:
        _, spec_event = _event_spec(item)
        max_attempts = int(spec_event.get("max_attempts") or 3)
    else:
        max_attempts = attempt  # a deleted trigger: no retry
    outcome = _settle_event(
        event.id,
        run_id=run_id,
        trigger_id=trigger_id,
        status=status if status in _TERMINAL else "failed",
        attempt=attempt,
        max_attempts=max_attempts,
        now_ms=_ms(now),
    )
    if outcome is None:
        return None  # the finish hook (or another sweep) got there first
    record_metric("EventAttempts", outcome=outcome)
    logger.warning(
        "event bookkeeping finished by the sweep (its run ended without it)",
        extra={"trigger_id": trigger_id, "event_id": event.id, "run_id": run_id, "run": status},
    )
    return outcome


# --- reading and replaying ------------------------------------------------------------


def event_view(event: EventModel) -> dict:
    """An event as the API shows it (no body; headers already clipped and credential-free)."""
    try:
        headers = json.loads(event.headers or "{}")
    except ValueError:
        headers = {}
    return {
        "id": event.id,
        "trigger_id": event.trigger_id,
        "status": event.status,
        "run_id": event.run_id,
        "attempt": int(event.attempt or 0),
        "source": event.source,
        "event_type": event.event_type,
        "dedupe_key": event.dedupe_key,
        "received_at": iso_ms(event.received_ms),
        "retry_at": iso_ms(event.retry_at),
        "finished_at": iso_ms(event.finished_ms),
        "body_size": int(event.body_size or 0),
        "headers": headers,
    }


def list_events(principal: Principal, trigger_id: str, params: dict) -> dict:
    """A trigger's events, newest first: ``{items, next_cursor}``."""
    item = load_owned(principal, trigger_id)
    limit = parse_limit(params.get("limit"))
    cursor = decode_cursor(
        params.get("cursor"),
        shape={"id": "S", "trigger_id": "S", "received_sk": "S"},
        fixed={"trigger_id": item.id},
    )
    status = params.get("status")
    page = EventModel.by_trigger.query(
        item.id, scan_index_forward=False, limit=limit, last_evaluated_key=cursor
    )
    ids_in_order = [row.id for row in page]
    found = {e.id: e for e in EventModel.batch_get(ids_in_order)} if ids_in_order else {}
    items = [event_view(found[i]) for i in ids_in_order if i in found]
    if status:
        items = [e for e in items if e["status"] == status]
    return {"items": items, "next_cursor": encode_cursor(page.last_evaluated_key)}


def replay_event(principal: Principal, event_id: str, *, now: datetime) -> dict:
    """Run a stored event again, as a new run of the same event: 202 ``{run_id}``."""
    if not event_id.startswith("evt_") or len(event_id) > 64:
        raise NotFound(f"event {event_id!r} not found")
    try:
        event = EventModel.get(event_id, consistent_read=True)
    except DoesNotExist:
        raise NotFound(f"event {event_id!r} not found") from None
    if event.tenant != principal.tenant:
        raise NotFound(f"event {event_id!r} not found")
    item = load_owned(principal, event.trigger_id)
    if item.status != "active":
        raise Conflict(f"trigger is disabled ({item.disabled_reason or 'manual'}); enable it first")
    if event.status == "ignored":
        raise NotFound(f"event {event_id!r} not found")  # a mark: nothing was stored to run
    if event.status not in _TERMINAL:
        raise Conflict(f"event is {event.status}; it runs already")
    settings = get_settings()
    now_ms = _ms(now)
    _check_body_kept(event, now_ms=now_ms)
    run_id = ids.event_run_id(item.id, now_ms, event_id)
    e = EventModel
    try:
        event.update(
            actions=[
                e.status.set("pending"),
                e.run_id.set(run_id),
                e.attempt.set(0),
                e.retry_at.remove(),
                e.finished_ms.remove(),
                e.pending_trigger.set(item.id),
                e.pending_shard.set(dynamo.shard_of(event_id, settings.due_shards)),
                e.pending_sk.set(f"{now_ms:013d}#{run_id}"),
                e.expires.set(max(int(event.expires or 0), now_ms // 1000 + 86400)),
            ],
            condition=(e.status == event.status) & (e.run_id == event.run_id),
        )
    except UpdateError as exc:
        if getattr(exc, "cause_response_code", None) == "ConditionalCheckFailedException":
            raise Conflict("the event changed at the same time; try again") from None
        raise
    message = FireMessage(run_id=run_id, trigger_id=item.id, surface="event", event_id=event_id)
    if send_fires([message]):
        logger.warning(
            "replay stored but not dispatched; the heartbeat will dispatch it",
            extra={"trigger_id": item.id, "event_id": event_id},
        )
    audit.record(
        principal,
        "replay",
        tenant=item.tenant,
        trigger_id=item.id,
        now=now,
        detail={"event_id": event_id, "run_id": run_id},
    )
    return {"event_id": event_id, "run_id": run_id}


def _check_body_kept(event: EventModel, *, now_ms: int) -> None:
    """410 if the event's body was in S3 and is no longer kept: a replay could only fail.

    The bucket keeps bodies ``event_retention_days`` + 1 days (its lifecycle rule), but
    an event item lives as long as its dedupe window too (up to 30 days): past its body's
    days it is only the record that its delivery arrived. Small bodies live in the item
    and replay for as long as it exists.
    """
    if not event.body_s3_key:
        return
    days = get_settings().event_retention_days
    kept = int(event.received_ms or 0) + days * 86400 * 1000 > now_ms
    if kept and s3.body_exists(event.body_s3_key):
        return
    raise Gone(
        f"the body of event {event.id} is no longer kept: bodies over "
        f"{get_settings().inline_body_limit // 1000} KB are kept {days} days "
        "(CRONHOOK_EVENT_RETENTION_DAYS); the event stays only as the dedupe record of "
        "its delivery, so it cannot be replayed"
    )


class EventRunPolicy(RunPolicy):
    """An event trigger's part in a run: the event as the payload, its bookkeeping after
    the settle (and the pull of the next event), a lost attempt retried or failed."""

    name = "events"

    def fire_fields(self, ctx: RunContext) -> dict:
        return _fire_extras(ctx)

    def after_settle(self, ctx: RunContext) -> None:
        _on_finish(ctx)

    def after_lost(self, *, item: TriggerModel, run_id: str, entry: Any, now: datetime) -> None:
        _on_lost(item=item, run_id=run_id, entry=entry, now=now)


EVENT_RUNS = EventRunPolicy()
