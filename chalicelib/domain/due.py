"""The due rule, and a schedule as the due index carries it.

The due rule itself (``due_at``: the next slot, or a lease that ends well before it) is
``rules.due_at``; every write that moves a slot or pauses a trigger keys the index with it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from chalicelib.domain.codec import schedule_fields
from chalicelib.domain.epoch_ms import dt, ms
from chalicelib.domain.schedule import ScheduleSpec

__all__ = ["to_ms", "from_ms", "last_claimed_slot_ms", "sched_json"]


# The instant helpers under the names the trigger use cases import (one definition:
# ``domain/epoch_ms``).
to_ms = ms
from_ms = dt


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
