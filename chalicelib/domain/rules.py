"""The run path's decision rules, as pure functions: overlap, due, statuses, attempts.

Each was written out at several call sites (the runner's claim, the settle, the reaper,
the event service); here it is stated once, with its units, and tested with a table
(``tests/unit/test_rules.py``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any

from chalicelib.domain.codec import decode_schedule
from chalicelib.domain.errors import CronhookError
from chalicelib.domain.schedule.cron import parse_cron
from chalicelib.domain.trigger_spec import EVENT_DEFAULTS, LIMITS_DEFAULTS

__all__ = [
    "DEFAULT_MAX_ATTEMPTS",
    "DEFAULT_MAX_FAILURES",
    "UNCOUNTED_STATUSES",
    "Overlap",
    "capacity_of",
    "overlap_decision",
    "LEASE_LEFT_TO_NEXT_CLAIM_MS",
    "due_at",
    "due_with_slot",
    "stands",
    "run_succeeded",
    "max_attempts_of",
    "max_failures_of",
    "event_will_retry",
    "surface_of_entry",
]

# An event is tried this many times unless its trigger says otherwise (``event.max_attempts``).
DEFAULT_MAX_ATTEMPTS: int = EVENT_DEFAULTS["max_attempts"]
# A trigger is disabled after this many failures in a row unless ``limits.max_failures`` says.
DEFAULT_MAX_FAILURES: int = LIMITS_DEFAULTS["max_failures"]

# A run that ended with one of these never ran its workflow: neither a success nor a
# failure of the trigger (not counted toward ``limits.max_failures``).
UNCOUNTED_STATUSES = frozenset({"refused", "budget_exceeded", "skipped", "missed"})

_SURFACES = {"s": "schedule", "e": "event", "m": "manual", "b": "backfill"}


class Overlap(StrEnum):
    """What a claim that lost to the trigger's running runs does next."""

    RETRY = "retry"  # the run it saw settled meanwhile: claim again
    SKIP = "skip"  # ``overlap: skip``: record the slot skipped and move past it
    BUFFER = "buffer"  # ``buffer_one`` / ``allow`` at capacity: the settle sends it again


def capacity_of(policy: Mapping[str, Any]) -> int:
    """How many runs of a schedule may execute at once: ``n`` under ``overlap: allow``, else 1."""
    return int(policy.get("n", 1)) if policy.get("o") == "allow" else 1


def overlap_decision(policy: Mapping[str, Any], *, running: int, waits: bool = False) -> Overlap:
    """A due slot found the trigger busy: what happens to it, with ``running`` runs executing.

    The overlap policy is applied when the fire is due: a slot is ``skipped`` only if a
    previous run is executing at that moment (``running`` at capacity).
    """
    if running < capacity_of(policy):
        return Overlap.RETRY
    # A slot that waits its turn (catch-up ``all``, ``buffer_all``) is never skipped.
    if policy.get("o", "skip") == "skip" and not waits:
        return Overlap.SKIP
    return Overlap.BUFFER


# A lease that runs out at most this long before the trigger's next slot is left to that
# slot's claim, which reaps an expired lease before (or right after) it claims
# (``runner/claim.py``). Keyed on such a lease, the row would move in the due index twice
# a fire: to the lease at the claim, then back to the next slot once the lease had passed
# (3.6 write units more per fire of a 15-minute cron). A run that never settles is then
# recorded ``lost`` by the next slot's claim instead of at its lease: at most this late.
LEASE_LEFT_TO_NEXT_CLAIM_MS = 15 * 60 * 1000


def due_at(leases_ms: Iterable[int], *, next_slot_ms: int | None) -> int | None:
    """The trigger's key in the due index: its next slot, or a lease that ends well before it.

    The heartbeat looks at a row when it is due: to send its next slot, or to reap a run
    whose lease ran out. A lease ending less than ``LEASE_LEFT_TO_NEXT_CLAIM_MS`` before
    the next slot is reaped by that slot's claim, so it does not key the row.
    ``next_slot_ms`` is None for a trigger that is not active (or has no next slot):
    then the earliest lease; with neither a lease nor a slot the row leaves the index.
    """
    if next_slot_ms is not None:
        return due_with_slot(leases_ms, next_slot_ms=next_slot_ms)
    leases = [int(lease) for lease in leases_ms]
    return min(leases) if leases else None


def due_with_slot(leases_ms: Iterable[int], *, next_slot_ms: int) -> int:
    """``due_at`` of a trigger with a next slot: that slot, or a lease well before it."""
    slot = int(next_slot_ms)
    early = [int(lease) for lease in leases_ms if int(lease) < slot - LEASE_LEFT_TO_NEXT_CLAIM_MS]
    return min([slot, *early])


@functools.lru_cache(maxsize=4096)
def stands(sched: str) -> bool:
    """Whether a schedule *stands* in the due index: its row is not moved by its fires.

    A schedule with a slot at least every ``LEASE_LEFT_TO_NEXT_CLAIM_MS`` (an interval
    of up to 15 minutes, or a cron that matches every quarter hour, every hour of every
    day) keeps one fixed key (``store/triggers.STANDING_DUE``); each tick reads the row
    and sends the slots of its window, computed from the schedule the row projects.
    Its claim moves only a pointer the index does not project: one write unit a fire
    instead of three. A slower schedule is keyed on its next slot, as before: read
    every minute, its row would cost more in reads than the key moves it saves (about
    6 hours is the break-even for a 200-byte row). Every lease of a standing trigger is
    reaped by the next claim, at most 15 minutes after it ran out.
    """
    try:
        spec = decode_schedule(sched)
    except (ValueError, TypeError, AttributeError):
        return False
    if spec.jitter_s or spec.catchup_mode != "latest" or '"o":"buffer_all"' in sched:
        # A standing window sends slots, not their jittered instants; catch-up and
        # buffer_all leave past slots due, which only a keyed row shows the heartbeat.
        return False
    if spec.interval_s:
        return int(spec.interval_s) * 1000 <= LEASE_LEFT_TO_NEXT_CLAIM_MS
    if not spec.cron or spec.also or spec.calendar is not None:
        # A union or a calendar is keyed on its next slot: a holiday leaves a day without
        # slots, longer than the lease rule allows a standing row.
        return False
    try:
        cron = parse_cron(spec.cron)
    except CronhookError:
        return False
    every_day = (
        cron.day_and
        and len(cron.days) == 31
        and len(cron.weekdays) == 7
        and not (cron.last_day or cron.last_weekday or cron.nearest_weekday)
        and not (cron.last_of_weekday or cron.nth_weekday)
        and len(cron.months) == 12
    )
    if not every_day or len(cron.hours) != 24 or not cron.minutes:
        return False
    minutes = sorted(cron.minutes)
    gaps = [b - a for a, b in zip(minutes, minutes[1:], strict=False)]
    gaps.append(60 - minutes[-1] + minutes[0])
    return max(gaps) * 60_000 <= LEASE_LEFT_TO_NEXT_CLAIM_MS


def run_succeeded(status: str) -> bool | None:
    """What a run's status counts for: True, False (a failure), or None (never ran)."""
    if status in UNCOUNTED_STATUSES:
        return None
    return status == "succeeded"


def max_attempts_of(spec: Mapping[str, Any] | None) -> int:
    """An event trigger's ``event.max_attempts`` (``DEFAULT_MAX_ATTEMPTS`` when unset or 0)."""
    event = (spec or {}).get("event") or {}
    return int(event.get("max_attempts") or DEFAULT_MAX_ATTEMPTS)


def max_failures_of(limits: Mapping[str, Any] | None) -> int:
    """A trigger's ``limits.max_failures`` (``DEFAULT_MAX_FAILURES`` when unset or 0)."""
    return int((limits or {}).get("max_failures") or DEFAULT_MAX_FAILURES)


def event_will_retry(attempt: int | None, *, max_attempts: int) -> bool:
    """Whether an event attempt that fails (or is lost) is followed by another one."""
    return int(attempt or 1) < max_attempts


def surface_of_entry(entry: Mapping[str, Any]) -> str:
    """The surface of an ``in_flight`` entry (its ``k``: s, e, m, b); schedule if unknown."""
    return _SURFACES.get(str(entry.get("k", "s")), "schedule")
