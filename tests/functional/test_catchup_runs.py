"""Catch-up after downtime and ``overlap: buffer_all`` on the fire path (moto server).

An hourly trigger runs its 13:00 slot; then nothing runs until 16:30 (the stack down:
no tick, no runner). The first tick after the gap sends the first missed slot, and what
runs and what is recorded ``missed`` is the mode's (domain/catchup.py). Time is driven by
hand: ``assembly.tick(now=...)`` and ``assembly.build_runner(clock=...)``.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from chalicelib import assembly
from chalicelib.services.heartbeat.reaper import reap_expired
from chalicelib.services.runner.claim import claim_scheduled
from chalicelib.services.runner.settle import pull_slot
from chalicelib.store import triggers
from chalicelib.store.sqs import FireMessage
from tests.scenarios import EXECUTIONS, create_scheduled, runs_of

HOUR_MS = 3_600_000


def at(hh: int, mm: int = 0) -> datetime:
    return datetime(2026, 11, 30, hh, mm, tzinfo=UTC)


def history(trigger_id: str) -> list[tuple[str, str]]:
    """(slot HH:MM, status) of every run record, oldest slot first."""
    runs = sorted(runs_of(trigger_id), key=lambda r: int(r.scheduled_for or 0))
    return [
        (datetime.fromtimestamp(int(r.scheduled_for) / 1000, UTC).strftime("%H:%M"), r.status)
        for r in runs
    ]


def after_downtime(aws, clock, root, schedule: dict, **body) -> str:
    """The trigger, its 13:00 slot run, then a gap to 16:30 and the queue drained."""
    trigger_id = create_scheduled(root, clock, schedule=schedule, **body)
    runner = assembly.build_runner(clock=clock)
    clock.at = at(12, 59)
    assembly.tick(now=clock())
    clock.at = at(13)
    assert [s for s in aws.drain(runner) if s != "dropped"] == ["succeeded"]
    clock.at = at(16, 30)  # 14:00, 15:00 and 16:00 passed while nothing ran
    EXECUTIONS.clear()
    assembly.tick(now=clock())
    aws.drain(runner)
    return trigger_id


@pytest.mark.parametrize(
    ("catchup", "expected", "executions"),
    [
        (None, [("14:00", "succeeded"), ("15:00", "missed"), ("16:00", "missed")], 1),
        ({"mode": "latest"}, [("14:00", "succeeded"), ("15:00", "missed"), ("16:00", "missed")], 1),
        ({"mode": "none"}, [("14:00", "missed"), ("15:00", "missed"), ("16:00", "missed")], 0),
        (
            {"mode": "all"},
            [("14:00", "succeeded"), ("15:00", "succeeded"), ("16:00", "succeeded")],
            3,
        ),
        (
            {"mode": "all", "window_s": 5400},  # from 15:00 on
            [("14:00", "missed"), ("15:00", "succeeded"), ("16:00", "succeeded")],
            2,
        ),
    ],
)
def test_each_catchup_mode_runs_and_records_the_missed_slots_as_the_contract_says(
    aws, clock, root, catchup, expected, executions
):
    schedule = {"cron": "0 * * * *", **({"catchup": catchup} if catchup else {})}
    trigger_id = after_downtime(aws, clock, root, schedule)
    assert history(trigger_id) == [("13:00", "succeeded"), *expected]
    assert sum(EXECUTIONS.values()) == executions
    assert all(n == 1 for n in EXECUTIONS.values())
    item = triggers.get_trigger(trigger_id)
    assert triggers.next_slot_of(item) == int(at(17).timestamp() * 1000)
    assert item.run_count == 1 + executions


def test_buffer_all_runs_every_slot_that_came_due_while_a_run_held_the_trigger(aws, clock, root):
    trigger_id = create_scheduled(
        root, clock, schedule={"cron": "*/10 * * * *"}, overlap="buffer_all"
    )
    runner = assembly.build_runner(clock=clock)
    clock.at = at(12, 9)
    assembly.tick(now=clock())
    # The 12:10 run is claimed and started by the runner's own claim, and holds the
    # trigger (a slow workflow: it has not settled when the next slots come due).
    clock.at = at(12, 10)
    aws.purge_delays(clock())
    (message,) = aws.receive()
    aws.delete([message])
    lease_ms = int(at(12, 35).timestamp() * 1000)
    held = claim_scheduled(
        FireMessage.parse(message["Body"]), lease_ms=lease_ms, now=clock(), pipeline=runner.pipeline
    )
    assert not isinstance(held, str)
    EXECUTIONS.clear()
    # 12:20 and 12:30 come due while it holds the trigger: they wait; none is skipped.
    for minute in (19, 29):
        clock.at = at(12, minute)
        assembly.tick(now=clock())
        clock.at = at(12, minute + 1)
        assert set(aws.drain(runner)) <= {"buffered", "dropped"}
    assert history(trigger_id) == []
    # The held run dies (reaped at its lease), and the waiting slots run in turn.
    clock.at = at(12, 36)
    reap_expired(triggers.get_trigger(trigger_id), now=clock(), pipeline=runner.pipeline)
    pull_slot(triggers.get_trigger(trigger_id), override_ms=None, now=clock())
    statuses = [s for s in aws.drain(runner) if s not in ("dropped", "buffered")]
    assert statuses == ["succeeded", "succeeded"]
    assert history(trigger_id) == [
        ("12:10", "lost"),
        ("12:20", "succeeded"),
        ("12:30", "succeeded"),
    ]
    assert sum(EXECUTIONS.values()) == 2
    following = triggers.next_slot_of(triggers.get_trigger(trigger_id))
    assert following == int(at(12, 40).timestamp() * 1000)


def test_without_buffer_all_a_slot_due_while_a_run_holds_the_trigger_is_skipped(aws, clock, root):
    trigger_id = create_scheduled(root, clock, schedule={"cron": "*/10 * * * *"})
    runner = assembly.build_runner(clock=clock)
    clock.at = at(12, 9)
    assembly.tick(now=clock())
    clock.at = at(12, 10)
    aws.purge_delays(clock())
    (message,) = aws.receive()
    aws.delete([message])
    lease_ms = int(at(12, 35).timestamp() * 1000)
    claim_scheduled(
        FireMessage.parse(message["Body"]), lease_ms=lease_ms, now=clock(), pipeline=runner.pipeline
    )
    clock.at = at(12, 19)
    assembly.tick(now=clock())
    clock.at = at(12, 20)
    assert "skipped" in aws.drain(runner)
    assert history(trigger_id) == [("12:20", "skipped")]
