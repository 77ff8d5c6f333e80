"""Changing the due shard count loses nothing: the shard registry (``store.shard_registry``).

Triggers created under one ``CRONHOOK_DUE_SHARDS``, the stack restarted (settings reset)
under another: every slot still fires exactly once, the rows on old shards fire and are
re-keyed by their claim, and the old shards retire once found empty. Time is driven by
hand (explicit ``now``), on the moto server.
"""

from __future__ import annotations

import pytest

from chalicelib import assembly
from chalicelib.services import triggers
from chalicelib.settings import reset_settings
from chalicelib.store import kms, shard_registry
from chalicelib.store import triggers as triggers_store
from chalicelib.store.aws import client
from chalicelib.store.events import EventModel
from chalicelib.store.triggers import TriggerModel
from tests.scenarios import COUNTING, EXECUTIONS, accept, ticks_at_once, webhook_trigger

# Each at least the test's step (120 s), so every slot is due at a tick of its own.
INTERVALS = [120, 121, 127, 150, 180, 240]
GRACE_S = 360


@pytest.fixture(autouse=True)
def _short_grace(monkeypatch):
    monkeypatch.setattr(shard_registry, "RETIRE_GRACE_S", GRACE_S)


def _shards(monkeypatch, count: int) -> None:
    monkeypatch.setenv("CRONHOOK_DUE_SHARDS", str(count))
    reset_settings()


def _create(root, clock, shards: int) -> dict[str, int]:
    """At least 12 triggers, until every one of ``shards`` holds one."""
    made: dict[str, int] = {}
    while len(made) < 12 or {triggers_store.shard_of(t, shards) for t in made} != set(
        map(str, range(shards))
    ):
        interval = INTERVALS[len(made) % len(INTERVALS)]
        body = {"workflow": COUNTING, "schedule": {"interval_s": interval}}
        made[triggers.create_trigger(root, body, now=clock())["id"]] = interval
    return made


def _slots_fired() -> dict[str, list[int]]:
    fired: dict[str, list[int]] = {}
    for fire_id in EXECUTIONS:
        trigger_id, _, rest = fire_id.partition(".")
        fired.setdefault(trigger_id, []).append(int(rest[:13]))
    return {k: sorted(v) for k, v in fired.items()}


def _assert_every_slot_once(made: dict[str, int], *, until_ms: int) -> None:
    """Each trigger fired each of its slots once, none skipped, up to about ``until_ms``."""
    assert EXECUTIONS and set(EXECUTIONS.values()) == {1}, EXECUTIONS
    fired = _slots_fired()
    assert set(fired) == set(made)
    for trigger_id, interval in made.items():
        slots = fired[trigger_id]
        gaps = {b - a for a, b in zip(slots, slots[1:], strict=False)}
        assert gaps <= {interval * 1000}, (trigger_id, slots)  # no slot skipped
        assert slots[-1] > until_ms - 2 * interval * 1000  # and none left behind


def _run(aws, clock, runner, rounds: int, *, step_s: int = 120, at_once: int = 1) -> list[str]:
    sent: list[str] = []
    for _round in range(rounds):
        clock.advance(step_s)
        if at_once > 1:
            reports = ticks_at_once(at_once, now=clock())
        else:
            reports = [assembly.tick(now=clock())]
        assert all(r.errors == 0 for r in reports)
        sent += [run_id for r in reports for run_id in r.run_ids]
        aws.drain(runner)
    return sent


def _no_registry() -> None:
    """As on a stack no tick ever recorded its shards (the ``aws`` fixture records them)."""
    client("dynamodb").delete_item(
        TableName=TriggerModel.Meta.table_name, Key={"id": {"S": "#shards"}}
    )


def _change(aws, clock, root, monkeypatch, *, before: int, after: int, at_once: int = 1):
    _shards(monkeypatch, before)
    made = _create(root, clock, before)
    held = {triggers_store.get_trigger(t).due_shard for t in made}
    assert len(held) == before  # the fleet sits on every shard of the first count
    runner = assembly.build_runner(clock=clock)
    EXECUTIONS.clear()
    sent = _run(aws, clock, runner, 2)
    assert shard_registry.read().in_use == max(before, shard_registry.LEGACY_SHARDS)
    _shards(monkeypatch, after)  # the restart under the new count
    runner = assembly.build_runner(clock=clock)
    sent += _run(aws, clock, runner, 3, at_once=at_once)
    return made, runner, sent


def test_a_lowered_shard_count_fires_every_slot_once_and_retires_the_old_shards(
    aws, clock, root, monkeypatch
):
    """Two heartbeats at once on every tick after the change: no slot is sent twice."""
    at_once = 2
    made, runner, sent = _change(aws, clock, root, monkeypatch, before=8, after=2, at_once=at_once)
    # The old shards are read until their rows have fired and been re-keyed.
    assert shard_registry.read().in_use == 8
    assert {triggers_store.get_trigger(t).due_shard for t in made} <= {"0", "1"}
    # Found empty, they retire once they stayed empty for the grace.
    steps = GRACE_S // 120 + 2
    sent += _run(aws, clock, runner, steps, at_once=at_once)
    assert shard_registry.read().in_use == 2
    assert shard_registry.shards_to_read(2) == range(2)
    sent += _run(aws, clock, runner, 2, at_once=at_once)
    assert len(sent) == len(set(sent)), "a slot was sent twice"
    _assert_every_slot_once(made, until_ms=int(clock().timestamp() * 1000))


def test_a_raised_shard_count_fires_every_slot_once(aws, clock, root, monkeypatch):
    made, runner, sent = _change(aws, clock, root, monkeypatch, before=2, after=8)
    assert shard_registry.read().in_use == 8
    sent += _run(aws, clock, runner, 3)
    expected = {t: triggers_store.shard_of(t, 8) for t in made}
    assert {
        t: triggers_store.get_trigger(t).due_shard for t in made
    } == expected  # re-keyed by claims
    _assert_every_slot_once(made, until_ms=int(clock().timestamp() * 1000))


def test_a_stack_that_ran_before_the_registry_keeps_its_ticked_shards(
    aws, clock, root, monkeypatch
):
    """Ticked under 8 shards by a heartbeat that wrote no registry, then lowered to 2."""
    _shards(monkeypatch, 8)
    made = _create(root, clock, 8)
    runner = assembly.build_runner(clock=clock)
    EXECUTIONS.clear()
    _run(aws, clock, runner, 1)
    _no_registry()
    _shards(monkeypatch, 2)
    _run(aws, clock, runner, 3)
    assert shard_registry.read().in_use == 8  # every shard with a cursor item
    _assert_every_slot_once(made, until_ms=int(clock().timestamp() * 1000))


def test_a_stack_never_ticked_takes_the_former_default_as_in_use(aws, clock, root, monkeypatch):
    _no_registry()
    _shards(monkeypatch, 2)
    assert shard_registry.begin_tick(2) == shard_registry.LEGACY_SHARDS == 4


def test_an_old_shard_holding_a_row_is_not_retired(aws, clock, root, monkeypatch):
    """A trigger whose next slot is far away keeps its old shard read until it fires."""
    _no_registry()
    _shards(monkeypatch, 8)
    made: list[str] = []
    while not made or triggers_store.shard_of(made[-1], 8) in ("0", "1"):
        body = {"workflow": COUNTING, "schedule": {"interval_s": 86400}}
        made.append(triggers.create_trigger(root, body, now=clock())["id"])
    far = made[-1]
    runner = assembly.build_runner(clock=clock)
    EXECUTIONS.clear()
    _shards(monkeypatch, 2)
    _run(aws, clock, runner, GRACE_S // 120 + 3)
    assert not EXECUTIONS  # not due yet, and still on its old shard
    assert shard_registry.read().in_use == int(triggers_store.shard_of(far, 8)) + 1
    clock.advance(86400)
    _run(aws, clock, runner, 1)
    assert sorted(k.partition(".")[0] for k in EXECUTIONS) == sorted(made)  # each once
    assert set(EXECUTIONS.values()) == {1}
    assert triggers_store.get_trigger(far).due_shard == triggers_store.shard_of(far, 2)  # re-keyed


def test_a_pending_event_on_an_old_shard_runs_once_and_holds_its_shard(
    aws,
    clock,
    root,
    monkeypatch,
    ran,
):
    """An event keyed under 8 shards whose message was lost: the sweep under 2 finds it."""
    kms.clear_cache()
    _shards(monkeypatch, 8)
    runner = assembly.build_runner(clock=clock)
    n = 0
    while True:  # one trigger per event: only the last one's queue holds an event
        event = EventModel.get(
            accept(webhook_trigger(root, clock), clock, n)["event_id"], consistent_read=True
        )
        if int(event.pending_shard) >= 2:
            break
        aws.drain(runner)  # an event on shard 0 or 1 runs
        n += 1
    assert sorted(ran) == list(range(n))
    assembly.tick(now=clock())  # the stack ran under 8 shards (the registry says so)
    aws.delete(aws.receive())  # the old shard's event's message is lost
    shard = int(event.pending_shard)
    _shards(monkeypatch, 2)
    runner = assembly.build_runner(clock=clock)
    clock.advance(5)
    assembly.tick(now=clock())
    aws.drain(runner)
    # Not swept yet (its message may still come), and its shard is held: it is pending.
    assert sorted(ran) == list(range(n))
    held = shard_registry.read()
    assert held.in_use > shard and (held.retire_to or held.in_use) > shard
    _run(aws, clock, runner, 1)  # past the sweep's grace: the sweep reads shard >= 2
    assert sorted(ran) == list(range(n + 1))  # it ran, once
    _run(aws, clock, runner, GRACE_S // 120 + 2)
    assert sorted(ran) == list(range(n + 1))
    assert shard_registry.read().in_use == 2  # ended, its shard retired


def test_a_tick_that_cannot_read_the_registry_fires_the_configured_shards_and_loses_nothing(
    aws, clock, root, monkeypatch
):
    """The registry read fails (throttled, a 500): that tick does not raise, it reads the
    configured shards only; the next tick reads the old ones too. Every slot once."""
    made, runner, _sent = _change(aws, clock, root, monkeypatch, before=8, after=2)
    real_read = shard_registry.read

    def unreadable():
        raise RuntimeError("registry unreachable (injected)")

    monkeypatch.setattr(shard_registry, "read", unreadable)
    clock.advance(120)
    report = assembly.tick(now=clock())
    assert report.errors == 1 and report.shards_read == 2
    aws.drain(runner)
    monkeypatch.setattr(shard_registry, "read", real_read)
    _run(aws, clock, runner, 3)
    assert len(EXECUTIONS) and set(EXECUTIONS.values()) == {1}
    _assert_every_slot_once(made, until_ms=int(clock().timestamp() * 1000))
