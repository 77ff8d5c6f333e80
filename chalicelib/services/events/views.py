"""Events as the API shows them: one event, and a trigger's events page by page."""

from __future__ import annotations

import json

from chalicelib.domain.event_rules import EVENT_STATUSES
from chalicelib.domain.records import EventRecord
from chalicelib.services.auth import Principal
from chalicelib.services.lookup import load_owned
from chalicelib.services.pages import choice, decode_cursor, encode_cursor, parse_limit
from chalicelib.services.runs import iso_ms
from chalicelib.store import event_reads

__all__ = ["event_view", "list_events"]


def event_view(event: EventRecord) -> dict:
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
    status = choice(params, "status", EVENT_STATUSES)
    cursor = decode_cursor(
        params.get("cursor"),
        shape={"id": "S", "trigger_id": "S", "received_sk": "S"},
        fixed={"trigger_id": item.id},
    )
    page = event_reads.events_page(item.id, limit=limit, cursor=cursor)
    items = [event_view(e) for e in page]
    if status:
        items = [e for e in items if e["status"] == status]
    return {"items": items, "next_cursor": encode_cursor(page.last_evaluated_key)}
