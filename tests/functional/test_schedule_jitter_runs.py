"""Jitter on the fire path (moto server): a jittered slot runs at its fire_at, once, as the
slot's run (its id and scheduled_for), with fire_at reported and lateness measured from it.

Time is driven by hand: ``assembly.tick(now=...)`` and ``assembly.build_runner(clock=...)``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from chalicelib import assembly
from chalicelib.domain import schedule
from chalicelib.domain.codec import decode_schedule
from chalicelib.domain.ids import schedule_run_id
from chalicelib.services.runs import run_view
from chalicelib.store import triggers as triggers_store
from chalicelib.store.sqs import FireMessage
from tests.scenarios import EXECUTIONS, create_scheduled, runs_of

SLOT = datetime(2026, 12, 1, 9, tzinfo=UTC)
SLOT_MS = int(SLOT.timestamp() * 1000)


def _jittered_trigger(root, clock) -> tuple[str, int]:
    """A daily 09:00 trigger with up to an hour of jitter whose first fire_at is over 60 s
    after its slot (a jitter of under a minute is drawn 1 time in 60: try again)."""
    for _ in range(8):
        trigger_id = create_scheduled(root, clock, schedule={"cron": "0 9 * * *", "jitter_s": 3600})
        spec = decode_schedule(triggers_store.get_trigger(trigger_id).sched)
        fire_ms = schedule.fire_at_ms(trigger_id, SLOT_MS, spec)
        if fire_ms - SLOT_MS > 60_000:
            return trigger_id, fire_ms
        triggers_store.TriggerModel(trigger_id).delete()  # (the record has no delete)
    raise AssertionError("no jitter over a minute in 8 triggers")


def test_a_jittered_slot_waits_for_its_fire_at_and_runs_once_as_the_slots_run(aws, clock, root):
    trigger_id, fire_ms = _jittered_trigger(root, clock)
    runner = assembly.build_runner(clock=clock)
    clock.at = SLOT - timedelta(seconds=60)
    assembly.tick(now=clock())
    # Delivered at the slot itself (early: a delay over SQS's 900 s, a spare message), the
    # fire is not due yet: the message is sent on, nothing is claimed or run.
    clock.at = SLOT
    aws.purge_delays()
    (message,) = aws.receive()
    aws.delete([message])
    assert runner.handle(FireMessage.parse(message["Body"])) == "postponed"
    assert runs_of(trigger_id) == []
    assert triggers_store.next_slot_of(triggers_store.get_trigger(trigger_id)) == SLOT_MS
    # At its fire_at it runs, once, as the slot's run.
    clock.at = datetime.fromtimestamp(fire_ms / 1000, UTC)
    EXECUTIONS.clear()
    assert [s for s in aws.drain(runner) if s != "dropped"] == ["succeeded"]
    (run,) = runs_of(trigger_id)
    view = run_view(run)
    assert run.run_id == schedule_run_id(trigger_id, SLOT_MS)
    assert EXECUTIONS == {run.run_id: 1}
    assert view["scheduled_for"] == "2026-12-01T09:00:00.000Z"
    assert view["fire_at"] == clock().isoformat(timespec="milliseconds").replace("+00:00", "Z")
    assert view["lateness_ms"] == 0
    following = triggers_store.next_slot_of(triggers_store.get_trigger(trigger_id))
    assert following == SLOT_MS + 86_400_000


def _take_all(aws) -> list[str]:
    """Every message in the queue (delays ignored), taken off it; their bodies."""
    aws.purge_delays()
    taken = []
    while messages := aws.receive():
        taken += [m["Body"] for m in messages]
        aws.delete(messages)
        aws.purge_delays()
    return taken


def test_the_overdue_pass_counts_a_jittered_slot_late_from_its_fire_at(aws, clock, root):
    trigger_id, fire_ms = _jittered_trigger(root, clock)
    run_id = schedule_run_id(trigger_id, SLOT_MS)
    clock.at = SLOT - timedelta(seconds=60)
    assembly.tick(now=clock())
    assert any(run_id in body for body in _take_all(aws))
    # Past the slot by the overdue age, but not past its fire_at by it: not sent again.
    fire_at = datetime.fromtimestamp(fire_ms / 1000, UTC)
    clock.at = fire_at + timedelta(seconds=100)
    assembly.tick(now=clock())
    assert not any(run_id in body for body in _take_all(aws))
    # Two minutes after its fire_at the slot is still due: its message was lost, sent again.
    clock.at = fire_at + timedelta(seconds=125)
    assembly.tick(now=clock())
    assert any(run_id in body for body in _take_all(aws))
