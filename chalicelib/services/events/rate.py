"""``event.rate_limit``: at most ``max`` events run per ``per_s`` seconds; the rest are kept.

1. Windows are fixed and aligned on the epoch: an event received at ``t`` ms falls in
   window ``t // (per_s * 1000)``. (A burst straddling two windows can run up to twice
   ``max`` within ``per_s``; a sliding window would need a read per event.)
2. Before an event is stored, one atomic ADD on the trigger's counter for its window
   (``store/deliveries.count_in_window``, an item of the deliveries table that no listing
   shows) says whether it is the ``max``-th or less.
3. Within the limit, the event is stored and dispatched as any other. Beyond it, it is
   stored ``throttled`` (``throttle``): the same item, body and dedupe, but none of the
   pending index keys, so no message, sweep or pull ever runs it. The answer is 202
   ``{"event_id", "run_id": null, "throttled": true}`` and its delivery is recorded with
   the outcome ``throttled``.
4. ``POST /v1/events/{id}/replay`` runs a throttled event like any ended one.

Only triggers with a rate limit pay the ADD. A duplicate delivery is counted too (the count
comes before the dedupe put, which is what decides the status it is stored with).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from chalicelib.domain.records import EventRecord
from chalicelib.observability import record_metric
from chalicelib.store import deliveries

__all__ = ["THROTTLED", "over_rate", "throttle", "throttled_answer"]

THROTTLED = "throttled"
_COUNTER_KEPT_S = 3600  # a window's counter outlives it by this much (TTL), then goes


def over_rate(trigger_id: str, spec: dict, *, now_ms: int) -> bool:
    """Count one event against the trigger's rate limit; True if it is beyond the limit."""
    limit: Any = (spec.get("event") or {}).get("rate_limit")
    if not isinstance(limit, dict):
        return False
    per_s, most = int(limit["per_s"]), int(limit["max"])
    window = now_ms // (per_s * 1000)
    expires = (window + 1) * per_s + _COUNTER_KEPT_S
    seen = deliveries.count_in_window(trigger_id, per_s=per_s, window=window, expires=expires)
    return seen > most


def throttle(record: EventRecord) -> EventRecord:
    """A new event's item made a throttled one: kept and listed, never run (until replayed)."""
    record_metric("EventsThrottled")
    return replace(
        record, status=THROTTLED, pending_trigger=None, pending_shard=None, pending_sk=None
    )


def throttled_answer(record: EventRecord) -> dict:
    """The 202 body of a delivery stored throttled."""
    return {"event_id": record.id, "run_id": None, "throttled": True}
