"""``PATCH /v1/triggers/{id}``: edit a trigger in place, fenced on its version.

1. Validate the body (``TriggerPatch``), then merge it into the stored settings and
   validate the result as a whole (``TriggerIn``): every 422 names its field.
2. A cadence edit infers the kind from the field sent (``cron``, ``interval_s`` or
   ``at``), drops the other kind's fields, and recomputes the next slot strictly after
   ``max(now, the last slot claimed)``: a slot that already ran, or is running, is
   never fired again, whatever the new schedule says.
3. One conditional write, fenced on ``version`` and on what a claim changes (see
   ``patch_write``); a state edit goes in the same transaction, with CAS on the
   state's own version. A lost race re-reads and tries again; a stale ``version`` the
   client sent is a 409.
4. Audit the change as a field diff (never a secret).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from chalicelib.domain.errors import Conflict, ValidationError
from chalicelib.domain.records import Trigger
from chalicelib.domain.spec import TriggerPatch, parse_model
from chalicelib.domain.trigger_patch import diff, version_conflict
from chalicelib.observability import record_metric
from chalicelib.services import audit, quotas
from chalicelib.services.auth import Principal
from chalicelib.services.lookup import load_owned
from chalicelib.services.triggers.drift import edited_fields, note_edit
from chalicelib.services.triggers.patch_write import Raced, write_patch
from chalicelib.services.triggers.shared import enqueue_if_sent, stored_spec
from chalicelib.services.triggers.views import trigger_view
from chalicelib.store import triggers as triggers_store

__all__ = ["PATCH_ATTEMPTS", "patch_trigger"]

PATCH_ATTEMPTS = 4


def _capacity_change(item: Trigger, data: TriggerPatch, sent: set[str]) -> int:
    """How much the patch changes the trigger's concurrency (its share of the runs quota)."""
    if "concurrency" not in sent or data.concurrency is None:
        return 0
    now_capacity = quotas.trigger_capacity({"concurrency": stored_spec(item).concurrency})
    return quotas.trigger_capacity({"concurrency": data.concurrency}) - now_capacity


def _write_within_quota(
    principal: Principal, item: Trigger, data: TriggerPatch, sent: set[str], *, now: datetime
) -> tuple[Trigger, dict, dict] | None:
    """``write_patch`` with the runs quota it needs; None when it lost a race.

    More concurrency takes more of the tenant's runs-in-flight quota (429 quota), before
    the write; a write that does not happen gives it back.
    """
    grow = _capacity_change(item, data, sent)
    if grow > 0:
        quotas.take(item.tenant, runs=grow)
    try:
        written = write_patch(principal, item, data, sent, now=now)
    except Raced:
        if grow > 0:
            quotas.release(item.tenant, runs=grow)
        return None
    except Exception:
        if grow > 0:
            quotas.release(item.tenant, runs=grow)
        raise
    if grow < 0:
        quotas.release(item.tenant, runs=-grow)
    return written


def _attempt(
    principal: Principal, item: Trigger, data: TriggerPatch, sent: set[str], *, now: datetime
) -> dict | None:
    """One read-merge-write of the patch: the new view, or None when it lost a race."""
    before, sched_before = trigger_view(item), item.sched
    written = _write_within_quota(principal, item, data, sent, now=now)
    if written is None:
        return None
    updated, state, shown_once = written
    after = trigger_view(updated, state=state, extra=shown_once)
    if after.get("next_fire_at") != before.get("next_fire_at"):
        enqueue_if_sent(triggers_store.get_trigger(item.id), now=now)
    elif updated.sched != sched_before:
        # The same next slot (its message is out, and its claim reads the new schedule),
        # but the slots after it inside the window the heartbeat took are new.
        enqueue_if_sent(triggers_store.get_trigger(item.id), now=now, next_sent=True)
    changes = diff(before, after, state_changed="state" in sent, payload_changed="payload" in sent)
    audit.record(
        principal,
        "update",
        tenant=item.tenant,
        trigger_id=item.id,
        now=now,
        detail={"version": int(updated.version or 1), "changes": changes},
    )
    record_metric("TriggersUpdated", kind=updated.kind)
    return after


def patch_trigger(
    principal: Principal, trigger_id: str, body: Any, *, now: datetime, as_code: bool = False
) -> dict:
    """Edit a trigger in place; 200 with the trigger, 409 on a stale ``version``.

    A managed trigger's edit is noted as drift, with a warning (``drift.note_edit``),
    unless it is its tool's own (``as_code``: a PUT by key).
    """
    data = parse_model(TriggerPatch, body)
    sent = set(data.model_fields_set) - {"version"}
    if not sent:
        raise ValidationError("the patch changes nothing: send at least one field", field=None)
    for _attempt_no in range(PATCH_ATTEMPTS):
        item = load_owned(principal, trigger_id)
        conflict = version_conflict(data.version, int(item.version or 1))
        if conflict is not None:
            raise conflict
        # A managed trigger's view before the edit: what the edit changed is its drift.
        before = trigger_view(item) if item.managed_by and not as_code else None
        after = _attempt(principal, item, data, sent, now=now)
        if after is not None:
            if before is None:
                return after
            return note_edit(principal, item, after, edited_fields(before, after, sent), now=now)
    raise Conflict("the trigger kept changing while it was edited; try again", field="version")
