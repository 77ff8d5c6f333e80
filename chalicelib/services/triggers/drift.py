"""Drift: an edit of a managed trigger made elsewhere (``PATCH``, the console).

The edit is allowed; its answer carries a warning, and the trigger keeps a note of it
(``drift``: when, by which key, which fields) until its tool applies it again, so a
``cronhook diff`` shows it beside the fields the file would change back.
"""

from __future__ import annotations

import json
from datetime import datetime

from chalicelib.domain.due import to_ms
from chalicelib.domain.records import Trigger
from chalicelib.domain.trigger_keys import normalized
from chalicelib.services.auth import Principal
from chalicelib.services.runs import iso_ms
from chalicelib.store import trigger_keys

__all__ = ["drift_view", "edited_fields", "note_edit"]


def drift_view(item: Trigger) -> dict | None:
    """The trigger's drift as the API shows it (``{at, by, fields}``), None without one."""
    raw = getattr(item, "drift", None)
    if not raw:
        return None
    try:
        drift = json.loads(raw)
    except ValueError:
        return None
    return {"at": iso_ms(drift.get("at")), "by": drift.get("by"), "fields": drift.get("fields")}


def edited_fields(before: dict, after: dict, sent: set[str]) -> list[str]:
    """The fields a PATCH sent that it changed (views before and after; a state sent is
    counted: the view before the edit does not carry it)."""
    old, new = normalized(before), normalized(after)
    return sorted(name for name in sent if name == "state" or old.get(name) != new.get(name))


def note_edit(
    principal: Principal, item: Trigger, view: dict, fields: list[str], *, now: datetime
) -> dict:
    """``view`` (a PATCH's answer) with the drift noted, when ``item`` is managed."""
    if not item.managed_by or not fields:
        return view
    earlier = drift_view(item) or {}
    names = sorted({*(earlier.get("fields") or []), *fields})
    at_ms = to_ms(now)
    note = {"at": at_ms, "by": principal.key_id, "fields": names}
    trigger_keys.set_drift(item.id, json.dumps(note, separators=(",", ":")))
    warning = (
        f"this trigger is managed by {item.managed_by} (key {item.key!r}): the edit is "
        "kept, but the next apply of its file puts it back; change the file instead"
    )
    return {
        **view,
        "drift": {"at": iso_ms(at_ms), "by": principal.key_id, "fields": names},
        "warnings": [*view.get("warnings", []), warning],
    }
