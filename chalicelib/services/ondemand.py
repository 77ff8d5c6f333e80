"""Runs a person asks for: fire now with a payload, and backfills of past slots.

Its part in a run is ``OnDemandPolicy``, listed in ``chalicelib.assembly``:

- **fire payload** (fire field, after settle, after lost): ``POST /v1/triggers/{id}/fire
  {"payload": ...}`` keeps the payload in an item of its own (the queue message carries
  ids only); the runner hands it to the workflow and it is deleted once the run settles.
- **backfill** (after settle, after lost): ``POST /v1/triggers/{id}/backfill`` runs the
  slots of a past window, oldest first, each with the run id the slot has on the
  schedule (``ids.schedule_run_id``): a slot that already ran (on schedule or by an
  earlier backfill) is not run again, and a workflow that dedupes outside actions on
  ``fire.fire_id`` sees the same id either way.

How a backfill runs within the trigger's limits:

1. The slots to run are written to one item (beside the trigger's state) and the
   trigger's ``backfill_left`` is set; only one backfill per trigger at a time.
2. ``dispatch_backfill`` pops the oldest slot (compare-and-set on the item's version,
   so each slot is popped by exactly one caller) and claims it like any other run:
   ``claim_and_start`` with the trigger's ``concurrency`` as capacity. A trigger that is
   busy or paused refuses the claim; the slot goes back to the front and waits. The
   dispatcher then reads the trigger once more (``RECHECKS``): a run that settled between
   the refused claim and the put-back found no slot to pull, and would start none.
3. Every settle of a run of that trigger (a backfill run or any other) calls
   ``dispatch_backfill`` again, and so does an enable: the backfill goes on as capacity
   frees up. The run policies apply to each run as to any: serialize_key, budget,
   the switch.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from chalicelib.domain import schedule
from chalicelib.domain.codec import decode_schedule
from chalicelib.domain.epoch_ms import ms
from chalicelib.domain.errors import Conflict, ServiceUnavailable, ValidationError
from chalicelib.domain.history import slot_ran
from chalicelib.domain.ids import schedule_run_id
from chalicelib.domain.records import Trigger
from chalicelib.domain.runs import scheduled_slot_of_run
from chalicelib.domain.trigger_spec import TriggerSpec
from chalicelib.observability import logger, record_metric
from chalicelib.services import audit, switch
from chalicelib.services.auth import Principal
from chalicelib.services.lookup import load_owned
from chalicelib.services.pipeline import RunContext, RunPolicy
from chalicelib.services.runs import iso_ms
from chalicelib.settings import get_settings
from chalicelib.store import backfill as store
from chalicelib.store import claims as claims_store
from chalicelib.store import triggers as triggers_store
from chalicelib.store.backfill import delete_fire_payload, save_fire_payload
from chalicelib.store.sqs import FireMessage, send_fires

if TYPE_CHECKING:
    from chalicelib.domain.spec import BackfillIn

__all__ = [
    "MAX_BACKFILL_SLOTS",
    "ESTIMATE_FROM_RUNS",
    "OnDemandPolicy",
    "slots_between",
    "backfill",
    "dispatch_backfill",
    "drop_backfill",
    "save_fire_payload",
    "delete_fire_payload",
]

MAX_BACKFILL_SLOTS = 1000
# The dry run's cost estimate is the mean cost of this many of the trigger's latest runs.
ESTIMATE_FROM_RUNS = 20
POP_ATTEMPTS = 8


def _fire_extras(ctx: RunContext) -> dict:
    if ctx.message.surface != "manual":
        return {}
    data = store.read_fire_request(ctx.message.run_id) or {}
    # For the run's detail item (``runner/details.py``): its own payload, and its origin.
    ctx.notes["fire_request"] = {"given": "p" in data, "rerun_of": data.get("r")}
    return {"payload": data["p"]} if "p" in data else {}  # without a body: the trigger's own


# -- backfill -----------------------------------------------------------------------------


def slots_between(
    spec: schedule.ScheduleSpec, *, start: datetime, end: datetime, limit: int
) -> list[datetime]:
    """The schedule's slots with ``start <= slot <= end``, at most ``limit`` + 1 of them.

    One more than ``limit`` tells the caller the window holds too many. ``to`` is the
    last slot a person names ("from 00:00 to 05:00"), so the window includes it; slots
    are whole milliseconds, so one past it closes the half-open ``fires_between``.
    """
    return schedule.fires_between(spec, start, end + timedelta(milliseconds=1), limit=limit + 1)


def drop_backfill(trigger_id: str) -> None:
    """Forget a trigger's pending backfill (its trigger is being deleted)."""
    store.drop_pending(trigger_id)


def _already_ran(item: Trigger, run_ids: list[str]) -> set[str]:
    """The run ids among ``run_ids`` that ran, run now, or are claimed.

    A ``skipped`` record does not count: the slot never ran its workflow (the switch was
    off, or an overlap skipped it), which is exactly what a backfill is for. A ``history:
    failures`` trigger keeps no record of a success: ``history.slot_ran`` decides.
    """
    statuses = store.recorded_statuses(item.id, run_ids)
    history = TriggerSpec.from_json(item.spec).history
    created_ms = int(item.created_ms or 0)
    ran = {
        run_id
        for run_id in run_ids
        if slot_ran(
            history,
            recorded_status=statuses.get(run_id),
            slot_ms=scheduled_slot_of_run(run_id) or 0,
            created_ms=created_ms,
        )
    }
    done = set(triggers_store.in_flight_of(item)) | ran
    return done & set(run_ids)


def _estimate_usd(item: Trigger, slots: int) -> tuple[float, int]:
    """The mean cost of the trigger's latest finished runs, times ``slots``."""
    costs = store.recent_costs(item.id, limit=ESTIMATE_FROM_RUNS)
    if not costs:
        return 0.0, 0
    mean = sum(costs) / len(costs)
    estimate = mean * slots
    return (round(estimate, 6) if math.isfinite(estimate) else 0.0), len(costs)


def backfill(principal: Principal, trigger_id: str, body: Any, *, now: datetime) -> dict:
    """Run (or, with ``dry_run``, count) the slots of a past window; see the module doc.

    1. ``from <= slot <= to``, ``to`` not in the future, at most ``MAX_BACKFILL_SLOTS``
       slots in the window (else 422 naming ``to``).
    2. Slots at or after the trigger's next fire are left to the heartbeat, and slots
       that already ran are left out: what remains is what runs.
    3. Dry run: ``{slots, first, last, estimated_usd}``. Else the slots are queued and
       the first ones start at once: 202 ``{slots, run_ids}``.
    """
    # Cold start: the request models load pydantic, which the fire path (this module's
    # OnDemandPolicy) never needs.
    from chalicelib.domain.spec import BackfillIn, parse_model

    data = parse_model(BackfillIn, body)
    item = load_owned(principal, trigger_id)
    _check_window(item, data, now=now)
    slot_ms = _slots_to_consider(item, data)
    ids = {slot: schedule_run_id(item.id, slot) for slot in slot_ms}
    ran = _already_ran(item, list(ids.values()))
    todo = [slot for slot in slot_ms if ids[slot] not in ran]
    if data.dry_run:
        estimate, basis = _estimate_usd(item, len(todo))
        return {
            "slots": len(todo),
            "first": iso_ms(todo[0]) if todo else None,
            "last": iso_ms(todo[-1]) if todo else None,
            "estimated_usd": estimate,
            "estimate_from_runs": basis,
            "already_ran": len(slot_ms) - len(todo),
        }
    if todo:
        _start(item, todo)
        audit.record(
            principal,
            "backfill",
            tenant=item.tenant,
            trigger_id=item.id,
            now=now,
            detail={"from": iso_ms(ms(data.from_)), "to": iso_ms(ms(data.to)), "slots": len(todo)},
        )
        record_metric("BackfillSlots", len(todo))
        dispatch_backfill(item.id, now=now)
    return {"slots": len(todo), "run_ids": [ids[slot] for slot in todo]}


def _check_window(item: Trigger, data: BackfillIn, *, now: datetime) -> None:
    """Step 1's checks that need no slots: a schedule, the switch, a past window."""
    if item.kind == "event" or not item.sched:
        raise ValidationError(
            "an event trigger has no schedule slots to backfill; replay its events instead",
            field=None,
        )
    if not data.dry_run and not switch.triggers_enabled(now=now):
        raise ServiceUnavailable("triggers are switched off (triggers_enabled); nothing fires")
    if data.to <= data.from_:
        raise ValidationError("to must be after from", field="to")
    if data.to > now:
        raise ValidationError(
            "to must not be in the future (a backfill runs past slots)", field="to"
        )


def _slots_to_consider(item: Trigger, data: BackfillIn) -> list[int]:
    """The window's slots (epoch ms), those the heartbeat fires itself left out."""
    spec = decode_schedule(item.sched or "")
    found = slots_between(spec, start=data.from_, end=data.to, limit=MAX_BACKFILL_SLOTS)
    if len(found) > MAX_BACKFILL_SLOTS:
        raise ValidationError(
            f"the window holds more than {MAX_BACKFILL_SLOTS:,} slots; narrow from/to",
            field="to",
        )
    slot_ms = [ms(slot) for slot in found]
    next_ms = triggers_store.next_slot_of(item)
    if item.status == "active" and next_ms is not None:
        # The heartbeat fires these itself; both firing one would run it twice.
        slot_ms = [slot for slot in slot_ms if slot < next_ms]
    return slot_ms


def _start(item: Trigger, todo: list[int]) -> None:
    # One backfill at a time: the marker is set only if none is pending.
    if not store.mark_started(item.id, len(todo)):
        fresh = triggers_store.get_trigger(item.id)
        left = int(fresh.backfill_left or 0) if fresh is not None else 0
        raise Conflict(
            f"a backfill of this trigger is still running ({left} slot(s) left); "
            "wait for it to finish"
        )
    _, version = store.read_pending(item.id)
    if not store.write_pending(item.id, todo, expected_version=version):
        raise Conflict("a backfill of this trigger started at the same time; try again")


def _pop(trigger_id: str) -> tuple[int | None, int]:
    """The oldest pending slot, removed from the item; ``(None, 0)`` when none is left."""
    for _attempt in range(POP_ATTEMPTS):
        slots, version = store.read_pending(trigger_id)
        if not slots:
            return None, 0
        if store.write_pending(trigger_id, slots[1:], expected_version=version):
            return slots[0], len(slots) - 1
    return None, -1  # others are popping: they carry on


def _push_back(trigger_id: str, slot: int) -> None:
    for _attempt in range(POP_ATTEMPTS):
        slots, version = store.read_pending(trigger_id)
        if store.write_pending(trigger_id, sorted({slot, *slots}), expected_version=version):
            return
    logger.warning(
        "backfill slot could not be put back; it can be backfilled again",
        extra={"trigger_id": trigger_id, "slot_ms": slot},
    )


# Times a dispatch whose claim found the trigger full looks again for room that a settle
# made meanwhile (each look is one read of the trigger).
RECHECKS = 3


def _has_room(trigger_id: str, capacity: int) -> bool:
    item = triggers_store.get_trigger(trigger_id)
    if item is None or item.status != "active":
        return False
    return len(triggers_store.in_flight_of(item)) < capacity


def dispatch_backfill(trigger_id: str, *, now: datetime) -> int:
    """Start as many pending backfill slots as the trigger has room for; returns how many."""
    settings = get_settings()
    started = 0
    rechecks = RECHECKS
    while True:
        slot, left = _pop(trigger_id)
        if slot is None:
            if left == 0:
                store.set_left(trigger_id, 0)
            return started
        item = triggers_store.get_trigger(trigger_id)
        if item is None:
            store.drop_pending(trigger_id)
            return started
        capacity = TriggerSpec.from_json(item.spec).concurrency
        run_id = schedule_run_id(trigger_id, slot)
        shard = triggers_store.shard_of(trigger_id, settings.due_shards)
        outcome, _ = claims_store.claim_and_start(
            trigger_id,
            run_id=run_id,
            surface="backfill",
            lease_ms=ms(now) + settings.lease_s * 1000,
            capacity=capacity,
            shard=shard,
            slot_ms=slot,
            started=False,
        )
        if outcome != claims_store.ClaimResult.CLAIMED:
            _push_back(trigger_id, slot)  # busy or paused: waits for the next settle
            # A run that settled between the claim and the push back found no slot to
            # pull (this one was out of the list): look again, or nobody would.
            if rechecks and _has_room(trigger_id, capacity):
                rechecks -= 1
                continue
            return started
        message = FireMessage(
            run_id=run_id, trigger_id=trigger_id, surface="backfill", scheduled_ms=slot
        )
        if send_fires([message]):
            claims_store.release_claim(trigger_id, run_id=run_id, slot_ms=None, shard=shard)
            _push_back(trigger_id, slot)
            raise ServiceUnavailable("the backfill could not be queued; try again")
        store.set_left(trigger_id, left)
        started += 1


def _on_finish(ctx: RunContext) -> None:
    if ctx.message.surface == "manual" and not ctx.deferred:
        delete_fire_payload(ctx.message.run_id)
    if ctx.deferred:
        return
    if ctx.message.surface == "backfill" or ctx.item.backfill_left:
        dispatch_backfill(ctx.item.id, now=ctx.finished_at or ctx.now)


def _on_lost(*, item: Trigger, run_id: str, entry: Any, now: datetime) -> None:
    kind = entry.get("k") if isinstance(entry, dict) else None
    if kind == "m":
        delete_fire_payload(run_id)
    if kind == "b" or item.backfill_left:
        dispatch_backfill(item.id, now=now)


class OnDemandPolicy(RunPolicy):
    """``fire_fields``: a manual run's payload; ``after_settle`` / ``after_lost``: forget
    the payload, and go on with the trigger's backfill."""

    name = "ondemand"

    def fire_fields(self, ctx: RunContext) -> dict:
        return _fire_extras(ctx)

    def after_settle(self, ctx: RunContext) -> None:
        _on_finish(ctx)

    def after_lost(self, *, item: Trigger, run_id: str, entry: Any, now: datetime) -> None:
        _on_lost(item=item, run_id=run_id, entry=entry, now=now)
