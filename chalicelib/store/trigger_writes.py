"""The REST use cases' writes of a trigger: create, enable, pause, edit, delete.

The fire path's fenced writes (claim, start, settle, reap) are in ``store/claims.py``;
these are the writes a person makes through the API. An edit is fenced on ``version``
(and, when it moves the slot, on the slot and the size of ``in_flight``, the fields a
claim changes): a lost race is an answer (``EditOutcome.RACED``), never a lost claim.
Callers describe a write with plain values (``TriggerEdit``, ``Slot``); the pynamodb
actions and conditions are built here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pynamodb.exceptions import DoesNotExist, TransactWriteError, UpdateError
from pynamodb.expressions.condition import size
from pynamodb.expressions.update import Action
from pynamodb.transactions import TransactWrite

from chalicelib.domain.records import Trigger
from chalicelib.store.conditions import condition_failed, transaction_cancelled
from chalicelib.store.removal import delete_if_present
from chalicelib.store.state import StateModel, get_state, transaction_connection
from chalicelib.store.triggers import TriggerModel, trigger_item, trigger_record

__all__ = [
    "insert_trigger",
    "delete_trigger",
    "delete_state",
    "Slot",
    "enable_trigger",
    "pause_trigger",
    "DueChange",
    "TriggerEdit",
    "StateEdit",
    "EditOutcome",
    "write_edit",
]


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def insert_trigger(item: Trigger, *, state: dict | None) -> None:
    """Store a new trigger (and its first state): never over an existing id."""
    if state:
        StateModel(item.id, state=_compact(state), version=1).save()
    trigger_item(item).save(condition=TriggerModel.id.does_not_exist())


def delete_trigger(trigger_id: str) -> Trigger | None:
    """Delete the trigger item (its runs stay until their retention): the trigger as it
    was when removed, or None if another caller removed it first (``store/removal.py``)."""
    removed = delete_if_present(TriggerModel(trigger_id))
    return None if removed is None else trigger_record(removed)


def delete_state(trigger_id: str) -> None:
    """Delete a trigger's state (no-op when it has none)."""
    try:
        StateModel(trigger_id).delete()
    except DoesNotExist:
        pass


@dataclass(frozen=True)
class Slot:
    """The next slot of a trigger, and the due index key it gives."""

    next_fire_at: int
    due_at: int
    due_shard: str


def _cleared_pause(failures: int = 0) -> list[Action]:
    """An enable's clearing of the pause. ``failures``: the streak it clears, as read; kept
    as ``failures_paused`` until the next success, which is then ``recovered`` (alerts)."""
    t = TriggerModel
    kept = [t.failures_paused.set(failures)] if failures > 0 else []
    return [
        *kept,
        t.disabled_reason.remove(),
        t.consecutive_failures.set(0),
        t.disabled_note.remove(),
        t.disabled_by.remove(),
        t.disabled_ms.remove(),
    ]


def enable_trigger(
    trigger_id: str, *, now_ms: int, slot: Slot | None, failures: int = 0
) -> Trigger:
    """Make the trigger active: the pause's reason, note and author go (``failures``: the
    streak as read, see ``_cleared_pause``). The trigger as written."""
    t = TriggerModel
    actions: list[Action] = [t.updated_ms.set(now_ms), t.version.add(1), t.status.set("active")]
    actions += _cleared_pause(failures)
    if slot is not None:
        actions += [
            t.next_fire_at.set(slot.next_fire_at),
            t.due_at.set(slot.due_at),
            t.due_shard.set(slot.due_shard),
            t.next_slot.remove(),  # keyed on the new slot; its claim stands it again
        ]
    item = TriggerModel(trigger_id)
    item.update(actions=actions)
    return trigger_record(item)


def pause_trigger(
    trigger_id: str, *, by: str, now_ms: int, note: str | None, manual: bool
) -> Trigger:
    """Disable the trigger, recording who and when, and the note if any; the trigger as
    written.

    ``manual`` sets the reason to ``manual`` (an already disabled trigger keeps its own).
    """
    t = TriggerModel
    actions: list[Action] = [
        t.updated_ms.set(now_ms),
        t.version.add(1),
        t.status.set("disabled"),
        t.disabled_by.set(by),
        t.disabled_ms.set(now_ms),
        t.disabled_note.set(note) if note else t.disabled_note.remove(),
    ]
    if manual:
        actions.append(t.disabled_reason.set("manual"))
    item = TriggerModel(trigger_id)
    item.update(actions=actions)
    return trigger_record(item)


@dataclass(frozen=True)
class DueChange:
    """A new due index key: ``due_at`` None takes the trigger out of the index (and its
    shard); ``due_shard`` None leaves the shard as it is."""

    due_at: int | None
    due_shard: str | None = None


@dataclass(frozen=True)
class TriggerEdit:
    """One PATCH write, as plain values."""

    expected_version: int
    spec: str
    workflow: str
    now_ms: int
    by: str  # who edits (``disabled_by`` when the edit pauses)
    outbound_secret_sealed: str | None = None  # a new target's secret
    status: str | None = None  # the new status, when the edit changes it
    failures: int = 0  # the failure streak read (an enable keeps it, ``_cleared_pause``)
    sched_kind: tuple[str, str] | None = None  # the new due projection and kind
    next_fire_at: int | None = None  # the recomputed slot
    due: DueChange | None = None
    # Fence the write on the slot read (a claim moves it) and the size of in_flight.
    fence_slot: bool = False
    expected_next_fire_at: int | None = None
    expected_in_flight: int | None = None


@dataclass(frozen=True)
class StateEdit:
    """A new state written with the edit, compare-and-set on the state's version."""

    state: dict
    expected_version: int


class EditOutcome:
    WRITTEN = "written"
    RACED = "raced"  # the trigger changed between the read and the write
    STATE_RACED = "state_raced"  # the state changed (a run wrote it)


def _status_actions(edit: TriggerEdit) -> list[Action]:
    t = TriggerModel
    if edit.status is None:
        return []
    if edit.status == "active":
        return [t.status.set("active"), *_cleared_pause(edit.failures)]
    return [
        t.status.set(edit.status),
        t.disabled_reason.set("manual"),
        t.disabled_by.set(edit.by),
        t.disabled_ms.set(edit.now_ms),
    ]


def _due_actions(due: DueChange) -> list[Action]:
    t = TriggerModel
    if due.due_at is None:
        return [t.due_at.remove(), t.due_shard.remove()]
    actions: list[Action] = [t.due_at.set(due.due_at)]
    if due.due_shard is not None:
        actions.append(t.due_shard.set(due.due_shard))
    return actions


def _slot_actions(edit: TriggerEdit) -> list[Action]:
    t = TriggerModel
    actions: list[Action] = []
    if edit.sched_kind is not None:
        sched, kind = edit.sched_kind
        actions += [t.sched.set(sched), t.kind.set(kind)]
    if edit.next_fire_at is not None:
        # Keyed on the recomputed slot (a standing row's pointer goes): its claim stands
        # it again (``store/triggers.py``).
        actions += [t.next_fire_at.set(edit.next_fire_at), t.next_slot.remove()]
    if edit.due is not None:
        actions += _due_actions(edit.due)
    return actions


def _edit_actions(edit: TriggerEdit) -> list[Action]:
    t = TriggerModel
    actions: list[Action] = []
    if edit.outbound_secret_sealed is not None:
        actions.append(t.outbound_secret_sealed.set(edit.outbound_secret_sealed))
    actions += [
        t.spec.set(edit.spec),
        t.workflow.set(edit.workflow),
        t.updated_ms.set(edit.now_ms),
        t.version.add(1),
    ]
    return actions + _status_actions(edit) + _slot_actions(edit)


def _edit_condition(edit: TriggerEdit) -> Any:
    t = TriggerModel
    condition = t.version == edit.expected_version
    if edit.fence_slot:
        # The slot read, in whichever form the item was (keyed or standing).
        expected = edit.expected_next_fire_at
        condition &= (
            (t.next_fire_at == expected) | (t.next_slot == expected)
            if expected is not None
            else t.next_fire_at.does_not_exist() & t.next_slot.does_not_exist()
        )
    if edit.expected_in_flight is not None:
        condition &= size(t.in_flight) == edit.expected_in_flight
    return condition


def _write_with_state(
    trigger_id: str, actions: list[Action], condition: Any, state: StateEdit
) -> str:
    state_item = StateModel(
        trigger_id, state=_compact(state.state), version=state.expected_version + 1
    )
    state_condition = (
        StateModel.trigger_id.does_not_exist()
        if state.expected_version == 0
        else StateModel.version == state.expected_version
    )
    connection = transaction_connection()
    try:
        with TransactWrite(connection=connection) as tx:
            tx.update(TriggerModel(trigger_id), actions=actions, condition=condition)
            tx.save(state_item, condition=state_condition)
    except TransactWriteError as exc:
        if not transaction_cancelled(exc):
            raise
        # Which condition failed? Ask the items rather than the cancellation reasons:
        # moto lists the reasons in table-name order, DynamoDB in request order.
        if get_state(trigger_id)[1] != state.expected_version:
            return EditOutcome.STATE_RACED
        return EditOutcome.RACED
    return EditOutcome.WRITTEN


def write_edit(
    trigger_id: str, edit: TriggerEdit, state: StateEdit | None = None
) -> tuple[str, Trigger | None]:
    """Write one PATCH: an ``EditOutcome``, and the trigger as written when it is known.

    Without a state, one conditional UpdateItem (it answers the item as written); with
    one, a transaction of the update and the state's compare-and-set (it answers no item:
    read it again).
    """
    actions = _edit_actions(edit)
    condition = _edit_condition(edit)
    if state is not None:
        return _write_with_state(trigger_id, actions, condition, state), None
    item = TriggerModel(trigger_id)
    try:
        item.update(actions=actions, condition=condition)
    except UpdateError as exc:
        if condition_failed(exc):
            return EditOutcome.RACED, None
        raise
    return EditOutcome.WRITTEN, trigger_record(item)
