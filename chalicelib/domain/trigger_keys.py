"""Triggers as code, the decisions: a key's form, and what a PUT by key would change.

A document (a create body under a ``key``) is compared with the trigger as stored, both in
the expanded form of the stored spec (``trigger_spec.expand``: every default spelled
out), so a body that leaves a default out and one that spells it read the same, and a
field a newer version adds flows through without a change here. Pure: no table, no clock.

- ``state`` is the *initial* state: used when the trigger is created, never compared (the
  runs own it afterwards: an apply must not rewind a cursor).
- ``backfill`` only means something on create: never compared.
- ``enabled`` is compared with the trigger's status.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from chalicelib.domain.errors import ValidationError
from chalicelib.domain.trigger_spec import DST_DEFAULTS, expand

__all__ = [
    "KEY_PATTERN",
    "MANAGED_BY_PATTERN",
    "check_key",
    "check_managed_by",
    "comparable",
    "normalized",
    "field_changes",
    "changed_top_fields",
    "update_body",
    "EVENT_PATCHABLE",
]

# One path segment (CONTRACT: ``[a-z0-9][a-z0-9._-]{0,127}``).
KEY_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,127}$"
MANAGED_BY_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,63}$"
_KEY = re.compile(KEY_PATTERN)
_MANAGED_BY = re.compile(MANAGED_BY_PATTERN)
# Never compared (see the module's docstring); ``secret`` is never stored in the spec.
_NOT_COMPARED = frozenset({"state", "backfill", "enabled"})
# The event fields an edit in place may change; the others (the source, and what its
# wiring was made from: bus, pattern, bucket, prefix, suffix, address) need a new trigger.
EVENT_PATCHABLE = ("filter", "max_attempts", "dedupe_window_s")


def check_key(key: Any, *, field: str = "key") -> str:
    """``key`` if it is a valid trigger key; 422 naming ``field`` otherwise."""
    if not isinstance(key, str) or not _KEY.match(key):
        raise ValidationError(
            "a key is 1 to 128 characters: a-z, 0-9, '.', '_' and '-', starting with a "
            "letter or digit",
            field=field,
        )
    return key


def check_managed_by(value: Any) -> str | None:
    """``managed_by`` if valid (None stays None); 422 naming the field otherwise."""
    if value is None:
        return None
    if not isinstance(value, str) or not _MANAGED_BY.match(value):
        raise ValidationError(
            "managed_by is 1 to 64 characters: a-z, 0-9, '.', '_' and '-'", field="managed_by"
        )
    return value


def comparable(spec: Mapping[str, Any], *, workflow: str, enabled: bool) -> dict[str, Any]:
    """A stored or desired spec as compared: expanded, the target and ``enabled`` set."""
    out = {k: v for k, v in expand(spec).items() if k not in _NOT_COMPARED}
    out["workflow"] = workflow
    out["enabled"] = enabled
    return out


def normalized(spec: Mapping[str, Any]) -> dict[str, Any]:
    """``spec`` with what reads the same written the same: a cron schedule's missing DST
    policy is the default policy (an edit that spells it out changes nothing)."""
    out = dict(spec)
    schedule = out.get("schedule")
    if isinstance(schedule, Mapping) and schedule.get("cron") is not None:
        if schedule.get("dst") is None:
            out["schedule"] = {**schedule, "dst": dict(DST_DEFAULTS)}
    return out


def field_changes(old: Any, new: Any, path: str = "") -> dict[str, dict[str, Any]]:
    """Every leaf that differs, by dotted path: ``{"schedule.cron": {"from", "to"}}``."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        changes: dict[str, dict[str, Any]] = {}
        for name in [*old.keys(), *(k for k in new.keys() if k not in old)]:
            inner = f"{path}.{name}" if path else str(name)
            changes.update(field_changes(old.get(name), new.get(name), inner))
        return changes
    if _same(old, new):
        return {}
    return {path: {"from": old, "to": new}}


def _same(old: Any, new: Any) -> bool:
    # ``True == 1`` in Python: a value only equals one of its own JSON type.
    if isinstance(old, bool) or isinstance(new, bool):
        return type(old) is type(new) and old == new
    return bool(old == new)


def changed_top_fields(current: Mapping[str, Any], desired: Mapping[str, Any]) -> list[str]:
    """The top-level fields whose value differs (``normalized``), in the desired order."""
    old, new = normalized(current), normalized(desired)
    names = [*new.keys(), *(k for k in old.keys() if k not in new)]
    return [n for n in names if field_changes(old.get(n), new.get(n))]


def _event_patch(current: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any]:
    old_event = current.get("event") or {}
    new_event = desired.get("event") or {}
    for name in [*new_event.keys(), *old_event.keys()]:
        if name in EVENT_PATCHABLE or name == "secret":
            continue
        if field_changes(old_event.get(name), new_event.get(name)):
            raise ValidationError(
                f"event.{name} cannot change in place (the trigger's wiring was made from "
                "it): delete the trigger, or declare the new one under a new key",
                field=f"event.{name}",
            )
    return {
        name: new_event.get(name)
        for name in EVENT_PATCHABLE
        if field_changes(old_event.get(name), new_event.get(name))
    }


def update_body(current: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any]:
    """The PATCH body that turns ``current`` into ``desired`` (both ``comparable``); 422
    naming the field when the change cannot be made in place."""
    body: dict[str, Any] = {}
    for name in changed_top_fields(current, desired):
        if name in ("schedule", "event") and (current.get(name) is None) != (
            desired.get(name) is None
        ):
            raise ValidationError(
                "a trigger cannot switch between a schedule and an event in place: delete "
                "it, or declare the new one under a new key",
                field=name,
            )
        if name == "event":
            body["event"] = _event_patch(current, desired)
        else:
            body[name] = desired.get(name)
    return body
