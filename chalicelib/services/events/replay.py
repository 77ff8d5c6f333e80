"""Replaying a stored event: the same event, run again as a new run (``POST /v1/events/{id}/replay``)."""

from __future__ import annotations

from datetime import datetime

from chalicelib.domain import ids
from chalicelib.domain.errors import Conflict, Gone, NotFound
from chalicelib.domain.event_rules import TERMINAL
from chalicelib.domain.records import EventRecord
from chalicelib.observability import logger
from chalicelib.services import audit
from chalicelib.services.auth import Principal
from chalicelib.services.events.spec import ms, pending_shard
from chalicelib.services.lookup import load_owned, load_owned_event
from chalicelib.settings import get_settings
from chalicelib.store import event_writes, s3
from chalicelib.store.sqs import FireMessage, send_fires

__all__ = ["replay_event"]


def replay_event(principal: Principal, event_id: str, *, now: datetime) -> dict:
    """Run a stored event again, as a new run of the same event: 202 ``{run_id}``."""
    event = load_owned_event(principal, event_id)
    item = load_owned(principal, event.trigger_id)
    if item.status != "active":
        raise Conflict(f"trigger is disabled ({item.disabled_reason or 'manual'}); enable it first")
    if event.status == "ignored":
        raise NotFound(f"event {event_id!r} not found")  # a mark: nothing was stored to run
    if event.status not in (*TERMINAL, "throttled"):  # throttled: kept beyond the rate limit
        raise Conflict(f"event is {event.status}; it runs already")
    now_ms = ms(now)
    _check_body_kept(event, now_ms=now_ms)
    run_id = ids.event_run_id(item.id, now_ms, event_id)
    if not event_writes.reset_for_replay(
        event, run_id=run_id, trigger_id=item.id, shard=pending_shard(event_id), now_ms=now_ms
    ):
        raise Conflict("the event changed at the same time; try again")
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


def _check_body_kept(event: EventRecord, *, now_ms: int) -> None:
    """410 if the event's body was in S3 and is no longer kept: a replay could only fail.

    The bucket keeps bodies ``event_retention_days`` + 1 days (its lifecycle rule), but
    an event item lives as long as its dedupe window too (up to 30 days): past its body's
    days it is only the record that its delivery arrived. Small bodies (the item stays
    under 1 KB: ``accept.HOT_ITEM_BYTES``) live in the item and replay for as long as it
    exists.
    """
    if not event.body_s3_key:
        return
    days = get_settings().event_retention_days
    kept = int(event.received_ms or 0) + days * 86400 * 1000 > now_ms
    if kept and s3.body_exists(event.body_s3_key):
        return
    raise Gone(
        f"the body of event {event.id} is no longer kept: bodies that do not fit in the "
        f"event's item (about 1 KB with its headers) are kept {days} days "
        "(CRONHOOK_EVENT_RETENTION_DAYS); the event stays only as the dedupe record of "
        "its delivery, so it cannot be replayed"
    )
