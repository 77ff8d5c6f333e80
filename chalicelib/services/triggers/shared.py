"""What several trigger use cases share: the spec as read, slots, leases, checks."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from chalicelib.domain import due, schedule
from chalicelib.domain.errors import ValidationError
from chalicelib.domain.records import Trigger
from chalicelib.domain.runs import InFlight, read_in_flight, scheduled_slot_of_run
from chalicelib.domain.spec import TriggerIn
from chalicelib.domain.trigger_spec import TriggerSpec, compact
from chalicelib.store import payloads as payloads_store
from chalicelib.store import triggers

__all__ = [
    "loaded_spec",
    "stored_spec",
    "described_spec",
    "in_flight",
    "leases",
    "last_run_of",
    "last_claimed_slot_ms",
    "first_fire",
    "check_expiry",
    "spec_to_store",
    "enqueue_if_sent",
]


def loaded_spec(item: Trigger, *, about: bool | dict = True) -> tuple[dict, TriggerSpec]:
    """The stored spec with its payload and its title and tags read back: as a dict, and
    typed (``about``: a dict is the about part read already, see ``payloads.load_abouts``)."""
    raw = payloads_store.load_spec(item, about=about)
    return raw, TriggerSpec.from_dict(raw)


def stored_spec(item: Trigger) -> TriggerSpec:
    """The stored spec as it is on the item (an externalized payload stays a reference)."""
    return TriggerSpec.from_json(item.spec)


def described_spec(item: Trigger, about: dict) -> TriggerSpec:
    """The stored spec with the title and tags a list read (``payloads.load_abouts``); an
    item stored before they were kept apart has them inline, and ``about`` is empty."""
    return TriggerSpec.from_dict({**json.loads(item.spec or "{}"), **about})


def in_flight(item: Trigger) -> list[InFlight]:
    """The runs that own the trigger now, newest first."""
    return read_in_flight(triggers.in_flight_of(item))


def leases(item: Trigger) -> list[int]:
    """The leases (epoch ms) of the runs in flight."""
    return [entry.lease_ms for entry in in_flight(item)]


def last_run_of(item: Trigger) -> dict | None:
    """The trigger's ``last_run`` map as a plain dict (None when it never ran)."""
    last_run: Any = item.last_run
    if last_run is not None and hasattr(last_run, "as_dict"):
        return dict(last_run.as_dict())
    return last_run


def last_claimed_slot_ms(item: Trigger) -> int | None:
    """The latest scheduled slot this trigger has claimed (in flight, or its last run)."""
    slots = [e.scheduled_slot_ms for e in in_flight(item) if e.scheduled_slot_ms is not None]
    last_slot = scheduled_slot_of_run((last_run_of(item) or {}).get("id"))
    return due.last_claimed_slot_ms(slots, last_slot)


def first_fire(spec: schedule.ScheduleSpec, *, now: datetime, field: str = "schedule") -> datetime:
    """A new schedule's first fire after ``now``; 422 when it has none."""
    first = schedule.next_fire_after(spec, now)
    if spec.kind == "at" and first is None:
        raise ValidationError("schedule.at is in the past", field="schedule.at")
    if first is None:
        raise ValidationError("this schedule never fires", field=field)
    return first


def check_expiry(limits: Any, *, now: datetime) -> None:
    """An expiry already past would leave an active trigger that can never fire: 422."""
    expires_at = getattr(limits, "expires_at", None)
    if expires_at is not None and expires_at <= now:
        raise ValidationError(
            "limits.expires_at is in the past: the trigger could never fire",
            field="limits.expires_at",
        )


def spec_to_store(data: TriggerIn, *, exclude: set[str]) -> dict:
    """The spec to store: the validated body without ``exclude``, the event's secret and
    every field that has its default value (``trigger_spec.compact``; readers expand it).

    Every claim, start and settle rewrites the trigger item, at a write unit per KB: the
    defaults spelled out were 380 B or more of it.
    """
    spec_json = data.model_dump(mode="json", exclude=exclude)
    if spec_json.get("event"):
        spec_json["event"].pop("secret", None)
    return compact(spec_json)


def enqueue_if_sent(item: Trigger | None, *, now: datetime, next_sent: bool = False) -> None:
    """Slots set inside the window the heartbeat already enqueued get their messages now
    (``next_sent``: all but the next one, whose message is out)."""
    from chalicelib.services.heartbeat import enqueue_if_sent_window

    if item is not None and item.kind != "event":
        enqueue_if_sent_window(item, now=now, next_sent=next_sent)
