"""Catch-up after downtime, and ``overlap: buffer_all``: what a claimed slot does with the
slots between it and now.

A slot is *missed* when its claim comes more than ``MISSED_AFTER_S`` after its fire_at (the
stack was down, a message was lost, or a backlog held it): the slots after it up to now
were not run in their time either. ``schedule.catchup.mode`` decides:

- ``latest`` (the default, cronhook's behaviour before catch-up modes): this slot runs,
  late, once for all of them; the slots after it up to now are recorded ``missed``. A
  claim within ``MISSED_AFTER_S`` (a message sent again), or of a slot ``overlap:
  buffer_one`` buffered behind a running fire (``merge``), is no downtime: the slots it
  passes merge into its run, with no records.
- ``all``: every slot runs, oldest first, each once (the claim leaves the next one due,
  and the settle sends it); after downtime, a slot older than ``window_s`` is recorded
  ``missed``.
- ``none``: none runs; this slot and those after it up to now are recorded ``missed``.

``overlap: buffer_all`` runs every slot in turn the same way (a slot that came due while a
run held the trigger waits for it, and the next after it, ...), at most ``MAX_WAITING``
waiting: the oldest beyond that are recorded ``skipped``.

Pure: the schedule, the slot and ``now`` (on the schedule's clock: less the slot's jitter)
are arguments; the claim (``services/runner/claim.py``) and the simulator call it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from chalicelib.domain.schedule import ScheduleSpec, fires_between

__all__ = [
    "MISSED_AFTER_S",
    "MAX_WAITING",
    "MAX_RECORDS",
    "SlotPlan",
    "plan_slot",
]

# The heartbeat sends a slot again this long after its fire_at (``slots.OVERDUE_S``): a
# claim later than that was not a slot on time.
MISSED_AFTER_S = 120
MAX_WAITING = 100
# Records written for the slots passed by one claim; the count of the rest is in the last.
MAX_RECORDS = 100
_SCAN = 1000


@dataclass(frozen=True)
class SlotPlan:
    """What a claim does: run the slot or not, where the next slot is searched from, and
    which other slots it records (``passed``, each with ``passed_status``)."""

    run: bool
    next_after: datetime
    status: str | None = None  # this slot's record when it does not run
    reason: str | None = None
    passed: tuple[datetime, ...] = field(default=())
    passed_status: str = "missed"
    passed_more: int = 0  # slots passed beyond the records
    waits_its_turn: bool = False  # at capacity it is buffered, never skipped
    one_off: bool = False  # a one-off skip: its reason is the trigger's


def _between(spec: ScheduleSpec, after: datetime, until: datetime) -> list[datetime]:
    """The slots in ``(after, until]``, at most ``_SCAN + 1``."""
    return fires_between(spec, _just_after(after), _just_after(until), limit=_SCAN + 1)


def _just_after(instant: datetime) -> datetime:
    """A microsecond later; the end of year 9999 stays itself (there is no later)."""
    try:
        return instant + timedelta(microseconds=1)
    except OverflowError:
        return instant


def _passing(
    spec: ScheduleSpec, slot: datetime, until: datetime, *, run: bool, why: str, status: str
) -> SlotPlan:
    """This slot (run or not) and every slot after it up to ``until`` passed with records."""
    passed = _between(spec, slot, until)
    more = max(0, len(passed) - MAX_RECORDS)
    return SlotPlan(
        run=run,
        next_after=max(until, slot),
        status=None if run else status,
        reason=None if run else why,
        passed=tuple(passed[:MAX_RECORDS]),
        passed_status=status,
        passed_more=more,
    )


def plan_slot(
    spec: ScheduleSpec,
    slot: datetime,
    *,
    now: datetime,
    buffer_all: bool = False,
    merge: bool = False,
) -> SlotPlan:
    """The plan for a claimed slot at ``now`` (the schedule's clock); see the module doc."""
    if slot in spec.skips:
        # A one-off skip (``POST /v1/triggers/{id}/skip``): recorded, never run.
        return SlotPlan(
            run=False, next_after=max(now, slot), status="skipped", reason="skipped", one_off=True
        )
    late = now - slot > timedelta(seconds=MISSED_AFTER_S)
    mode = spec.catchup_mode
    if late and mode == "none":
        why = "missed while the trigger could not run (catchup: none)"
        return _passing(spec, slot, now, run=False, why=why, status="missed")
    if buffer_all or mode == "all":
        return _in_turn(spec, slot, now=now, late=late, buffer_all=buffer_all)
    if not late or merge:
        # On time (a message sent again within MISSED_AFTER_S), or ``buffer_one``'s
        # buffered slot: the slots after it up to now merge into this run, no records.
        return SlotPlan(run=True, next_after=max(now, slot))
    # latest: this slot runs; a slot between it and now is passed, recorded missed.
    return _passing(spec, slot, now, run=True, why="", status="missed")


def _in_turn(
    spec: ScheduleSpec, slot: datetime, *, now: datetime, late: bool, buffer_all: bool
) -> SlotPlan:
    """Catch-up ``all`` and ``buffer_all``: each slot runs in turn, within their bounds."""
    if spec.catchup_mode == "all" and late:
        try:
            window_start = now - timedelta(seconds=spec.catchup_window_s)
        except OverflowError:  # the window reaches back before year 1: every slot is in it
            window_start = slot
        if slot < window_start:
            why = f"missed, older than the catch-up window ({spec.catchup_window_s} s)"
            before = window_start - timedelta(microseconds=1)
            return _passing(spec, slot, before, run=False, why=why, status="missed")
    if buffer_all and not (spec.catchup_mode == "all" and late):
        waiting = _between(spec, slot, now)
        if len(waiting) > MAX_WAITING:
            why = f"more than {MAX_WAITING} slots waiting (overlap: buffer_all)"
            keep_from = waiting[-MAX_WAITING] if len(waiting) <= _SCAN else now
            until = keep_from - timedelta(microseconds=1)
            return _passing(spec, slot, until, run=False, why=why, status="skipped")
    return SlotPlan(run=True, next_after=slot, waits_its_turn=True)
