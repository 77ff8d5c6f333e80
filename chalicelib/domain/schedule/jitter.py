"""Jitter: a slot's fire starts a stable delay after the slot (``schedule.jitter_s``).

The delay is a hash of the trigger and the slot, so every reader (the heartbeat that sends
the message, the runner that waits for it, a retry, the simulator) finds the same one, and
a slot keeps its identity: the run's ``scheduled_for`` and fire id are the slot's, its
``fire_at`` the slot plus the delay. The delay is shorter than the gap to the next slot, so
jittered fires keep their slots' order (a slot is never claimed before the one before it).
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

from chalicelib.domain.schedule.fires import next_fire_after
from chalicelib.domain.schedule.model import ScheduleSpec

__all__ = ["jitter_ms", "fire_at_ms"]

# A jittered fire starts at least this long before the next slot.
_GAP_MARGIN_MS = 1000


def jitter_ms(trigger_id: str, slot_ms: int, jitter_s: int, *, next_slot_ms: int | None) -> int:
    """The delay after the slot, in whole seconds as ms: in ``[0, jitter_s)`` s, and ending
    at least a second before ``next_slot_ms``; stable per trigger and slot."""
    span_ms = jitter_s * 1000
    if next_slot_ms is not None:
        span_ms = min(span_ms, next_slot_ms - slot_ms - _GAP_MARGIN_MS)
    seconds = span_ms // 1000
    if seconds <= 0:
        return 0
    digest = hashlib.sha256(f"{trigger_id}:{slot_ms}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % seconds * 1000


def fire_at_ms(trigger_id: str, slot_ms: int, spec: ScheduleSpec) -> int:
    """When the fire of ``slot_ms`` starts: the slot plus its jitter (the slot without)."""
    if not spec.jitter_s:
        return slot_ms
    slot = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=slot_ms)
    following = next_fire_after(spec, slot)
    next_ms = None
    if following is not None:
        next_ms = (following - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)
    return slot_ms + jitter_ms(trigger_id, slot_ms, spec.jitter_s, next_slot_ms=next_ms)
