"""Every webhook delivery to a known token, accepted or rejected, with its cause.

Ingress (``events.receive``) is wrapped by ``recorded``: once the answer is known, one
row is written per delivery that did not become an event, kept 7 days (TTL). An accepted
delivery writes nothing more: its event item (received time, size, clipped headers) is its
record, and the listing merges the trigger's events in, newest first, as ``accepted``
rows. That keeps the accepted path at three AWS calls and one write less. A wrapper rather than one of
``events.delivery_hooks``: a hook gets neither the token (a body too large is refused
before the trigger is read, so only the token names it) nor the refused exception,
whose cause (``signature mismatch``, ``timestamp outside tolerance``) the row keeps. What a flood can write is bounded: the
deliveries that did not become an event (rejected, duplicate, filtered, throttled) are
counted per trigger and hour with one atomic ADD, and only the first
``REJECTED_PER_HOUR`` of each hour are written; the rest are only counted (the
counter, and the ``DeliveriesNotRecorded`` metric). Accepted deliveries are always listed:
each one is a stored event, which the ingress bounds already. Recording never changes
the answer: a failure to record is logged and the delivery goes on. A refused delivery
is recorded off the response's path (``services/offpath.py``): its answer must not take
longer for a real token than for an unknown one.
"""

from __future__ import annotations

import functools
import hmac
import json
import secrets
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from chalicelib.domain import ids, signatures
from chalicelib.domain.epoch_ms import ms
from chalicelib.domain.errors import CronhookError, InvalidSignature, PayloadTooLarge
from chalicelib.domain.event_sources import DELIVERED_SOURCES
from chalicelib.domain.records import Delivery, EventRecord
from chalicelib.observability import logger, record_metric
from chalicelib.services import offpath
from chalicelib.services.auth import Principal
from chalicelib.services.lookup import load_owned
from chalicelib.services.pages import choice, decode_cursor, encode_cursor, parse_limit
from chalicelib.services.runs import iso_ms
from chalicelib.store import deliveries as store
from chalicelib.store import event_reads, triggers

__all__ = ["OUTCOMES", "REJECTED_PER_HOUR", "RETENTION_S", "recorded", "record", "list_deliveries"]

OUTCOMES = (
    "accepted",
    "duplicate",
    "filtered",
    "invalid_signature",
    "stale",
    "too_large",
    "throttled",
)
REJECTED_PER_HOUR = 100
RETENTION_S = 7 * 86400
DELIVERY_CURSOR = {"trigger_id": "S", "sk": "S"}


def _outcome_of_answer(status: int, answer: Mapping[str, Any]) -> str | None:
    if "challenge" in answer:
        return None  # Slack's URL check: not a delivery of an event
    if answer.get("duplicate"):
        return "duplicate"
    if answer.get("throttled"):
        return "throttled"  # stored beyond the trigger's rate limit: kept, not run
    if answer.get("ignored") == "filter":
        return "filtered"
    if answer.get("ignored"):
        return None  # source_gone: the trigger was disabled, nothing to show per delivery
    return "accepted" if 200 <= status < 300 else None


def _outcome_of_error(exc: CronhookError) -> tuple[str | None, str | None]:
    """(outcome, detail) of a refused delivery; (None, None) if it is not one we record."""
    named = getattr(exc, "outcome", None)  # the ingress names it (gone, unavailable...)
    if named is not None and named not in OUTCOMES:
        return None, None
    if isinstance(exc, PayloadTooLarge):
        return "too_large", str(exc.message)
    if isinstance(exc, InvalidSignature):
        # The ingress answers every signature failure alike (tokens cannot be probed); the
        # step that failed is kept on the exception, or on the one it replaced.
        reason = getattr(exc, "reason", None) or getattr(exc.__context__, "reason", None)
        reason = str(reason) if reason else None
        stale = named == "stale" or bool(reason and "tolerance" in reason)
        return ("stale" if stale else "invalid_signature"), reason
    if exc.STATUS_CODE == 429:
        return "throttled", str(exc.message)
    return None, None


def _trigger_id_for(token: str, *, known: bool) -> str | None:
    """The trigger a token (or a verified trigger id) names; unverified, only if it is its own."""
    if known and token.startswith("trg_") and "." not in token:
        return token
    trigger_id = ids.trigger_id_of_token(token) if len(token) <= 128 else None
    if trigger_id is None or known:
        return trigger_id
    item = triggers.get_trigger(trigger_id, consistent=False)
    if item is None or not item.webhook_token:
        return None
    expected = item.webhook_token.encode("utf-8", "surrogatepass")
    if not hmac.compare_digest(expected, token.encode("utf-8", "surrogatepass")):
        return None
    return trigger_id


def record(
    trigger_id: str,
    *,
    outcome: str,
    status: int,
    size: int,
    headers: Mapping[str, str],
    now: datetime,
    event_id: str | None = None,
    detail: str | None = None,
) -> bool:
    """Write one delivery (bounded); True if written. An ``accepted`` one is its event's item:
    nothing is written."""
    if outcome == "accepted" and event_id:
        return False
    now_ms = ms(now)
    expires = now_ms // 1000 + RETENTION_S
    if outcome != "accepted":
        seen = store.count_in_hour(trigger_id, hour=now_ms // 3_600_000, expires=expires)
        if seen > REJECTED_PER_HOUR:
            record_metric("DeliveriesNotRecorded", outcome=outcome)
            return False
    delivery_id = "dlv_" + secrets.token_hex(8)
    store.put_delivery(
        Delivery(
            trigger_id=trigger_id,
            sk=f"{now_ms:013d}#{delivery_id}",
            id=delivery_id,
            received_ms=now_ms,
            outcome=outcome,
            detail=detail[:200] if detail else None,
            status=status,
            event_id=event_id,
            size=size,
            headers=json.dumps(signatures.clip_headers(headers), separators=(",", ":")),
            expires=expires,
        )
    )
    return True


def _record_quietly(token: str, *, known: bool, **fields: Any) -> None:
    try:
        trigger_id = _trigger_id_for(token, known=known)
        if trigger_id is not None:
            record(trigger_id, **fields)
    except Exception:  # noqa: BLE001 (recording must never change the ingress's answer)
        logger.warning("a webhook delivery could not be recorded", exc_info=True)


def recorded(receive: Callable[..., tuple[int, dict]]) -> Callable[..., tuple[int, dict]]:
    """Wrap the ingress: record each delivery once its outcome is known."""

    @functools.wraps(receive)
    def wrapper(
        token: str, *, body: bytes, headers: Mapping[str, str], now: datetime
    ) -> tuple[int, dict]:
        try:
            status, answer = receive(token, body=body, headers=headers, now=now)
        except CronhookError as exc:
            outcome, detail = _outcome_of_error(exc)
            # The ingress names the trigger of a verified token; it reads none for a body
            # too large (size comes first), so that one is resolved here.
            named_id = getattr(exc, "trigger_id", None)
            if outcome is not None and (
                named_id or not hasattr(exc, "trigger_id") or outcome == "too_large"
            ):
                # Off the response's path: a refusal costs the same whether the token is
                # real (this write) or not (none), so the time tells no token apart.
                offpath.refusals.submit(
                    functools.partial(
                        _record_quietly,
                        named_id or token,
                        known=bool(named_id),
                        outcome=outcome,
                        status=exc.STATUS_CODE,
                        size=len(body),
                        headers=dict(headers),
                        now=now,
                        detail=detail,
                    )
                )
            raise
        outcome = _outcome_of_answer(status, answer)
        if outcome is not None:
            _record_quietly(
                token,
                known=True,
                outcome=outcome,
                status=status,
                size=len(body),
                headers=headers,
                now=now,
                event_id=answer.get("event_id"),
            )
        return status, answer

    return wrapper


def delivery_view(row: Delivery) -> dict:
    """A delivery as the API shows it (headers without credentials)."""
    try:
        headers = json.loads(row.headers or "{}")
    except ValueError:
        headers = {}
    return {
        "id": row.id,
        "received_at": iso_ms(row.received_ms),
        "outcome": row.outcome,
        "detail": row.detail,
        "status": row.status,
        "event_id": row.event_id,
        "run_id": None,
        "size": row.size,
        "headers": headers,
    }


def accepted_view(event: EventRecord) -> dict:
    """The delivery an event was accepted from, as ``delivery_view`` shows a recorded one."""
    try:
        headers = json.loads(event.headers or "{}")
    except ValueError:
        headers = {}
    return {
        "id": "dlv_" + event.id.removeprefix("evt_"),
        "received_at": iso_ms(event.received_ms),
        "outcome": "accepted",
        "detail": None,
        "status": 202,
        "event_id": event.id,
        "run_id": event.run_id,  # a window's run for each event it took
        "size": int(event.body_size or 0),
        "headers": headers,
    }


def list_deliveries(principal: Principal, trigger_id: str, params: dict) -> dict:
    """A page of a trigger's deliveries, newest first (``?outcome=`` filters).

    Accepted ones are the trigger's events, the others its recorded rows: both are sorted
    by ``<received ms>#<id>``, so a page is the newest of both before the cursor's key.
    """
    item = load_owned(principal, trigger_id)
    offpath.refusals.flush()  # what this process still holds of its refusals, first
    limit = parse_limit(params.get("limit"))
    outcome = choice(params, "outcome", OUTCOMES)
    cursor = decode_cursor(
        params.get("cursor"), shape=DELIVERY_CURSOR, fixed={"trigger_id": item.id}
    )
    if outcome not in (None, "accepted"):
        rows = store.query_deliveries(
            item.id, limit=limit, last_evaluated_key=cursor, outcome=outcome
        )
        return {
            "items": [delivery_view(r) for r in rows],
            "next_cursor": encode_cursor(rows.last_evaluated_key),
        }
    before = cursor["sk"]["S"] if cursor else None
    page, last_sk = _merged_page(item.id, before=before, limit=limit, accepted_only=bool(outcome))
    last_key = {"trigger_id": {"S": item.id}, "sk": {"S": last_sk}} if last_sk else None
    return {"items": page, "next_cursor": encode_cursor(last_key)}


def _merged_page(
    trigger_id: str, *, before: str | None, limit: int, accepted_only: bool
) -> tuple[list[dict], str | None]:
    """The newest ``limit`` deliveries before ``before``, and the key to go on from.

    Each source is read ``limit`` rows deep; one that filled its read may hold older rows,
    so only rows at or above its last key are certain to be in order (``floor``).
    """
    rows: list[tuple[str, dict]] = []
    floors: list[str] = []
    recorded: list[Delivery] = []
    if not accepted_only:
        recorded = store.deliveries_before(trigger_id, before=before, limit=limit)
        if len(recorded) == limit:
            floors.append(recorded[-1].sk)
        # Rows of accepted deliveries written before their events were their record.
        rows += [(r.sk, delivery_view(r)) for r in recorded if r.outcome != "accepted"]
    # A throttled delivery is stored as an event too, and recorded as ``throttled``.
    shown = {r.event_id for r in recorded if r.outcome == "throttled" and r.event_id}
    events = event_reads.events_before(trigger_id, before=before, limit=limit)
    if len(events) == limit:
        floors.append(events[-1].received_sk)
    rows += [
        (e.received_sk, accepted_view(e))
        for e in events
        if e.source not in DELIVERED_SOURCES and e.status != "throttled" and e.id not in shown
    ]
    floor = max(floors, default="")
    ordered = sorted((row for row in rows if row[0] >= floor), key=lambda r: r[0], reverse=True)
    page = ordered[:limit]
    if len(ordered) > limit or floors:
        return [view for _, view in page], page[-1][0] if page else floor
    return [view for _, view in page], None
