"""The due rule, and a schedule as the due index carries it.

``due_at`` is the earliest instant the heartbeat must look at a trigger: its next slot
when it is active, or the lease of a run in flight when that ends well before it (so a
crashed run is reaped on time, even for a weekly cron; ``rules.due_at``). With neither,
the trigger leaves the due index. Every write that moves a slot or pauses a trigger keys
the index with this rule.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from chalicelib.domain import rules
from chalicelib.domain.codec import schedule_fields
from chalicelib.domain.epoch_ms import dt, ms
from chalicelib.domain.schedule import ScheduleSpec

__all__ = ["to_ms", "from_ms", "due_at", "due_with_slot", "last_claimed_slot_ms", "sched_json"]


# The instant helpers under the names the trigger use cases import (one definition:
# ``domain/epoch_ms``).
to_ms = ms
from_ms = dt


def due_at(next_slot_ms: int | None, leases: Iterable[int]) -> int | None:
    """``rules.due_at`` (the one rule), under the argument order the use cases call.

    None means the trigger has nothing the heartbeat must look at: out of the due index.
    """
    return rules.due_at(leases, next_slot_ms=next_slot_ms)


def due_with_slot(next_slot_ms: int, leases: Iterable[int]) -> int:
    """``due_at`` of an active trigger: its next slot, or a lease that ends well before it."""
    return rules.due_with_slot(leases, next_slot_ms=next_slot_ms)


def last_claimed_slot_ms(
    slots_in_flight: Iterable[int], last_run_slot_ms: int | None
) -> int | None:
    """The latest scheduled slot a trigger has claimed: in flight, or its last run's."""
    slots = [*slots_in_flight]
    if last_run_slot_ms is not None:
        slots.append(last_run_slot_ms)
    return max(slots) if slots else None


def sched_json(
    spec: ScheduleSpec, *, overlap: str, concurrency: int, tenant: str | None = None
) -> str:
    """The schedule plus the overlap policy, as projected into the due index.

    The tenant rides along (``tn``) so the heartbeat can give each fire its tenant as the
    queue's message group (fair sharing) without reading the trigger. Defaults (``skip``,
    one at a time) are left out: the projection stays small.
    """
    data = schedule_fields(spec)
    if overlap != "skip":
        data["o"] = overlap
    if concurrency != 1:
        data["n"] = concurrency
    if tenant is not None:
        data["tn"] = tenant
    return json.dumps(data, separators=(",", ":"))
