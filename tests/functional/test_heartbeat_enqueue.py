"""The heartbeat's enqueue pass: no claims, a fenced cursor per shard, a tick deadline.

The heartbeat writes nothing per fire: it reads due rows and sends their slots in
``(cursor, now + lookahead]``. These tests check that every slot is sent once, most
urgent first, that concurrent ticks do not send a window twice, and that a tick that
runs out of time hands the rest over to the next one instead of dropping it.
"""

from __future__ import annotations

import itertools

import pytest

from chalicelib import assembly
from chalicelib.services.heartbeat import shards
from chalicelib.settings import reset_settings
from chalicelib.store import triggers
from chalicelib.store.sqs import FireMessage
from tests.scenarios import create_scheduled, create_staggered


def _queued(aws) -> list[FireMessage]:
    aws.purge_delays()
    messages = []
    while batch := aws.receive():
        messages += [FireMessage.parse(m["Body"]) for m in batch]
    return messages


def test_a_tick_enqueues_every_due_slot_once_most_urgent_first_and_claims_nothing(aws, clock, root):
    created = create_staggered(root, clock, 40)
    clock.advance(100)
    report = assembly.tick(now=clock())
    # Slots due by now + 60 s: the first slot of each, and a second one for the fastest.
    assert report.errors == 0
    assert {r.split(".")[0] for r in report.run_ids} == set(created)
    slots = [int(r.split(".")[1][:13]) for r in report.run_ids]
    for shard_slots in [slots]:  # sent most urgent first within each shard's window
        assert len(shard_slots) == len(set(report.run_ids))
    assert sorted(m.run_id for m in _queued(aws)) == sorted(report.run_ids)
    for trigger_id in created:
        assert triggers.in_flight_of(triggers.get_trigger(trigger_id)) == {}
    # The next tick at the same instant finds nothing new to send.
    again = assembly.tick(now=clock())
    assert (again.due, again.enqueued) == (0, 0)


def test_a_tick_out_of_time_hands_the_rest_to_the_next_tick_and_loses_nothing(
    aws, clock, root, monkeypatch
):
    monkeypatch.setenv("CRONHOOK_DUE_SHARDS", "1")
    reset_settings()
    created = create_staggered(root, clock, 30)
    # A clock for the deadline that moves one second per look: the tick reaches a few
    # rows within its budget, whatever the machine's load.
    seconds = itertools.count()
    monkeypatch.setattr(shards.time, "perf_counter", lambda: float(next(seconds)))
    monkeypatch.setattr(shards, "TICK_BUDGET_S", 8.0)
    clock.advance(150)
    sent: list[str] = []
    reports = []
    for _ in range(20):
        report = assembly.tick(now=clock())
        reports.append(report)
        sent += report.run_ids
        if not report.handed_over:
            break
    assert reports[0].handed_over == 1 and 0 < len(reports[0].run_ids) < 30
    assert len(sent) == len(set(sent))
    assert {r.split(".")[0] for r in sent} == set(created)  # every trigger's due slot went out


@pytest.mark.parametrize("cursor", ["fresh", "after-a-tick"])
def test_a_trigger_created_while_a_tick_runs_gets_its_first_slot_sent(
    aws, clock, root, monkeypatch, cursor
):
    """A create that lands in the middle of a tick, just after it read the due rows.

    The tick did not see the new row. Had it moved the cursor only after reading (past
    the new slot), the create, reading the cursor before that move, would have left the
    slot to the tick, and it would have waited for the overdue pass two minutes later
    (seen in the local stack: a trigger created at start-up did not fire for 120 s). The
    tick moves the cursor first, so the create sees the window taken and sends it.
    """
    monkeypatch.setenv("CRONHOOK_DUE_SHARDS", "1")  # every row on shard 0, read first
    reset_settings()
    if cursor == "after-a-tick":
        assembly.tick(now=clock())
        clock.advance(30)
    created: list[str] = []
    real = triggers.iter_due

    def read_then_create(shard, **kwargs):
        yield from real(shard, **kwargs)
        if not created:  # the create lands after the tick read the rows of its shard
            created.append(create_scheduled(root, clock, schedule={"interval_s": 60}))

    monkeypatch.setattr(triggers, "iter_due", read_then_create)
    assembly.tick(now=clock())
    monkeypatch.setattr(triggers, "iter_due", real)
    assert created
    first = triggers.next_slot_of(triggers.get_trigger(created[0]))
    clock.advance(60)
    ran = aws.drain(assembly.build_runner(clock=clock))
    assert ran.count("succeeded") == 1
    assert triggers.get_trigger(created[0]).run_count == 1
    assert triggers.next_slot_of(triggers.get_trigger(created[0])) == first + 60_000
