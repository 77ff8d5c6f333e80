"""Run history: which finished runs a trigger keeps a run record of (``history``).

A run record is two write units per fire (the item and its ``runs.by_tenant`` entry)
plus its storage and PITR until it expires: about $1.58 of a million fires. A trigger
may keep less:

- ``full`` (the default): every run is recorded, as the contract's run listings promise;
- ``failures``: a scheduled or event run that succeeded is not recorded. Every run that
  did not succeed (failed, skipped, refused, budget_exceeded, lost) is, and so is every
  manual or backfill run (an operator holds its run id, and they are few). A success
  still updates the trigger's ``last_run``, ``run_count`` and failure counter, its
  metrics and its log line; only the record in the runs table is left out.
"""

from __future__ import annotations

__all__ = [
    "HISTORY_MODES",
    "DEFAULT_HISTORY",
    "ALWAYS_RECORDED_SURFACES",
    "records_run",
    "slot_ran",
]

HISTORY_MODES = ("full", "failures")
DEFAULT_HISTORY = "full"
# Runs an operator started (``POST /fire``, ``/backfill``): the 202 hands out their run id.
ALWAYS_RECORDED_SURFACES = frozenset({"manual", "backfill"})


def records_run(history: str | None, *, status: str, surface: str) -> bool:
    """Whether a run that ended with ``status`` gets a run record under ``history``.

    An unknown or missing mode reads as ``full``: a record too many is only a cost, a
    record missing is history lost.
    """
    if history != "failures":
        return True
    if surface in ALWAYS_RECORDED_SURFACES:
        return True
    return status != "succeeded"


def slot_ran(
    history: str | None, *, recorded_status: str | None, slot_ms: int, created_ms: int
) -> bool:
    """Whether a backfill counts a past scheduled slot as one that already ran.

    A record says so, unless it is ``skipped`` (the slot never ran its workflow). Without
    a record, a ``failures`` trigger's slot since its creation may have been a success,
    which leaves none: it counts as ran, so a backfill never runs a slot twice (and cannot
    make up slots missed in a pause or a downtime of such a trigger).
    """
    if recorded_status is not None:
        return recorded_status != "skipped"
    return history == "failures" and slot_ms > created_ms
