"""What-if: a schedule played on a fake clock, through outages, by the engine's own rules.

No second implementation: every decision is the function the fire path calls.

- the slots, their calendar and DST marks: ``schedule.next_step`` (the heartbeat's and
  the claim's next slot);
- a slot's start: ``schedule.fire_at_ms`` (the jitter the heartbeat delays a message by);
- catch-up after an outage, one-off skips, ``buffer_all``: ``catchup.plan_slot`` (the
  claim's plan);
- a slot due while runs hold the trigger: ``rules.overlap_decision`` and
  ``rules.capacity_of`` (the claim's decision).

The model of time: a slot is claimed at its fire_at, or, if that falls inside an outage
(nothing runs: no heartbeat, no runner), when the outage ends (the first tick after it
sends the late slot). A run holds the trigger ``run_s``. A slot buffered behind a run is
claimed when that run ends (its settle sends it). Everything is a function of its
arguments.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from chalicelib.domain.catchup import SlotPlan, plan_slot
from chalicelib.domain.rules import Overlap, capacity_of, overlap_decision
from chalicelib.domain.schedule import CalendarMark, ScheduleSpec, fire_at_ms, next_step

__all__ = [
    "Outage",
    "SimSlot",
    "Simulation",
    "MAX_SIM_SLOTS",
    "USD_PER_MILLION_FIRES",
    "simulate",
]

MAX_SIM_SLOTS = 20_000
# What a fire costs on AWS as deployed: ``make bench``'s ``fire_cost.batched.usd_per_million``
# (bench/results.json; tests/unit/test_simulate.py keeps the two equal).
USD_PER_MILLION_FIRES = 3.47
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Outage:
    """A stretch of time nothing of cronhook runs (``start`` inclusive, ``end`` exclusive)."""

    start: datetime
    end: datetime


@dataclass(frozen=True)
class SimSlot:
    """One slot and what the engine does with it."""

    slot: datetime
    outcome: str  # run | skipped | missed | moved | holiday | extra
    fire_at: datetime | None = None
    reason: str | None = None


@dataclass(frozen=True)
class Simulation:
    slots: list[SimSlot]
    runs: int
    truncated: bool


def _ms(instant: datetime) -> int:
    return (instant - _EPOCH) // timedelta(milliseconds=1)


def _capped(instant: datetime, delta: timedelta) -> datetime:
    """``instant + delta``, or the end of year 9999 if that is later (a run holding the
    trigger past the end of time holds it to the end)."""
    try:
        return instant + delta
    except OverflowError:
        return datetime.max.replace(tzinfo=UTC)


def _claimed_at(fire_at: datetime, outages: Sequence[Outage]) -> datetime:
    """When a slot due at ``fire_at`` is claimed: then, or at the end of its outage."""
    for outage in outages:
        if outage.start <= fire_at < outage.end:
            return _claimed_at(outage.end, outages)
    return fire_at


def _calendar_slot(mark: CalendarMark) -> SimSlot:
    if mark.change == "moved" and mark.moved_to is not None:
        return SimSlot(mark.at, "moved", mark.moved_to, f"{mark.name}: moved")
    return SimSlot(mark.at, "holiday", None, mark.name or "excluded date")


@dataclass
class _Engine:
    spec: ScheduleSpec
    trigger_id: str
    policy: dict
    outages: Sequence[Outage]
    run_s: int
    out: dict[datetime, SimSlot]
    running: list[datetime]  # when each run holding the trigger ends

    def claim(self, slot: datetime) -> SlotPlan | None:
        """Claim ``slot`` as the runner would; its outcome (and passed slots) recorded.

        None when the slot's fire would start after the end of year 9999 (its jitter
        carries it past): time ends there, and so do the slots.
        """
        slot_ms = _ms(slot)
        jitter = timedelta(milliseconds=fire_at_ms(self.trigger_id, slot_ms, self.spec) - slot_ms)
        try:
            fire_at = slot + jitter
        except OverflowError:
            return None
        at = _claimed_at(fire_at, self.outages)
        buffer_all = self.policy.get("o") == "buffer_all"
        while True:
            self.running = [end for end in self.running if end > at]
            plan = plan_slot(
                self.spec,
                slot,
                now=at - jitter,
                buffer_all=buffer_all,
                merge=self.policy.get("o") == "buffer_one",
            )
            if not plan.run:
                self.out[slot] = SimSlot(slot, plan.status or "missed", fire_at, plan.reason)
                break
            if len(self.running) < capacity_of(self.policy):
                kind = "extra" if slot in self.spec.extras else "run"
                # The run starts at its claim: at slot + jitter, or later (after an outage,
                # or behind a run that held the trigger). ``fire_at`` here is that start;
                # a run record's ``fire_at`` is slot + jitter, its ``started_at`` the start.
                self.out[slot] = SimSlot(slot, kind, at, None)
                self.running.append(_capped(at, timedelta(seconds=self.run_s)))
                break
            decision = overlap_decision(
                self.policy, running=len(self.running), waits=plan.waits_its_turn
            )
            if decision is Overlap.SKIP:
                why = "previous run still in flight (overlap: skip)"
                self.out[slot] = SimSlot(slot, "skipped", fire_at, why)
                break
            at = _claimed_at(min(self.running), self.outages)  # its settle sends it
        for passed in plan.passed:
            self.out.setdefault(passed, SimSlot(passed, plan.passed_status, None, "passed"))
        return plan


def simulate(
    spec: ScheduleSpec,
    *,
    trigger_id: str,
    policy: dict,
    start: datetime,
    end: datetime,
    outages: Sequence[Outage] = (),
    run_s: int = 30,
) -> Simulation:
    """Every slot in ``(start, end]`` with its outcome, as the engine would decide it."""
    engine = _Engine(
        spec, trigger_id, policy, sorted(outages, key=lambda o: o.start), run_s, {}, []
    )
    step = next_step(spec, start, marks=True)
    truncated = False
    while step.fire is not None and step.fire <= end:
        for mark in step.calendar:
            if start < mark.at <= end:
                engine.out.setdefault(mark.at, _calendar_slot(mark))
        if len(engine.out) >= MAX_SIM_SLOTS:
            truncated = True
            break
        plan = engine.claim(step.fire)
        if plan is None:
            break
        step = next_step(spec, plan.next_after, marks=True)
    slots = [engine.out[at] for at in sorted(engine.out) if start < at <= end]
    runs = sum(s.outcome in ("run", "extra") for s in slots)
    return Simulation(slots, runs, truncated)
