"""A trigger's state item, and the stamp that lets a fire of a stateless trigger skip its read."""

from __future__ import annotations

from chalicelib.services import triggers
from chalicelib.store import state
from chalicelib.store import triggers as triggers_store
from chalicelib.store.state import StateModel


def _create(root, clock, **extra) -> str:
    body = {"workflow": "echo", "schedule": {"interval_s": 60}, **extra}
    return triggers.create_trigger(root, body, now=clock())["id"]


def _count_state_reads(monkeypatch) -> list[str]:
    reads: list[str] = []
    real = StateModel.get.__func__

    def counted(cls, key, *args, **kwargs):
        reads.append(key)
        return real(cls, key, *args, **kwargs)

    monkeypatch.setattr(StateModel, "get", classmethod(counted))
    return reads


def test_a_trigger_without_state_is_read_once_then_its_fires_skip_the_read(
    aws, clock, root, monkeypatch
):
    trigger_id = _create(root, clock)
    item = triggers_store.get_trigger(trigger_id)
    assert state.has_state(item)  # not known yet: read it
    reads = _count_state_reads(monkeypatch)
    assert state.state_of(item) == ({}, 0)
    assert reads == [trigger_id]
    stamped = triggers_store.get_trigger(trigger_id)
    assert not state.has_state(stamped)
    assert state.state_of(stamped) == ({}, 0)
    assert reads == [trigger_id]  # no second read


def test_a_trigger_created_with_state_is_read(aws, clock, root):
    trigger_id = _create(root, clock, state={"cursor": 3})
    item = triggers_store.get_trigger(trigger_id)
    assert state.has_state(item)
    assert state.state_of(item) == ({"cursor": 3}, 1)
    assert state.has_state(triggers_store.get_trigger(trigger_id))


def test_the_first_state_a_run_writes_removes_the_stamp(aws, clock, root):
    trigger_id = _create(root, clock)
    state.state_of(triggers_store.get_trigger(trigger_id))
    assert not state.has_state(triggers_store.get_trigger(trigger_id))
    assert state.write_state(trigger_id, {"seen": 1}, expected_version=0)
    item = triggers_store.get_trigger(trigger_id)
    assert state.has_state(item)
    assert state.state_of(item) == ({"seen": 1}, 1)
    assert state.write_state(trigger_id, {"seen": 2}, expected_version=1)
    assert state.get_state(trigger_id) == ({"seen": 2}, 2)


def test_a_state_set_by_an_edit_is_read_though_the_trigger_was_stamped(aws, clock, root):
    trigger_id = _create(root, clock)
    state.state_of(triggers_store.get_trigger(trigger_id))
    triggers.patch_trigger(root, trigger_id, {"state": {"cursor": 7}}, now=clock())
    item = triggers_store.get_trigger(trigger_id)
    assert state.has_state(item)  # the edit bumped the version the stamp names
    assert state.state_of(item) == ({"cursor": 7}, 1)


def test_no_stamp_when_a_state_was_written_after_the_read(aws, clock, root):
    trigger_id = _create(root, clock)
    item = triggers_store.get_trigger(trigger_id)
    assert state.get_state(trigger_id) == ({}, 0)  # a fire read no state...
    assert state.write_state(trigger_id, {"n": 1}, expected_version=0)  # ...another wrote one
    assert not state.mark_stateless(trigger_id, version=int(item.version))
    assert state.has_state(triggers_store.get_trigger(trigger_id))


def test_no_stamp_after_an_edit_since_the_read(aws, clock, root):
    trigger_id = _create(root, clock)
    item = triggers_store.get_trigger(trigger_id)
    triggers.patch_trigger(root, trigger_id, {"title": "renamed"}, now=clock())
    assert not state.mark_stateless(trigger_id, version=int(item.version))
    assert triggers_store.get_trigger(trigger_id).stateless_version is None


def test_two_first_writes_of_a_state_one_wins(aws, clock, root):
    trigger_id = _create(root, clock)
    assert state.write_state(trigger_id, {"by": "a"}, expected_version=0)
    assert not state.write_state(trigger_id, {"by": "b"}, expected_version=0)
    assert state.get_state(trigger_id) == ({"by": "a"}, 1)


def test_a_state_written_for_a_deleted_trigger_leaves_no_trigger_item(aws, clock, root):
    trigger_id = _create(root, clock)
    triggers.delete_trigger(root, trigger_id, now=clock())
    assert state.write_state(trigger_id, {"late": True}, expected_version=0)
    assert triggers_store.get_trigger(trigger_id) is None
