"""Many heartbeats at once: each due slot is sent by one tick and runs once.

Soak-style: ticks released together on threads against the moto server, rounds after
rounds, with time driven by hand (each round is a tick at an explicit ``now``).
"""

from __future__ import annotations

import pytest

from chalicelib import assembly
from chalicelib.settings import reset_settings
from tests.scenarios import EXECUTIONS, create_scheduled, create_staggered, ticks_at_once


@pytest.mark.soak
def test_twenty_concurrent_heartbeats_dispatch_each_due_trigger_exactly_once(
    aws, clock, root, monkeypatch
):
    # One due shard, so each of the 20 heartbeats races on every trigger with one query.
    monkeypatch.setenv("CRONHOOK_DUE_SHARDS", "1")
    reset_settings()
    ids = [create_scheduled(root, clock, workflow="count-executions") for _ in range(5)]
    runner = assembly.build_runner(clock=clock)
    EXECUTIONS.clear()
    sent_all: list[str] = []
    for round_no in range(20):
        clock.advance(60)
        now = clock()
        reports = ticks_at_once(20, now=now)
        sent = [run_id for r in reports for run_id in r.run_ids]
        # The cursor is fenced: one of the 20 sends the window, the others nothing.
        assert sum(1 for r in reports if r.run_ids) == 1, f"round {round_no}"
        # Each window holds every trigger's slots up to now + 60 s (the first holds two).
        assert len(sent) == (10 if round_no == 0 else 5), f"round {round_no}: {sent}"
        assert sorted({c.split(".")[0] for c in sent}) == sorted(ids)
        sent_all += sent
        assert aws.drain(runner) == ["succeeded"] * 5
    assert len(sent_all) == len(set(sent_all)), "a slot was enqueued twice"
    assert len(EXECUTIONS) == 100
    assert set(EXECUTIONS.values()) == {1}


def test_concurrent_heartbeats_dispatch_each_slot_once(aws, clock, root, monkeypatch):
    monkeypatch.setenv("CRONHOOK_DUE_SHARDS", "1")
    reset_settings()
    ids = create_staggered(root, clock, 8)
    runner = assembly.build_runner(clock=clock)
    EXECUTIONS.clear()
    seen: list[str] = []
    for _round in range(5):
        clock.advance(120)
        reports = ticks_at_once(6, now=clock())
        sent = [run_id for r in reports for run_id in r.run_ids]
        assert len(sent) == len(set(sent)), sent
        seen += sent
        assert {c.split(".")[0] for c in sent} == set(ids)
        aws.drain(runner)
    assert len(seen) == len(set(seen)), "a slot was sent by two ticks"
    assert EXECUTIONS and set(EXECUTIONS.values()) == {1}
