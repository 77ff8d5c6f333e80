"""``POST /v1/triggers/{id}/fire``: claim a manual run and enqueue it at once."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from chalicelib.domain.due import to_ms
from chalicelib.domain.errors import Conflict, ServiceUnavailable
from chalicelib.domain.ids import manual_run_id
from chalicelib.domain.records import Trigger
from chalicelib.domain.spec import FireIn, parse_model
from chalicelib.services import audit
from chalicelib.services.auth import Principal
from chalicelib.services.lookup import load_owned
from chalicelib.services.triggers.shared import stored_spec
from chalicelib.settings import get_settings
from chalicelib.store import claims as claims_store
from chalicelib.store import run_reads
from chalicelib.store import triggers as triggers_store
from chalicelib.store.backfill import NO_PAYLOAD
from chalicelib.store.sqs import FireMessage, send_fires

__all__ = ["fire_now", "start_manual", "QUEUED_FIRST_WAIT_S"]

# A queued manual run's first look at its trigger (then ``runner/queued.py`` waits longer).
QUEUED_FIRST_WAIT_S = 2


def _fireable(principal: Principal, trigger_id: str, *, now: datetime) -> Trigger:
    """The trigger, if a manual run may start: 409 when paused, 503 when switched off."""
    item = load_owned(principal, trigger_id)
    if item.status != "active":
        raise Conflict(f"trigger is disabled ({item.disabled_reason or 'manual'}); enable it first")
    from chalicelib.services import switch  # the switch's own table, loaded when used

    if not switch.triggers_enabled(now=now):
        raise ServiceUnavailable("triggers are switched off (triggers_enabled); nothing fires")
    return item


def _claim(item: Trigger, run_id: str, *, now: datetime) -> str | None:
    """Claim ``run_id``: its due shard, or None when the trigger's concurrency is full."""
    settings = get_settings()
    capacity = stored_spec(item).concurrency
    shard = triggers_store.shard_of(item.id, settings.due_shards)
    outcome, _ = claims_store.claim_and_start(
        item.id,
        run_id=run_id,
        surface="manual",
        lease_ms=to_ms(now) + settings.lease_s * 1000,
        capacity=capacity,
        shard=shard,
        started=False,
    )
    if outcome != claims_store.ClaimResult.CLAIMED:
        return None
    return shard


def fire_now(principal: Principal, trigger_id: str, *, now: datetime, body: Any = None) -> dict:
    """Claim a manual run and enqueue it at once; 202 ``{run_id}``.

    A body ``{"payload": ...}`` is this run's payload instead of the trigger's (kept in
    an item of its own until the run settles: the queue message carries ids only). A
    busy trigger queues the run (``{run_id, queued: true}``: the runner claims it when
    its turn comes), unless the body says ``if_idle`` (then 409).
    """
    data = parse_model(FireIn, body if body is not None else {})
    given = "payload" in data.model_fields_set
    return start_manual(
        principal,
        trigger_id,
        now=now,
        payload=data.payload if given else NO_PAYLOAD,
        if_idle=data.if_idle,
    )


def start_manual(
    principal: Principal,
    trigger_id: str,
    *,
    now: datetime,
    payload: Any,
    if_idle: bool,
    rerun_of: str | None = None,
) -> dict:
    """A manual run of the trigger (``payload``: its own, or ``NO_PAYLOAD``); ``{run_id}``."""
    item = _fireable(principal, trigger_id, now=now)
    run_id = manual_run_id(item.id, to_ms(now))
    shard = _claim(item, run_id, now=now)
    if shard is None and if_idle:
        capacity = stored_spec(item).concurrency
        raise Conflict(f"trigger is busy: {capacity} run(s) already in flight")
    from chalicelib.services import ondemand  # the on-demand path, loaded when used

    with_payload = payload is not NO_PAYLOAD
    if with_payload or rerun_of is not None or shard is None:
        # Written before the message is sent: the runner never starts without it (and a
        # queued run's request is what its deliveries take turns on).
        ondemand.save_fire_payload(run_id, payload, rerun_of=rerun_of)
    if shard is None:
        # Listed as queued from now on (``run_lists``): its request is keyed by run id only.
        run_reads.note_queued_fire(item.id, run_id)
    message = FireMessage(
        run_id=run_id,
        trigger_id=item.id,
        surface="manual",
        scheduled_ms=to_ms(now),
        tenant=item.tenant,
        queued=1 if shard is None else 0,
        delay_s=QUEUED_FIRST_WAIT_S if shard is None else 0,
    )
    if send_fires([message]):
        if shard is not None:
            claims_store.release_claim(item.id, run_id=run_id, slot_ms=None, shard=shard)
        ondemand.delete_fire_payload(run_id)
        raise ServiceUnavailable("the run could not be queued; try again")
    detail = {"run_id": run_id, "with_payload": with_payload, "queued": shard is None}
    if rerun_of is not None:
        detail["rerun_of"] = rerun_of
    audit.record(
        principal,
        "rerun" if rerun_of else "fire",
        tenant=item.tenant,
        trigger_id=trigger_id,
        now=now,
        detail=detail,
    )
    return {"run_id": run_id, "queued": shard is None}
