"""The fenced writes of the claim+start → settle protocol.

Every change of who owns a trigger is one conditional UpdateItem, fenced by the run id.
``in_flight`` is a map ``run_id → {l: lease_ms, s: started 0|1, k: surface, t: slot_ms}``
(and ``a``: when the runner started it, so a run reaped ``lost`` shows its start);
its size is the number of runs that own the trigger now.

A scheduled fire rests on two fenced writes: the runner's ``claim_slot_and_start``
(before the workflow) and ``settle_run`` (after it). The heartbeat writes nothing per
fire: it reads due rows and sends their messages, and moves its per-shard cursor
(``store/cursors.py``).
"""

from __future__ import annotations

import secrets
import time
from typing import Any

from pynamodb.exceptions import UpdateError
from pynamodb.expressions.condition import Condition, size

from chalicelib.domain.records import Trigger
from chalicelib.domain.rules import due_with_slot
from chalicelib.store.base import condition_failed, missing_path, opt_int, plain_map
from chalicelib.store.triggers import STANDING_DUE, TriggerModel, entry_after_error, trigger_record

__all__ = [
    "ClaimResult",
    "SETTLE_ATTEMPTS",
    "claim_slot_and_start",
    "release_claim",
    "start_run",
    "claim_and_start",
    "drop_claim",
    "defer_run",
    "settle_run",
    "reap_run",
]


class ClaimResult:
    CLAIMED = "claimed"
    LOST = "lost"  # another worker got there first, or the trigger changed
    BUSY = "busy"  # runs in flight fill its capacity


# Writes retried in place on an error that may not have applied them (timeouts, 5xx).
SETTLE_ATTEMPTS = 3


def _started(started_ms: int | None) -> dict:
    """An entry's start time (``a``): a run reaped ``lost`` still shows when it started."""
    return {} if started_ms is None else {"a": started_ms}


def claim_slot_and_start(
    trigger_id: str,
    *,
    slot_ms: int,
    sched: str,
    next_slot_ms: int | None,
    run_id: str,
    lease_ms: int,
    capacity: int,
    shard: str,
    standing: bool = False,
    stands: bool = False,
    move_shard: bool = False,
    started_ms: int | None = None,
) -> tuple[str, Trigger | None]:
    """The runner's first write for a scheduled fire: claim the slot and start the run.

    One conditional update, taken when the fire is due (not when it was enqueued): the
    slot is still the trigger's next one (``next_fire_at`` and the schedule it was read
    with unchanged), the trigger is active and has room, and this run id owns nothing
    yet. The same write advances ``next_fire_at`` to the next slot after now (after
    downtime a trigger fires once), so a duplicate message of the slot is fenced out:
    a message can never run twice.

    A standing item (``store/triggers.py``) is fenced on its exact pointer ``next_slot``,
    and only that pointer moves: one write unit, nothing in the due index. (A message
    that finds the pointer on another slot that is due runs that slot instead:
    ``runner/claim.py``.) ``stands``: the schedule stands, so a
    keyed item stands from this write on. ``move_shard``: the row was read from a
    former shard count's shard.
    """
    t = TriggerModel
    # A token per claim: after a lost reply (and botocore's retry failing the condition)
    # an entry carrying it says the claim was ours.
    token = secrets.token_hex(4)
    entry = {"l": lease_ms, "s": 1, "k": "s", "t": slot_ms, "o": token, **_started(started_ms)}
    moves = {"standing": standing, "stands": stands, "move_shard": move_shard}
    actions = [
        t.in_flight[run_id].set(entry),
        *_slot_actions(next_slot_ms=next_slot_ms, lease_ms=lease_ms, shard=shard, **moves),
    ]
    fence = t.next_slot == slot_ms if standing else t.next_fire_at == slot_ms
    condition: Condition = (
        fence
        & (t.sched == sched)
        & (t.status == "active")
        & (size(t.in_flight) < capacity)
        & t.in_flight[run_id].does_not_exist()
    )
    item = TriggerModel(trigger_id)
    try:
        item.update(actions=actions, condition=condition)
    except UpdateError as exc:
        fresh, mine = entry_after_error(trigger_id, run_id)
        if mine is not None and mine.get("o") == token:
            return ClaimResult.CLAIMED, fresh
        if condition_failed(exc):
            return ClaimResult.LOST, None
        raise
    return ClaimResult.CLAIMED, trigger_record(item)


def _slot_actions(
    *,
    next_slot_ms: int | None,
    lease_ms: int,
    shard: str,
    standing: bool,
    stands: bool,
    move_shard: bool,
) -> list[Any]:
    """How a claim moves the trigger's next slot: the pointer of a standing item (and
    nothing in the due index), or the keyed ``next_fire_at`` and ``due_at``."""
    t = TriggerModel
    actions: list[Any] = []
    if stands and next_slot_ms is not None:
        actions.append(t.next_slot.set(next_slot_ms))
        if not standing:  # stood in this write: the row takes its fixed key
            actions += [t.next_fire_at.remove(), t.due_at.set(STANDING_DUE)]
        if move_shard or not standing:
            actions.append(t.due_shard.set(shard))
        return actions
    if next_slot_ms is None:
        actions += [t.next_fire_at.remove(), t.due_at.set(lease_ms), t.due_shard.set(shard)]
    else:
        due = due_with_slot([lease_ms], next_slot_ms=next_slot_ms)
        actions += [t.next_fire_at.set(next_slot_ms), t.due_at.set(due), t.due_shard.set(shard)]
    if standing:  # keyed again
        actions.append(t.next_slot.remove())
    return actions


def release_claim(trigger_id: str, *, run_id: str, slot_ms: int | None, shard: str = "0") -> bool:
    """Undo a claim whose message could not be sent, so the next tick retries the slot.

    Fenced on the run id: only the claimer releases, and only if nobody started it.
    """
    t = TriggerModel
    actions = [t.in_flight[run_id].remove()]
    if slot_ms is not None:
        actions += [
            t.next_fire_at.set(slot_ms),
            t.due_at.set(slot_ms),
            t.due_shard.set(shard),
            t.next_slot.remove(),  # keyed again: the next claim stands it
        ]
    try:
        TriggerModel(trigger_id).update(actions=actions, condition=t.in_flight[run_id]["s"] == 0)
    except UpdateError as exc:
        if condition_failed(exc):
            return False
        raise
    return True


def start_run(
    trigger_id: str, *, run_id: str, lease_ms: int, started_ms: int | None = None
) -> Trigger | None:
    """The runner's first write: accept the run only if it is still ours and not started.

    None means fenced out: a duplicate delivery, or a claim that was reaped or released.
    """
    t = TriggerModel
    item = TriggerModel(trigger_id)
    # A token per start attempt: after a lost reply (or botocore's retry of it failing
    # the condition) it tells our start from a duplicate delivery's.
    token = secrets.token_hex(4)
    actions = [
        t.in_flight[run_id]["s"].set(1),
        t.in_flight[run_id]["l"].set(lease_ms),
        t.in_flight[run_id]["o"].set(token),
    ]
    if started_ms is not None:
        actions.append(t.in_flight[run_id]["a"].set(started_ms))
    try:
        item.update(
            actions=actions,
            condition=t.in_flight[run_id]["s"] == 0,
        )
    except UpdateError as exc:
        fresh, mine = entry_after_error(trigger_id, run_id)
        if mine is not None and mine.get("o") == token and int(mine.get("s", 0)) == 1:
            return fresh
        if condition_failed(exc) or missing_path(exc):
            return None
        raise
    return trigger_record(item)


def claim_and_start(
    trigger_id: str,
    *,
    run_id: str,
    surface: str,
    lease_ms: int,
    capacity: int,
    shard: str,
    slot_ms: int | None = None,
    started: bool = True,
    event_id: str | None = None,
    started_ms: int | None = None,
) -> tuple[str, Trigger | None]:
    """Claim a slot for an event or manual run (and start it in the same write if ``started``)."""
    t = TriggerModel
    entry: dict = {"l": lease_ms, "s": 1 if started else 0, "k": surface[0]}
    if slot_ms is not None:
        entry["t"] = slot_ms
    if event_id is not None:
        entry["e"] = event_id  # so a reaped event run finds its event (runs.lost_hooks)
    if started:
        entry.update(_started(started_ms))
    item = TriggerModel(trigger_id)
    try:
        item.update(
            actions=[
                t.in_flight[run_id].set(entry),
                t.due_at.set(t.due_at | lease_ms),
                t.due_shard.set(t.due_shard | shard),
            ],
            condition=(t.status == "active")
            & (size(t.in_flight) < capacity)
            & t.in_flight[run_id].does_not_exist(),
        )
    except UpdateError as exc:
        if condition_failed(exc):
            return ClaimResult.BUSY, None
        raise
    return ClaimResult.CLAIMED, trigger_record(item)


def drop_claim(trigger_id: str, *, run_id: str, lease_ms: int) -> bool:
    """Give back a claim that will not run after all (a started one too), fenced on its lease.

    Only the claimer knows the lease it wrote, so nobody else's claim is ever dropped.
    """
    t = TriggerModel
    try:
        TriggerModel(trigger_id).update(
            actions=[t.in_flight[run_id].remove()],
            condition=t.in_flight[run_id]["l"] == lease_ms,
        )
    except UpdateError as exc:
        if condition_failed(exc):
            return False
        raise
    return True


def defer_run(trigger_id: str, *, run_id: str, lease_ms: int | None) -> bool:
    """Hand a started run back without counting it (a guard said wait), fenced on the run.

    With ``lease_ms`` the claim is kept but un-started, its lease stretched over the wait:
    the start fence accepts the message sent again, and the reaper leaves it alone. With
    None the claim is released (an event run: its event goes back to its queue). False
    means the claim was no longer ours (reaped).
    """
    t = TriggerModel
    if lease_ms is None:
        actions = [t.in_flight[run_id].remove()]
    else:
        actions = [t.in_flight[run_id]["s"].set(0), t.in_flight[run_id]["l"].set(lease_ms)]
    try:
        TriggerModel(trigger_id).update(actions=actions, condition=t.in_flight[run_id]["s"] == 1)
    except UpdateError as exc:
        if condition_failed(exc) or missing_path(exc):
            return False
        raise
    return True


def settle_run(
    trigger_id: str,
    *,
    run_id: str,
    succeeded: bool | None,
    last_run: dict,
    next_fire_override_ms: int | None = None,
    shard: str,
    failure_counts: bool = True,
) -> Trigger | None:
    """Release the claim and count the run: fenced on ``in_flight[run_id]``.

    Always called, on success and on failure: a claim leaked here is a trigger stuck
    forever. None means the claim was no longer ours (reaped). ``failure_counts`` False:
    a failed run that does not count toward ``consecutive_failures`` (an event attempt
    that will be retried).
    """
    t = TriggerModel
    actions = [t.in_flight[run_id].remove(), t.last_run.set(last_run)]
    # Only a run whose workflow ran counts toward run_count / max_runs: a skipped,
    # refused or deferred fire (succeeded None) does not.
    if succeeded is True:
        # (and a streak an enable cleared: this run was its ``recovered``)
        actions += [t.run_count.add(1), t.consecutive_failures.set(0), t.failures_paused.remove()]
    elif succeeded is False:
        actions.append(t.run_count.add(1))
        if failure_counts:
            actions.append(t.consecutive_failures.add(1))
    if next_fire_override_ms is not None:
        actions += [
            t.next_fire_at.set(next_fire_override_ms),
            t.due_at.set(next_fire_override_ms),
            t.due_shard.set(shard),
            t.next_slot.remove(),  # keyed on the returned slot; its claim stands it again
        ]
    item = TriggerModel(trigger_id)
    for attempt in range(SETTLE_ATTEMPTS):
        try:
            item.update(actions=actions, condition=t.in_flight[run_id].exists())
            return trigger_record(item)
        except UpdateError as exc:
            # Settling is fenced (it removes our entry), so it can apply only once and is
            # safe to try again; after a lost reply, last_run says whether it applied.
            fresh, mine = entry_after_error(trigger_id, run_id)
            if fresh is not None and mine is None:
                last = plain_map(fresh.last_run)
                if last.get("id") == run_id and opt_int(last.get("finished_at")) == opt_int(
                    last_run.get("finished_at")
                ):
                    return fresh
                return None  # reaped
            if condition_failed(exc):
                return None
            if attempt == SETTLE_ATTEMPTS - 1:
                raise
            time.sleep(0.02 * 2**attempt)
    return None


def reap_run(
    trigger_id: str, *, run_id: str, lease_ms: int, last_run: dict, failure_counts: bool = True
) -> bool:
    """Release a claim whose lease expired, fenced on the run id and that very lease.

    A live run is never reaped: leases come from the runner's timeout, and a run that
    started refreshed its lease at start. ``failure_counts`` False: the lost run does
    not count toward ``consecutive_failures`` (an event attempt that will be retried).
    """
    t = TriggerModel
    actions = [t.in_flight[run_id].remove(), t.run_count.add(1), t.last_run.set(last_run)]
    if failure_counts:
        actions.append(t.consecutive_failures.add(1))
    try:
        TriggerModel(trigger_id).update(
            actions=actions,
            condition=t.in_flight[run_id]["l"] == lease_ms,
        )
    except UpdateError as exc:
        if condition_failed(exc):
            return False
        raise
    return True
