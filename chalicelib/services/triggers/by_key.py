"""Triggers as code: ``PUT``/``GET``/``DELETE /v1/triggers/by-key/{key}``.

A PUT creates the trigger its key names, or updates it in place through the same code as
``PATCH`` (so a cadence change keeps the state, the run history and the webhook secret):

1. Validate the key, ``managed_by`` and the create body (422 naming the field; nothing is
   written before).
2. Reserve the key for a new trigger id with a conditional put (``store/trigger_keys``).
   Won: create the trigger under that id (a failure gives the key back). Lost: the key
   names a trigger already.
3. Compare the body with that trigger (``domain/trigger_keys``): nothing differs → 200
   ``changed: false`` and nothing is written; else one PATCH of the fields that differ,
   and a rotation when the provider secret given is not the one that verifies now.
4. Label the trigger (key, ``managed_by``) and forget its drift.

``plan_put`` (``POST /v1/triggers/by-key/{key}/plan``) stops after step 3 and answers the
plan instead: what ``cronhook diff`` shows.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from chalicelib import sources
from chalicelib.domain import schedule, signatures
from chalicelib.domain.due import to_ms
from chalicelib.domain.errors import Conflict, NotFound, ValidationError
from chalicelib.domain.event_sources import SIGNED_SOURCES
from chalicelib.domain.ids import new_trigger_id
from chalicelib.domain.records import Trigger
from chalicelib.domain.spec import schedule_spec_from
from chalicelib.domain.trigger_keys import (
    check_key,
    check_managed_by,
    comparable,
    field_changes,
    normalized,
    update_body,
)
from chalicelib.services import state as state_contract
from chalicelib.services.auth import Principal
from chalicelib.services.lookup import load_owned
from chalicelib.services.triggers.create import create_trigger, parse_body
from chalicelib.services.triggers.delete import delete_trigger
from chalicelib.services.triggers.patch import patch_trigger
from chalicelib.services.triggers.shared import first_fire, spec_to_store
from chalicelib.services.triggers.views import get_trigger_view
from chalicelib.settings import get_settings
from chalicelib.store import payloads, trigger_keys
from chalicelib.store import triggers as triggers_store
from chalicelib.workflows import get_workflow
from chalicelib.workflows.remote import display_target

__all__ = ["put_trigger", "plan_put", "get_by_key", "delete_by_key", "RESERVATION_GRACE_MS"]

# A key reserved this recently whose trigger is not there yet is being created by another
# request; older, its creator died between its two writes and the key may be taken over.
RESERVATION_GRACE_MS = 60_000
_ATTEMPTS = 3


def _split(key: str, body: Any) -> tuple[dict, str | None]:
    """The create body and ``managed_by`` of a PUT body (``key`` may repeat the path's)."""
    check_key(key)
    if not isinstance(body, dict):
        raise ValidationError("the body must be a JSON object (a create body)", field=None)
    create = dict(body)
    if "key" in create and create.pop("key") != key:
        raise ValidationError("key in the body differs from the key in the path", field="key")
    managed_by = check_managed_by(create.pop("managed_by", None))
    return create, managed_by


def _owner(principal: Principal, key: str) -> Trigger | None:
    """The caller's trigger under ``key``; None when the key is free, or reserved for a
    trigger not (or no longer) there."""
    held = trigger_keys.reservation(principal.tenant, key)
    if held is None:
        return None
    item = triggers_store.get_trigger(held.trigger_id)
    return item if item is not None and item.tenant == principal.tenant else None


def _unkeyed(principal: Principal, key: str) -> Trigger | None:
    """The caller's trigger without a key whose id is ``key`` (see ``_adopted``)."""
    item = triggers_store.get_trigger(key) if key.startswith("trg_") else None
    if item is None or item.tenant != principal.tenant or item.key:
        return None
    return item


def _adopted(principal: Principal, key: str, *, now: datetime) -> Trigger | None:
    """A trigger without a key, named by its own id (``cronhook export`` writes such keys):
    the key is reserved for it, so the file now manages it. None when there is none."""
    item = _unkeyed(principal, key)
    if item is None:
        return None
    trigger_keys.reserve(principal.tenant, key, trigger_id=item.id, now_ms=to_ms(now))
    return _owner(principal, key)


def _desired(create: dict, *, now: datetime) -> tuple[Any, dict]:
    data = parse_body(create, now=now)
    spec = spec_to_store(data, exclude={"state"})
    return data, comparable(spec, workflow=data.workflow, enabled=data.enabled)


def _check(data: Any, *, now: datetime, schedule_too: bool, event_too: bool) -> None:
    """The checks create (or the PATCH) makes beyond the request model, writing nothing:
    a plan refuses what the apply would refuse, naming the same field."""
    if schedule_too and data.schedule is not None:
        spec = schedule_spec_from(data.schedule, anchor_at=now)
        schedule.validate_schedule(spec, min_interval_s=get_settings().min_interval_s)
        first_fire(spec, now=now)
    if event_too and data.event is not None:
        sources.validate_event(data.event)
        if data.event.source in SIGNED_SOURCES and data.event.secret is None:
            signatures.generate_secret(data.event.source)  # 422 where the provider issues it
    registered = get_workflow(data.workflow)
    state = state_contract.seed_state(registered, data, data.state)
    state_contract.validate_state(registered, data, state)


def _current(item: Trigger) -> dict:
    raw = payloads.load_spec(item, about=True)
    return comparable(raw, workflow=item.workflow, enabled=item.status == "active")


def _secret_changes(item: Trigger, data: Any, *, now: datetime) -> bool:
    """Whether the provider secret given differs from the one that verifies now."""
    given = data.event.secret if data.event is not None else None
    if given is None or item.kind != "event":
        return False
    from chalicelib.services.events.rotation import secrets_of

    opened = secrets_of(item, now=now)
    return not opened or opened[0] != given


def _plan(item: Trigger, create: dict, managed_by: str | None, *, now: datetime) -> dict:
    """What the PUT would change on ``item``: fields, the secret, the label, the drift."""
    data, desired = _desired(create, now=now)
    if desired["workflow"] == display_target(item.workflow):
        # The view's form of the target (query values masked), from an export: unchanged.
        desired["workflow"] = item.workflow
    current = _current(item)
    changes = field_changes(normalized(current), normalized(desired))
    body = update_body(current, desired)  # a change that cannot be made in place: 422
    _check(data, now=now, schedule_too="schedule" in body, event_too="event" in body)
    rotate = _secret_changes(item, data, now=now)
    if rotate:
        changes["event.secret"] = {"from": "(hidden)", "to": "(hidden, new)"}
    if managed_by is not None and managed_by != item.managed_by:
        changes["managed_by"] = {"from": item.managed_by, "to": managed_by}
    return {"data": data, "changes": changes, "patch": body, "rotate": rotate}


def _update(
    principal: Principal,
    item: Trigger,
    key: str,
    plan: dict,
    managed_by: str | None,
    *,
    now: datetime,
) -> dict:
    if plan["patch"]:
        patch_trigger(principal, item.id, plan["patch"], now=now, as_code=True)
    if plan["rotate"]:
        from chalicelib.services.events.rotation import rotate_secret

        rotate_secret(principal, item.id, {"secret": plan["data"].event.secret}, now=now)
    labelled = managed_by if managed_by is not None else item.managed_by
    if item.key != key or labelled != item.managed_by or item.drift:
        trigger_keys.set_managed(item.id, key=key, managed_by=labelled)
    view = get_trigger_view(principal, item.id)
    return {**view, "changed": bool(plan["changes"]), "changes": plan["changes"]}


def _create(
    principal: Principal, key: str, create: dict, managed_by: str | None, *, now: datetime
) -> dict | None:
    """Reserve ``key`` and create its trigger; None when the key is taken (by a live one)."""
    parse_body(create, now=now)  # every 422 before the reservation
    trigger_id = new_trigger_id()
    tenant, now_ms = principal.tenant, to_ms(now)
    if not trigger_keys.reserve(tenant, key, trigger_id=trigger_id, now_ms=now_ms):
        held = trigger_keys.reservation(tenant, key)
        if held is None or triggers_store.get_trigger(held.trigger_id) is not None:
            return None
        if now_ms - held.reserved_ms < RESERVATION_GRACE_MS:
            raise Conflict(f"key {key!r} is being created by another request; try again")
        if not trigger_keys.take_over(
            tenant, key, expected=held.trigger_id, trigger_id=trigger_id, now_ms=now_ms
        ):
            return None
    try:
        view = create_trigger(
            principal, create, now=now, trigger_id=trigger_id, key=key, managed_by=managed_by
        )
    except Exception:
        trigger_keys.release(tenant, key, trigger_id=trigger_id)
        raise
    return {**view, "changed": True}


def put_trigger(principal: Principal, key: str, body: Any, *, now: datetime) -> tuple[int, dict]:
    """Create or update the trigger named ``key``: (201, trigger) or (200, trigger with
    ``changed`` and ``changes``)."""
    create, managed_by = _split(key, body)
    for _attempt in range(_ATTEMPTS):
        item = _owner(principal, key) or _adopted(principal, key, now=now)
        if item is None:
            created = _create(principal, key, create, managed_by, now=now)
            if created is not None:
                return 201, created
            continue
        plan = _plan(item, create, managed_by, now=now)
        return 200, _update(principal, item, key, plan, managed_by, now=now)
    raise Conflict(f"key {key!r} kept changing while it was written; try again", field="key")


def plan_put(principal: Principal, key: str, body: Any, *, now: datetime) -> dict:
    """What ``put_trigger`` would do, written nowhere: ``{key, action, changes, trigger}``
    (``action``: ``create``, ``update`` or ``none``); the same 422s."""
    create, managed_by = _split(key, body)
    item = _owner(principal, key) or _unkeyed(principal, key)
    if item is None:
        data, _ = _desired(create, now=now)
        _check(data, now=now, schedule_too=True, event_too=True)
        return {"key": key, "action": "create", "changes": {}, "trigger": None}
    plan = _plan(item, create, managed_by, now=now)
    return _dry_answer(principal, key, item, plan)


def _dry_answer(principal: Principal, key: str, item: Trigger, plan: dict) -> dict:
    action = "update" if plan["changes"] else "none"
    view = get_trigger_view(principal, item.id)
    return {"key": key, "action": action, "changes": plan["changes"], "trigger": view}


def get_by_key(principal: Principal, key: str) -> dict:
    """The trigger named ``key`` (404 when the caller's tenant has none)."""
    check_key(key)
    item = _owner(principal, key)
    if item is None:
        raise NotFound(f"no trigger with key {key!r}")
    return get_trigger_view(principal, item.id)


def delete_by_key(principal: Principal, key: str, *, now: datetime) -> None:
    """Delete the trigger named ``key`` and free the key (404 when there is none)."""
    check_key(key)
    item = _owner(principal, key)
    if item is None:
        raise NotFound(f"no trigger with key {key!r}")
    load_owned(principal, item.id)
    delete_trigger(principal, item.id, now=now, detail={"key": key})
