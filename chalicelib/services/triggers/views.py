"""A trigger as the API shows it, and ``GET /v1/triggers/{id}``."""

from __future__ import annotations

from chalicelib.domain import schedule
from chalicelib.domain.records import Trigger
from chalicelib.domain.source_names import describe_event
from chalicelib.domain.spec import decode_schedule
from chalicelib.domain.trigger_spec import TriggerSpec
from chalicelib.services import budgets, events
from chalicelib.services import state as state_contract
from chalicelib.services.auth import Principal
from chalicelib.services.lookup import load_owned
from chalicelib.services.runs import iso_ms
from chalicelib.services.triggers.drift import drift_view
from chalicelib.services.triggers.shared import last_run_of, loaded_spec
from chalicelib.store import state as state_store
from chalicelib.store import triggers as triggers_store
from chalicelib.workflows.remote import display_target

__all__ = ["trigger_view", "get_trigger_view", "describe"]


def describe(item: Trigger, spec: TriggerSpec) -> str:
    """The trigger's cadence in words: ``every 5 minutes``, ``On GitHub push``..."""
    if item.kind == "event":
        return describe_event(spec.event)
    if item.sched:
        return schedule.describe(decode_schedule(item.sched))
    return ""


def _last_run_view(item: Trigger) -> dict | None:
    last_run = last_run_of(item)
    if not last_run:
        return None
    return {
        "id": last_run.get("id"),
        "status": last_run.get("status"),
        "finished_at": iso_ms(last_run.get("finished_at")),
        "error": last_run.get("error"),
    }


def _pause_view(item: Trigger) -> dict:
    disabled = item.status == "disabled"
    return {
        "enabled": item.status == "active",
        "status": item.status,
        "disabled_reason": item.disabled_reason,
        "disabled_note": item.disabled_note if disabled else None,
        "disabled_by": item.disabled_by if disabled else None,
        "disabled_at": iso_ms(item.disabled_ms) if disabled else None,
        "next_fire_at": iso_ms(triggers_store.next_slot_of(item))
        if item.status == "active"
        else None,
    }


def _settings_view(item: Trigger, spec: TriggerSpec) -> dict:
    shown = display_target(item.workflow)
    return {
        "id": item.id,
        # An http target's query values are masked (users put tokens in query strings).
        "workflow": shown,
        "title": spec.title,
        "display_name": spec.display_name(shown),
        "tags": list(spec.tags),
        "kind": item.kind,
        "cadence": describe(item, spec),
        "schedule": spec.schedule,
        "event": spec.event,
        "payload": spec.payload,
        "backfill": spec.backfill,
        "serialize_key": spec.serialize_key,
        "secret_scope": spec.secret_scope,
        "limits": spec.limits,
        "overlap": spec.overlap,
        "concurrency": spec.concurrency,
        "allow_destructive": spec.allow_destructive,
        "history": spec.history,
        # An ``at`` trigger's fate after its one run (the field means nothing elsewhere).
        **({"after_fire": spec.after_fire} if item.kind == "at" else {}),
    }


def trigger_view(
    item: Trigger,
    *,
    state: dict | None = None,
    extra: dict | None = None,
    about: dict | None = None,
) -> dict:
    """A trigger as the API shows it (never a secret); ``about``: its title and tags when
    a list read them already (``payloads.load_abouts``)."""
    raw, spec = loaded_spec(item, about=about if about is not None else True)
    view = {
        **_settings_view(item, spec),
        **_pause_view(item),
        "consecutive_failures": int(item.consecutive_failures or 0),
        "run_count": int(item.run_count or 0),
        "last_run": _last_run_view(item),
        "webhook_url": None,
        "created_by": item.created_by,
        "created_at": iso_ms(item.created_ms),
        "updated_at": iso_ms(item.updated_ms),
        "version": int(item.version or 1),
        "key": item.key,
        "managed_by": item.managed_by,
        "drift": drift_view(item),
        "warnings": [],
    }
    if state is not None:
        view["state"] = state
    # What other services add to the view, in this order: the webhook URL, warnings, budget.
    view.update(events.webhook_view(item))
    view.update(state_contract.warnings_view(item, state))
    view.update(budgets.budget_view(item, raw))
    if extra:
        view.update(extra)
    return view


def get_trigger_view(principal: Principal, trigger_id: str) -> dict:
    """One trigger, with its state."""
    item = load_owned(principal, trigger_id)
    state, _ = state_store.get_state(item.id)
    return trigger_view(item, state=state)
