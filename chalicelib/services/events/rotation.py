"""An event trigger's signing secret: given on create, rotated with a grace, opened to verify.

The secret is sealed with KMS (``store/kms``) and never stored in the clear. A rotation
keeps the previous secrets verifying for their grace (``domain/secret_grace``).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from chalicelib.domain import filters, ids, signatures
from chalicelib.domain.errors import Conflict, ServiceUnavailable, ValidationError
from chalicelib.domain.event_rules import source_of
from chalicelib.domain.records import Trigger
from chalicelib.domain.secret_grace import (
    MAX_PREVIOUS_SECRETS,
    previous_after_rotation,
    previous_in_grace,
)
from chalicelib.observability import logger, record_metric
from chalicelib.services import audit
from chalicelib.services.auth import Principal
from chalicelib.services.events.spec import event_spec, ms, webhook_url
from chalicelib.services.lookup import load_owned
from chalicelib.services.runs import iso_ms
from chalicelib.store import kms
from chalicelib.store.webhook_secrets import write_secrets

if TYPE_CHECKING:  # the request models load pydantic: not on the fire path (cold start)
    from chalicelib.domain.spec import EventIn

__all__ = [
    "MAX_PREVIOUS_SECRETS",
    "validate_event",
    "prepare",
    "webhook_view",
    "rotate_secret",
    "secrets_of",
]


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


def prepare(item: Trigger, event_in: EventIn, *, now: datetime) -> tuple[Trigger, dict]:
    """Give a new event trigger its token and sealed secret: the trigger to store, and the
    part shown once on create."""
    source = event_in.source
    validate_event(event_in)
    if event_in.secret is not None:
        secret = event_in.secret
        _check_secret(source, secret, field="event.secret")
    else:
        secret = signatures.generate_secret(source)  # 422 event.secret where the provider issues it
    token = ids.new_webhook_token(item.id)
    item = replace(item, webhook_token=token, secret_sealed=kms.seal(secret, trigger_id=item.id))
    return item, {"webhook": {"url": webhook_url(token), "secret": secret}}


def webhook_view(item: Trigger) -> dict:
    """On a webhook trigger's view: ``webhook_url``."""
    if item.kind != "event" or not item.webhook_token:
        return {}
    return {"webhook_url": webhook_url(item.webhook_token)}


def _new_secret(source: str, given: str | None) -> str:
    if given is not None:
        _check_secret(source, given, field="secret")
        return given
    if source in signatures.SECRET_REQUIRED:
        raise ValidationError(
            f"{source} issues its own signing secret: pass the new one as secret", field="secret"
        )
    return signatures.generate_secret(source)


def rotate_secret(principal: Principal, trigger_id: str, body: Any, *, now: datetime) -> dict:
    """A new signing secret, shown once; the previous one keeps verifying for ``grace_s``."""
    item = load_owned(principal, trigger_id)
    if item.kind != "event":
        raise Conflict("only event triggers have a signing secret")
    from chalicelib.domain.spec import RotateSecretIn, parse_model  # cold start: API only

    data = parse_model(RotateSecretIn, body if body else {})
    _, event = event_spec(item)
    secret = _new_secret(source_of(event), data.secret)
    now_ms = ms(now)
    sealed = kms.seal(secret, trigger_id=item.id)
    previous = previous_after_rotation(
        current=item.secret_sealed,
        previous=previous_secrets(item, now_ms=now_ms) if data.grace_s > 0 else [],
        grace_s=data.grace_s,
        now_ms=now_ms,
    )
    if not write_secrets(item, sealed=sealed, previous=previous, now_ms=now_ms):
        raise Conflict("the secret was changed at the same time; try again")
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


def previous_secrets(item: Trigger, *, now_ms: int) -> list[tuple[str, int]]:
    """The previous (sealed) secrets still in their grace at ``now_ms``, newest first."""
    return previous_in_grace(
        prev_sealed=item.secret_prev_sealed,
        prev_until=int(item.secret_prev_until) if item.secret_prev_until is not None else None,
        older=item.secret_older,
        now_ms=now_ms,
    )


def secrets_of(item: Trigger, *, now: datetime) -> list[str]:
    """The secrets that verify now: the current one, and the previous ones in their grace."""
    sealed = [item.secret_sealed, *(s for s, _ in previous_secrets(item, now_ms=ms(now)))]
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
