"""Runs as the API lists them: their statuses, their surfaces, and a run still in flight.

A run in flight has no record yet: it is an entry of its trigger's ``in_flight`` map,
``run_id → {l: lease_ms, s: started 0|1, k: surface code, t: slot_ms, a: started_ms}``. ``InFlight`` is
that entry read once, with its defaults (a missing ``k`` is a scheduled slot).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "RUN_STATUSES",
    "RUN_SURFACES",
    "SURFACE_CODES",
    "InFlight",
    "read_in_flight",
    "scheduled_slot_of_run",
]

RUN_STATUSES = (
    "queued",
    "running",
    "succeeded",
    "failed",
    "skipped",
    "refused",
    "budget_exceeded",
    "lost",
    "missed",
)
RUN_SURFACES = ("schedule", "event", "manual", "backfill")
# The one-letter surface an ``in_flight`` entry keeps (``k``), and the surface it names.
SURFACE_CODES = {"s": "schedule", "e": "event", "m": "manual", "b": "backfill"}


@dataclass(frozen=True)
class InFlight:
    """One ``in_flight`` entry: its lease, whether it started, its surface and its slot."""

    run_id: str
    lease_ms: int
    started: bool
    code: str
    slot_ms: int | None
    started_ms: int | None = None  # when the runner started it (``a``); None if not started

    @property
    def surface(self) -> str:
        return SURFACE_CODES.get(self.code, "schedule")

    @property
    def status(self) -> str:
        return "running" if self.started else "queued"

    @property
    def scheduled_slot_ms(self) -> int | None:
        """The slot this entry claimed, when it is a scheduled fire."""
        return self.slot_ms if self.code == "s" else None


def _entry(run_id: str, raw: Any) -> InFlight:
    data: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    slot = data.get("t")
    started = bool(int(data.get("s", 0) or 0))
    started_at = data.get("a") if started else None
    return InFlight(
        run_id=run_id,
        lease_ms=int(data.get("l", 0) or 0),
        started=started,
        code=str(data.get("k", "s")),
        slot_ms=int(slot) if slot is not None else None,
        started_ms=int(started_at) if started_at is not None else None,
    )


def read_in_flight(in_flight: Mapping[str, Any]) -> list[InFlight]:
    """The entries of an ``in_flight`` map, newest run id first."""
    return [_entry(run_id, raw) for run_id, raw in sorted(in_flight.items(), reverse=True)]


def scheduled_slot_of_run(run_id: str | None) -> int | None:
    """The slot (epoch ms) of a scheduled run's id (``<trigger>.<ms:013d>s``), else None."""
    _, _, tail = (run_id or "").partition(".")
    if len(tail) >= 14 and tail[:13].isdigit() and tail[13] == "s":
        return int(tail[:13])
    return None
