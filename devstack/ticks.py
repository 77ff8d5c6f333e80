"""When the local stack's heartbeat ticks."""

from __future__ import annotations

__all__ = ["tick_wait_s"]


def tick_wait_s(now_s: float, period_s: int) -> float:
    """Seconds until the next tick: half a period past the period's boundary (:30 for 60 s).

    EventBridge's ``rate(1 minute)`` fires at a second of its own (set when the rule was
    made), not on :00. A tick sends slots a period and a margin ahead
    (``settings.default_lookahead_s``), so its phase moves no slot; off the boundary, its
    reads and sends, and the snapshot after it, do not land on the embedded AWS at the
    second when the crowds of crons on :00 start.
    """
    period = max(1, period_s)
    return period - ((now_s - period / 2) % period)
