"""What one tick saw and did."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["TickReport"]


@dataclass
class TickReport:
    """What one tick saw and did."""

    rows_read: int = 0
    due: int = 0  # slots sent for the first time
    overdue: int = 0  # slots sent again: their first message was lost
    reaped: int = 0
    send_failed: int = 0
    enqueued: int = 0
    handed_over: int = 0  # shards whose rows the tick did not all reach (deadline)
    events_dispatched: int = 0
    events_recovered: int = 0  # running events whose bookkeeping the sweep finished
    sent_late: int = 0  # future slots whose message went out after their second
    errors: int = 0  # AWS calls that failed; each cost only its own row
    fanned_out: int = 0  # shards handed to the enqueuers (fanout.py), not read by this tick
    duration_ms: float = 0.0
    send_ms: float = 0.0
    run_ids: list[str] = field(default_factory=list)
    now_ms: int = 0  # the tick's now, and its start on the process clock
    shards_read: int = (
        0  # how many shards this tick read (the registry's count): its sweeps read as many
    )
    started: float = 0.0

    def add(self, other: TickReport) -> None:
        """Add the counts of ``other`` (one row's work) to these."""
        for name in _COUNTS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.run_ids += other.run_ids


_COUNTS = tuple(
    name
    for name, kind in TickReport.__annotations__.items()
    if kind == "int" and name not in ("now_ms", "shards_read")
)
