"""store/trigger_writes: the API's writes of a trigger, against the moto server.

Each fence is driven to both answers: the write lands, or the race is reported (and the
item is left as it was).
"""

from __future__ import annotations

import pytest

from chalicelib.services import triggers
from chalicelib.store import state as state_store
from chalicelib.store import trigger_reads, trigger_writes
from chalicelib.store import triggers as triggers_store
from chalicelib.store.conditions import condition_failed, transaction_cancelled
from chalicelib.store.trigger_writes import DueChange, EditOutcome, Slot, StateEdit, TriggerEdit


def _trigger(root, clock, **fields):
    body = {"workflow": "echo", "schedule": {"interval_s": 3600}, "state": {"n": 1}, **fields}
    return triggers_store.get_trigger(triggers.create_trigger(root, body, now=clock())["id"])


def _edit(item, **fields):
    base = {
        "expected_version": int(item.version),
        "spec": item.spec,
        "workflow": item.workflow,
        "now_ms": 5,
        "by": "key_test",
    }
    return TriggerEdit(**{**base, **fields})


def test_an_edit_on_the_version_read_is_written_and_answers_the_trigger_as_written(
    aws, root, clock
):
    item = _trigger(root, clock)
    outcome, written = trigger_writes.write_edit(item.id, _edit(item, workflow="noop"))
    assert outcome == EditOutcome.WRITTEN
    assert written is not None and (written.workflow, written.version) == ("noop", 2)
    assert item.workflow == "echo"  # the record read before is a value, not a handle
    assert triggers_store.get_trigger(item.id) == written


def test_an_edit_on_a_stale_version_is_a_race_and_writes_nothing(aws, root, clock):
    item = _trigger(root, clock)
    edit = _edit(item, workflow="noop", expected_version=int(item.version) + 1)
    assert trigger_writes.write_edit(item.id, edit) == (EditOutcome.RACED, None)
    assert triggers_store.get_trigger(item.id).workflow == "echo"


@pytest.mark.parametrize(("moved", "outcome"), [(False, "written"), (True, "raced")])
def test_the_slot_fence_fails_when_a_claim_moved_the_slot(aws, root, clock, moved, outcome):
    item = _trigger(root, clock)
    expected = int(item.next_fire_at) + (1 if moved else 0)
    edit = _edit(
        item,
        next_fire_at=expected + 60_000,
        due=DueChange(expected + 60_000, "0"),
        fence_slot=True,
        expected_next_fire_at=expected,
        expected_in_flight=0,
    )
    assert trigger_writes.write_edit(item.id, edit)[0] == outcome
    stored = triggers_store.get_trigger(item.id)
    assert int(stored.next_fire_at) == (int(item.next_fire_at) if moved else expected + 60_000)


def test_the_in_flight_fence_fails_when_a_run_was_claimed(aws, root, clock):
    item = _trigger(root, clock)
    edit = _edit(item, status="disabled", due=DueChange(None), expected_in_flight=1)
    assert trigger_writes.write_edit(item.id, edit) == (EditOutcome.RACED, None)
    assert triggers_store.get_trigger(item.id).status == "active"


def test_a_pause_edit_leaves_the_due_index_and_records_who(aws, root, clock):
    item = _trigger(root, clock)
    edit = _edit(item, status="disabled", due=DueChange(None), expected_in_flight=0)
    outcome, written = trigger_writes.write_edit(item.id, edit)
    stored = triggers_store.get_trigger(item.id)
    assert outcome == EditOutcome.WRITTEN and written == stored
    assert (stored.status, stored.disabled_reason, stored.disabled_by) == (
        "disabled",
        "manual",
        "key_test",
    )
    assert stored.due_at is None and stored.due_shard is None


def test_an_edit_with_state_is_one_transaction_and_reports_which_side_raced(aws, root, clock):
    item = _trigger(root, clock)
    _, version = state_store.get_state(item.id)
    stale_state = StateEdit({"n": 2}, expected_version=version + 1)
    assert trigger_writes.write_edit(item.id, _edit(item), stale_state) == (
        EditOutcome.STATE_RACED,
        None,
    )
    stale_item = _edit(item, expected_version=int(item.version) + 1)
    assert trigger_writes.write_edit(item.id, stale_item, StateEdit({"n": 2}, version)) == (
        EditOutcome.RACED,
        None,
    )
    assert state_store.get_state(item.id) == ({"n": 1}, version)  # neither wrote
    edit = _edit(item, workflow="noop")
    # A transaction answers no item: the caller reads it again.
    assert trigger_writes.write_edit(item.id, edit, StateEdit({"n": 3}, version)) == (
        "written",
        None,
    )
    assert state_store.get_state(item.id) == ({"n": 3}, version + 1)
    assert triggers_store.get_trigger(item.id).workflow == "noop"


def test_pause_then_enable_clear_the_pause_and_key_the_slot(aws, root, clock):
    item = _trigger(root, clock)
    paused = trigger_writes.pause_trigger(
        item.id, by="key_a", now_ms=7, note="maintenance", manual=True
    )
    stored = triggers_store.get_trigger(item.id)
    assert paused == stored
    assert (stored.status, stored.disabled_note, stored.disabled_reason) == (
        "disabled",
        "maintenance",
        "manual",
    )
    slot = Slot(next_fire_at=10_000, due_at=9_000, due_shard="0")
    enabled = trigger_writes.enable_trigger(item.id, now_ms=8, slot=slot)
    stored = triggers_store.get_trigger(item.id)
    assert enabled == stored
    assert stored.status == "active" and stored.disabled_note is None
    assert (int(stored.next_fire_at), int(stored.due_at), stored.due_shard) == (10_000, 9_000, "0")


def test_insert_never_overwrites_and_delete_takes_the_state(aws, root, clock):
    item = _trigger(root, clock)
    with pytest.raises(Exception) as caught:
        trigger_writes.insert_trigger(item, state=None)
    assert condition_failed(caught.value) and not transaction_cancelled(caught.value)
    assert trigger_writes.delete_trigger(item.id) == item  # the trigger as it was removed
    assert trigger_writes.delete_trigger(item.id) is None  # another caller removed it first
    trigger_writes.delete_state(item.id)
    trigger_writes.delete_state(item.id)  # already gone: no error
    assert triggers_store.get_trigger(item.id) is None and state_store.get_state(item.id) == ({}, 0)


def test_the_tenant_reads_find_only_the_tenants_triggers(aws, root, clock):
    ids = {_trigger(root, clock).id for _ in range(3)}
    assert set(trigger_reads.tenant_trigger_ids("local")) == ids
    assert trigger_reads.tenant_trigger_ids("other") == []
    assert {t.id for t in trigger_reads.get_triggers(ids)} == ids
    assert trigger_reads.get_triggers([]) == []
