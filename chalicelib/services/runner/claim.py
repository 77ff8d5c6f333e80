"""The runner's first write for a scheduled slot: claim it and start it, in one update.

Overlap and busy are decided here, when the fire is due (``rules.overlap_decision``):
with a run executing now, ``overlap: skip`` records the slot ``skipped`` and moves past
it; any other policy leaves it due, and the settle of that run sends it again
(``settle.pull_slot``). A duplicate message, or one for a slot the trigger has moved
past, is dropped.

A standing item (``store/triggers.py``) is fenced on its exact pointer. A message that
finds the pointer on another slot that is already due (its own message failed to go
out, was lost, or is still on its way) runs the pointer's slot instead, late and with
its lateness recorded, as a keyed row's first missed slot runs after downtime: the
slots between are merged into it (a trigger fires once), none runs twice (the pointer
and the run id fence it), and none is passed without a run or a record.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from chalicelib.domain import schedule
from chalicelib.domain.catchup import SlotPlan, plan_slot
from chalicelib.domain.codec import decode_schedule
from chalicelib.domain.epoch_ms import dt, ms
from chalicelib.domain.exceptions import exception_of
from chalicelib.domain.ids import schedule_run_id
from chalicelib.domain.records import Trigger
from chalicelib.domain.rules import Overlap, capacity_of, due_at, overlap_decision, stands
from chalicelib.observability import logger, record_metric
from chalicelib.services.heartbeat.reaper import reap_expired, record_terminal, refresh_due
from chalicelib.services.heartbeat.slots import fire_message
from chalicelib.services.pipeline import Pipeline
from chalicelib.settings import get_settings
from chalicelib.store import claims as claims_store
from chalicelib.store import payloads
from chalicelib.store import triggers as triggers_store
from chalicelib.store.sqs import FireMessage, send_fires

__all__ = ["claim_slot", "claim_scheduled", "dropped", "CLAIM_ATTEMPTS"]

CLAIM_ATTEMPTS = 3


@dataclass(frozen=True)
class _Again:
    """Claim again, with this stored schedule (edited meanwhile, or the same), fenced
    on the form the item is in now (standing or keyed, ``store/triggers.py``)."""

    sched: str
    standing: bool
    # The message to claim with: the same, or the pointer's slot when it was taken over.
    take: FireMessage
    taken: bool = False


@dataclass(frozen=True)
class _Slot:
    message: FireMessage
    slot_ms: int
    next_slot_ms: int | None
    shard: str
    lease_ms: int
    # The slot waits its turn at capacity (catch-up ``all``, ``buffer_all``): never skipped.
    waits: bool = False


def dropped(message: FireMessage, why: str) -> str:
    """Count and log a message the claim will not run; its status is ``dropped``."""
    record_metric("RunsDropped", surface=message.surface)
    logger.info(
        "fire dropped at the claim",
        extra={"trigger_id": message.trigger_id, "run_id": message.run_id, "why": why},
    )
    return "dropped"


def claim_slot(
    message: FireMessage, *, lease_ms: int, now: datetime, pipeline: Pipeline
) -> Trigger | str:
    """Claim and start a scheduled slot (one write): the trigger item, or what happened."""
    outcome = claim_scheduled(message, lease_ms=lease_ms, now=now, pipeline=pipeline)
    return outcome if isinstance(outcome, str) else outcome[0]


def claim_scheduled(
    message: FireMessage, *, lease_ms: int, now: datetime, pipeline: Pipeline
) -> tuple[Trigger, FireMessage] | str:
    """Claim and start a scheduled slot (one write): the trigger item and the message of
    the slot that runs (another than ``message``'s when a standing pointer was due on
    another slot), or what happened."""
    shard = triggers_store.shard_of(message.trigger_id, get_settings().due_shards)
    sched = message.sched or "{}"
    standing = message.standing_shard is not None
    taken = False  # the message now claims a standing pointer's slot, not its own
    # One attempt more than CLAIM_ATTEMPTS: taking the pointer's slot over spends one.
    for _attempt in range(CLAIM_ATTEMPTS + 1):
        slot_ms = int(message.scheduled_ms or 0)
        policy = json.loads(sched)
        plan, next_ms = _plan(message, sched, policy, now=now)
        slot = _Slot(message, slot_ms, next_ms, shard, lease_ms, plan.waits_its_turn)
        if not plan.run:
            passed = _pass(slot, plan, sched=sched, now=now)
            if not isinstance(passed, _Again):
                return passed
            sched, standing, message = passed.sched, passed.standing, passed.take
            continue
        outcome, item = claims_store.claim_slot_and_start(
            message.trigger_id,
            slot_ms=slot_ms,
            sched=sched,
            next_slot_ms=slot.next_slot_ms,
            run_id=message.run_id,
            lease_ms=lease_ms,
            capacity=capacity_of(policy),
            shard=shard,
            standing=standing,
            stands=get_settings().standing_rows and stands(sched),
            move_shard=standing and message.standing_shard != shard,
            started_ms=ms(now),
        )
        if outcome == claims_store.ClaimResult.CLAIMED and item is not None:
            # A lease the due index left to this claim (``rules.due_at``) that ran out:
            # reaped now, recorded ``lost`` (nothing is read or written if there is none).
            reap_expired(item, now=now, pipeline=pipeline, sparing=message.run_id)
            _record_passed(item, plan, now=now)
            return item, message
        seen = _not_claimed(
            slot, sched=sched, policy=policy, now=now, pipeline=pipeline, taken=taken
        )
        if isinstance(seen, Trigger):
            return seen, message
        if not isinstance(seen, _Again):
            return seen
        sched, standing, message = seen.sched, seen.standing, seen.take
        taken = taken or seen.taken
    return dropped(message, "claim kept losing races")


def _not_claimed(
    slot: _Slot, *, sched: str, policy: dict, now: datetime, pipeline: Pipeline, taken: bool
) -> Trigger | str | _Again:
    """Why the claim failed, read from the trigger, and what to do about it."""
    message = slot.message
    item = triggers_store.get_trigger(message.trigger_id)
    if item is None:
        return dropped(message, "trigger deleted")
    entry = triggers_store.in_flight_of(item).get(message.run_id)
    if isinstance(entry, dict):
        if int(entry.get("s", 0)) == 0:  # claimed and waiting (deferred): start it
            started = claims_store.start_run(
                item.id, run_id=message.run_id, lease_ms=slot.lease_ms, started_ms=ms(now)
            )
            return started if started is not None else dropped(message, "raced")
        return dropped(message, "duplicate delivery")
    standing = triggers_store.is_standing(item)
    current = triggers_store.next_slot_of(item)
    if current is None:
        return dropped(message, "slot already run or moved")
    if current != slot.slot_ms:
        if not standing or current > max(slot.slot_ms, ms(now)):
            # Keyed: the slot ran or moved. Standing, the pointer after this slot and
            # not due yet: its own message is sent by the window (or on its way).
            return dropped(message, "slot already run or moved")
        # Standing, and the pointer is due on another slot (before this one, or behind
        # it and past): run that one instead.
        taken_over = _pointer_message(message, current)
        if isinstance(triggers_store.in_flight_of(item).get(taken_over.run_id), dict):
            return dropped(message, "the pointer's slot is running")
        # Claimed as its own message would be (the same fence, overlap and records).
        record_metric("SlotsTakenOver")
        return _Again(sched, standing, taken_over, taken=True)
    if item.sched != sched:
        if not item.sched:
            return dropped(message, "no longer a schedule")
        # Edited, same slot: claim it with what is stored now.
        return _Again(item.sched, standing, slot.message)
    if item.status != "active":
        refresh_due(item, now=now)  # out of the due index: nothing to send again
        return dropped(message, "trigger disabled")
    if reap_expired(item, now=now, pipeline=pipeline):
        return _Again(sched, standing, slot.message)
    in_flight = triggers_store.in_flight_of(item)
    decision = overlap_decision(policy, running=len(in_flight), waits=slot.waits)
    if decision is Overlap.RETRY:
        return _Again(sched, standing, slot.message)  # the run we saw settled: claim again
    if decision is Overlap.SKIP:
        return _skip(
            item, slot, leases=[triggers_store.entry_lease(e) for e in in_flight.values()], now=now
        )
    if taken:
        # The pointer's slot is buffered already (its own message, or an earlier one,
        # found no room): this later slot collapses into it, as a keyed row's do.
        return dropped(message, "an earlier slot is still due")
    record_metric("RunsBuffered")
    return "buffered"  # buffer_one / allow at capacity: the settle sends it again


def _plan(
    message: FireMessage, sched: str, policy: dict, *, now: datetime
) -> tuple[SlotPlan, int | None]:
    """The catch-up plan of the message's slot (``domain/catchup``), and its next slot.

    ``now`` is read on the schedule's clock: a jittered fire starts its jitter after the
    slot, so the slots before now less that jitter are the ones passed.
    """
    slot_ms = int(message.scheduled_ms or 0)
    spec = decode_schedule(sched)
    jitter = schedule.fire_at_ms(message.trigger_id, slot_ms, spec) - slot_ms
    plan = plan_slot(
        spec,
        dt(slot_ms),
        now=now - timedelta(milliseconds=jitter),
        buffer_all=policy.get("o") == "buffer_all",
        merge=policy.get("o") == "buffer_one",
    )
    following = schedule.next_fire_after(spec, plan.next_after)
    return plan, ms(following) if following else None


def _pass(slot: _Slot, plan: SlotPlan, *, sched: str, now: datetime) -> str | _Again:
    """A slot the plan does not run (catch-up ``none``, out of the window, beyond
    ``buffer_all``'s bound): recorded with every slot it passes, then moved past, fenced
    on the slot as a skip is. Records first: a failed move leaves the slot due and its
    message comes back; a record is only created, never overwritten."""
    message = slot.message
    item = triggers_store.get_trigger(message.trigger_id)
    if item is None or triggers_store.next_slot_of(item) != slot.slot_ms:
        return dropped(message, "slot already run or moved")
    if item.sched != sched:
        if not item.sched:
            return dropped(message, "no longer a schedule")
        return _Again(item.sched, triggers_store.is_standing(item), message)
    if item.status != "active":
        refresh_due(item, now=now)
        return dropped(message, "trigger disabled")
    status, reason = plan.status or "missed", plan.reason or "missed"
    if plan.one_off:
        skip = exception_of(payloads.load_spec(item), "skips", "slot", slot.slot_ms) or {}
        reason = str(skip.get("reason") or "skipped (a one-off skip)")
    record_terminal(item, message.run_id, slot.slot_ms, status, reason, now, only_new=True)
    _record_passed(item, plan, now=now)
    leases = [triggers_store.entry_lease(e) for e in triggers_store.in_flight_of(item).values()]
    standing_item = triggers_store.is_standing(item)
    if not triggers_store.advance_slot(
        item.id,
        slot_ms=slot.slot_ms,
        next_slot_ms=slot.next_slot_ms,
        due_at=due_at(leases, next_slot_ms=slot.next_slot_ms),
        shard=slot.shard,
        standing=standing_item,
    ):
        return dropped(message, "raced")
    record_metric("SlotsPassed", status=status)
    if _send_next_after_pass(slot, standing=standing_item, now=now):
        send_fires([fire_message(item.id, slot.next_slot_ms or 0, sched, now_ms=ms(now))])
    return status


def _send_next_after_pass(slot: _Slot, *, standing: bool, now: datetime) -> bool:
    """Whether a pass sends its keyed trigger's next slot's message itself.

    Yes when that slot is already due (catch-up ``all`` resumes inside its window, or
    ``buffer_all`` keeps its newest), as a settle's pull would, and when a tick may have
    sent it already (within the lookahead). The records are written before the move, and
    many of them take a while (catch-up ``none`` after downtime)::

        t0      the claim of the missed slot reads ``now``; the next slot is N (> t0)
        N       N's message, sent by the tick, lands: the trigger is still on the
                missed slot, so it is dropped ("slot already run or moved")
        N + d   the pass moves the trigger to N, whose message is gone

    Then nothing sends N until the overdue pass, whose claim is late again and passes
    again: the trigger never runs. A spare message is dropped by the claim's fence. A
    standing item's pointer is taken over by any later slot's message instead.
    """
    if slot.next_slot_ms is None or standing:
        return False
    return slot.next_slot_ms <= ms(now) + get_settings().lookahead_s * 1000


def _record_passed(item: Trigger, plan: SlotPlan, *, now: datetime) -> None:
    """The records of the slots a claim passed without running them (``plan.passed``)."""
    why = {
        "missed": "missed while the trigger could not run (catchup: "
        f"{'one run for them' if plan.run else 'not run'})",
        "skipped": "more than 100 slots waiting (overlap: buffer_all)",
    }.get(plan.passed_status, plan.passed_status)
    for n, passed in enumerate(plan.passed, start=1):
        more = f"; {plan.passed_more} more not recorded" if n == len(plan.passed) else ""
        slot_ms = ms(passed)
        run_id = schedule_run_id(item.id, slot_ms)
        record_terminal(
            item,
            run_id,
            slot_ms,
            plan.passed_status,
            why + (more if plan.passed_more else ""),
            now,
            only_new=True,
        )


def _pointer_message(message: FireMessage, pointer_ms: int) -> FireMessage:
    """The message of the slot a standing item's pointer is on: its slot and run id."""
    return replace(
        message, run_id=schedule_run_id(message.trigger_id, pointer_ms), scheduled_ms=pointer_ms
    )


def _skip(item: Trigger, slot: _Slot, *, leases: list[int], now: datetime) -> str:
    """``overlap: skip`` with a run executing: record the slot skipped, then move past it.

    Record first: if the record cannot be written the slot stays due and its message
    comes back, so a skip never goes unrecorded. Only created, never overwritten.
    """
    record_terminal(
        item,
        slot.message.run_id,
        slot.slot_ms,
        "skipped",
        "previous run still in flight (overlap: skip)",
        now,
        only_new=True,
    )
    triggers_store.advance_slot(
        item.id,
        slot_ms=slot.slot_ms,
        next_slot_ms=slot.next_slot_ms,
        due_at=due_at(leases, next_slot_ms=slot.next_slot_ms),
        shard=slot.shard,
        standing=triggers_store.is_standing(item),
    )
    # The next slot follows the schedule: the heartbeat has sent (or will send) its
    # message, as it sends every slot up to its horizon.
    return "skipped"
