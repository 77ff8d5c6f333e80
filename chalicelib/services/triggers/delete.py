"""Deleting triggers: one (``DELETE /v1/triggers/{id}``), or every trigger of a workflow."""

from __future__ import annotations

from datetime import datetime

from chalicelib import sources
from chalicelib.domain.errors import NotFound, ValidationError
from chalicelib.domain.records import Trigger
from chalicelib.observability import record_metric
from chalicelib.services import audit, quotas
from chalicelib.services.auth import Principal
from chalicelib.services.lookup import load_owned
from chalicelib.services.triggers.shared import stored_spec
from chalicelib.store import payloads, trigger_keys, trigger_reads, trigger_writes

__all__ = ["delete_trigger", "delete_item", "delete_workflow_triggers"]


def delete_trigger(
    principal: Principal, trigger_id: str, *, now: datetime, detail: dict | None = None
) -> None:
    """Delete a trigger: it stops at once (a queued run is dropped at its start fence)."""
    delete_item(principal, load_owned(principal, trigger_id), now=now, detail=detail)


def delete_item(
    principal: Principal, item: Trigger, *, now: datetime, detail: dict | None = None
) -> None:
    """Delete ``item`` and what hangs off it (rule, quota share, state, payload, backfill).

    Runs are kept: they expire with their retention, and stay readable until then. Only
    the caller whose delete removed the item releases and audits (``store/removal.py``);
    another one, concurrent, finds it gone (404, as it would a moment later).
    """
    removed = trigger_writes.delete_trigger(item.id)
    if removed is None:
        raise NotFound(f"trigger {item.id!r} not found")
    item = removed
    spec = stored_spec(item)
    if item.key:  # its name is free again (a PUT by key creates a new trigger)
        trigger_keys.release(item.tenant, item.key, trigger_id=item.id)
    sources.on_delete(item)  # e.g. an eventbridge trigger's rule
    quotas.release(
        item.tenant, triggers=1, runs=quotas.trigger_capacity({"concurrency": spec.concurrency})
    )
    trigger_writes.delete_state(item.id)
    payloads.delete_payload(item.id, spec.payload_ref)
    payloads.delete_about(item.id, spec.about_ref)
    if item.backfill_left:
        from chalicelib.services import ondemand  # the backfill path, loaded when used

        ondemand.drop_backfill(item.id)
    audit.record(
        principal,
        "delete",
        tenant=item.tenant,
        trigger_id=item.id,
        now=now,
        detail={"workflow": item.workflow, **(detail or {})},
    )


def delete_workflow_triggers(principal: Principal, workflow: str, *, now: datetime) -> dict:
    """Delete every trigger of the caller's tenant that runs ``workflow``; ``{deleted: n}``."""
    if not workflow or len(workflow) > 200:
        raise ValidationError("workflow must be 1 to 200 characters", field="name")
    deleted = 0
    # The tenant index is keys-only: read every id first, then the items in batches of 100.
    for item in trigger_reads.get_triggers(trigger_reads.tenant_trigger_ids(principal.tenant)):
        if item.workflow == workflow and item.tenant == principal.tenant:
            try:
                delete_item(principal, item, now=now, detail={"via": "workflow"})
            except NotFound:  # deleted meanwhile by someone else: not this call's
                continue
            deleted += 1
    record_metric("TriggersDeleted", deleted)
    return {"deleted": deleted}
