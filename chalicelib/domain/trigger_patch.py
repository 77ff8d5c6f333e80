"""PATCH of a trigger, the decisions: version check, merge, new status, next slot, audit diff.

A patch is merged into the stored settings and the result validated as a whole (as a
``TriggerIn``) by the caller. The rules here never read a clock or a table: ``now``, the
stored spec and the slots already claimed are arguments.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from chalicelib.domain import schedule
from chalicelib.domain.due import from_ms
from chalicelib.domain.errors import Conflict, ValidationError
from chalicelib.domain.spec import EventPatch, ScheduleIn, TriggerPatch

__all__ = [
    "NULLABLE",
    "DIFF_FIELDS",
    "version_conflict",
    "merge_schedule",
    "merged_spec",
    "status_after",
    "interval_anchor",
    "next_slot",
    "diff",
]

# Fields a PATCH may clear with null; every other field must keep a value.
NULLABLE = frozenset({"title", "payload", "serialize_key", "secret_scope", "tags", "limits"})
_CADENCE_FIELDS = ("cron", "interval_s", "at", "business_day")
# Fields merged by their own rule (or not part of the stored spec).
_OWN_RULE = frozenset({"schedule", "event", "state", "limits", "enabled"})
# What the audit diff compares (state and payload are only marked changed: they may hold
# anything, including things that should not be copied into a log).
DIFF_FIELDS = (
    "workflow",
    "title",
    "tags",
    "kind",
    "schedule",
    "event",
    "serialize_key",
    "secret_scope",
    "limits",
    "overlap",
    "concurrency",
    "allow_destructive",
    "history",
    "status",
    "next_fire_at",
)


def version_conflict(sent: int | None, current: int) -> Conflict | None:
    """The 409 for a ``version`` the client sent that is not the trigger's, else None."""
    if sent is None or sent == current:
        return None
    if sent > current:
        return Conflict(
            f"version {sent} does not exist yet: the trigger is at version "
            f"{current}; send the version you read",
            field="version",
        )
    return Conflict(
        f"version {sent} is stale: the trigger is at version {current}; "
        "read it again and reapply your change",
        field="version",
    )


def merge_schedule(old: dict, patch: ScheduleIn) -> dict:
    """The schedule after a patch: the kind is inferred from the cadence field sent."""
    sent = patch.model_fields_set
    given = [f for f in _CADENCE_FIELDS if f in sent and getattr(patch, f) is not None]
    cleared = [f for f in _CADENCE_FIELDS if f in sent and getattr(patch, f) is None]
    if len(given) > 1:
        raise ValidationError(
            f"give one of cron, business_day, interval_s or at (got {', '.join(given)})",
            field="schedule",
        )
    dumped = patch.model_dump(mode="json", include=sent)
    if given:
        # A new cadence replaces the old kind's fields; the timezone, DST policy and
        # calendar carry over only between wall-clock schedules (a cron or a business day:
        # they mean nothing to an interval or an instant); a business day keeps its time.
        kind = given[0]
        merged: dict = {kind: dumped[kind]}
        wall_clock = ("cron", "business_day")
        if kind in wall_clock and any(old.get(k) is not None for k in wall_clock):
            merged["timezone"] = old.get("timezone") or "UTC"
            for name in ("dst", "calendar", "time" if kind == "business_day" else "dst"):
                if old.get(name) is not None:
                    merged[name] = old[name]
        for name in ("jitter_s", "catchup", "skips", "extras"):
            if old.get(name):
                merged[name] = old[name]
    else:
        if cleared:
            raise ValidationError(
                f"schedule.{cleared[0]} cannot be removed without another cadence",
                field=f"schedule.{cleared[0]}",
            )
        merged = {k: v for k, v in old.items() if v is not None}
    for name in ("timezone", "dst", "time", "calendar", "jitter_s", "catchup", "skips", "extras"):
        if name in sent:
            merged[name] = dumped[name]
    return {k: v for k, v in merged.items() if v is not None}


def _merged_limits(old: dict, data: TriggerPatch) -> dict:
    limits = data.limits
    if limits is None:
        return {}
    return {
        **(old.get("limits") or {}),
        **limits.model_dump(mode="json", include=limits.model_fields_set),
    }


def _merged_schedule(old: dict, data: TriggerPatch, *, kind: str) -> dict:
    if kind == "event":
        raise ValidationError(
            "an event trigger cannot be given a schedule; create a new trigger",
            field="schedule",
        )
    if data.schedule is None:
        raise ValidationError("schedule may not be null", field="schedule")
    return merge_schedule(old.get("schedule") or {}, data.schedule)


def _check_event_patch(event: EventPatch, old_event: dict, *, trigger_id: str) -> None:
    if "source" in event.model_fields_set and event.source != old_event.get("source"):
        # The stored signing secret was made for (or issued by) the old provider, and
        # the filter's keys are the old provider's: switching in place would leave a
        # URL that verifies nothing, or verifies with a secret of the wrong format.
        raise ValidationError(
            f"event.source cannot change (the signing secret and filter belong to "
            f"{old_event.get('source')!r}); create a new trigger for the new source",
            field="event.source",
        )
    if "secret" in event.model_fields_set:
        # Never dropped silently: a new secret replaces the old one at once and breaks
        # every delivery in flight. Rotation keeps the old one valid for a grace period.
        raise ValidationError(
            "event.secret cannot be changed by a PATCH; use "
            f"POST /v1/triggers/{trigger_id}/rotate-secret (the old secret keeps "
            "verifying for a grace period)",
            field="event.secret",
        )


def _merged_event(old: dict, data: TriggerPatch, *, kind: str, trigger_id: str) -> dict:
    if kind != "event":
        raise ValidationError(
            "a scheduled trigger cannot be given an event source; create a new trigger",
            field="event",
        )
    event = data.event
    if event is None:
        raise ValidationError("event may not be null", field="event")
    old_event = old.get("event") or {}
    _check_event_patch(event, old_event, trigger_id=trigger_id)
    return {
        **old_event,
        **event.model_dump(mode="json", include=event.model_fields_set - {"secret"}),
    }


def merged_spec(
    old: dict,
    data: TriggerPatch,
    sent: set[str],
    *,
    kind: str,
    trigger_id: str,
    workflow: str,
    shown_workflow: str,
) -> dict:
    """The trigger's settings after the patch, as a ``TriggerIn`` body (unvalidated).

    ``old`` is the stored spec (payload read back); ``workflow`` the stored target and
    ``shown_workflow`` the form the view shows (query values masked).
    """
    merged = {k: v for k, v in old.items() if k != "enabled"}
    dumped = data.model_dump(mode="json", include=sent)
    if dumped.get("workflow") is not None and dumped["workflow"] == shown_workflow:
        # The view's masked form sent back (a GET, edited, PATCHed): the target is unchanged.
        dumped["workflow"] = workflow
    for name in sent - _OWN_RULE:
        value = dumped[name]
        if value is None and name not in NULLABLE:
            raise ValidationError(f"{name} may not be null", field=name)
        merged[name] = [] if name == "tags" and value is None else value
    if "limits" in sent:
        merged["limits"] = _merged_limits(old, data)
    if "schedule" in sent:
        merged["schedule"] = _merged_schedule(old, data, kind=kind)
    if "event" in sent:
        merged["event"] = _merged_event(old, data, kind=kind, trigger_id=trigger_id)
    if "state" in sent and data.state is None:
        raise ValidationError("state may not be null; send {} to clear it", field="state")
    if "enabled" in sent and data.enabled is None:
        raise ValidationError("enabled may not be null", field="enabled")
    return merged


def status_after(current: str, sent: set[str], enabled: bool | None) -> str:
    """The trigger's status once the patch is written (``enabled`` flips it)."""
    if "enabled" in sent and enabled != (current == "active"):
        return "active" if enabled else "disabled"
    return current


def interval_anchor(
    old: schedule.ScheduleSpec | None,
    new: ScheduleIn,
    *,
    last_slot_ms: int | None,
    now: datetime,
) -> datetime:
    """What a patched schedule counts its interval from.

    The same interval keeps its phase; a new interval counts from the last slot that
    fired (or from now): the next fire is one new interval after it, never a burst of
    catch-up fires. A cron or an instant has no anchor (``now`` is passed through).
    """
    if new.interval_s is None:
        return now
    if old is not None and old.interval_s == new.interval_s and old.anchor_at is not None:
        return old.anchor_at
    return from_ms(last_slot_ms) if last_slot_ms is not None else now


def next_slot(
    spec: schedule.ScheduleSpec,
    *,
    last_slot_ms: int | None,
    now: datetime,
    cadence_changed: bool,
) -> datetime:
    """The next slot strictly after ``max(now, the last slot claimed)``.

    A slot that already ran, or is running, is never fired again, whatever the new
    schedule says. No such slot: a 422 for a new cadence, a 409 for a resume.
    """
    bound = now if last_slot_ms is None else max(now, from_ms(last_slot_ms))
    first = schedule.next_fire_after(spec, bound)
    if first is not None:
        return first
    if spec.kind == "at":
        raise ValidationError(
            "schedule.at must be after now and after the last fire", field="schedule.at"
        )
    if not cadence_changed:
        raise Conflict("this trigger's schedule has no future fire; edit it first")
    raise ValidationError("this schedule never fires", field="schedule")


def diff(before: dict, after: dict, *, state_changed: bool, payload_changed: bool) -> dict:
    """The audit diff of two views of a trigger: ``{field: {from, to}}``."""
    changes: dict[str, Any] = {
        name: {"from": before.get(name), "to": after.get(name)}
        for name in DIFF_FIELDS
        if before.get(name) != after.get(name)
    }
    if state_changed:
        changes["state"] = {"changed": True}
    if payload_changed:
        changes["payload"] = {"changed": True}
    return changes
