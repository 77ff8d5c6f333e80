"""Catch-up ``none`` after a restart of a fast interval trigger (moto server).

The claim of the first missed slot writes a ``missed`` record for it and for every slot
it passes before it moves the trigger past now (``claim._pass``: records first). That
takes a while, and the next slot's message, sent by the tick, can land meanwhile:
it finds the trigger still on the missed slot and is dropped. The pass must then send
the next slot's message itself, or the trigger waits on a slot nobody sends until the
overdue pass, whose claim is late again and passes again: it never runs.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from chalicelib import assembly
from chalicelib.domain.epoch_ms import ms
from chalicelib.services.runner.core import Runner
from chalicelib.settings import reset_settings
from chalicelib.store import cursors, shard_registry, triggers
from chalicelib.store.sqs import FireMessage
from tests.scenarios import EXECUTIONS, create_scheduled, runs_of

T0 = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def _forget_cursors() -> None:
    """A restart of the local stack forgets the heartbeat's cursors (the queue died)."""
    for shard in shard_registry.shards_to_read(4):
        cursor = cursors.get_cursor(str(shard))
        if cursor is not None:
            cursors.advance_cursor(str(shard), expected=cursor, cursor_ms=None)


def _at(clock_at: datetime):
    return lambda: clock_at


def test_catchup_none_after_a_restart_fires_the_slots_after_the_outage(
    aws, clock, root, monkeypatch
):
    monkeypatch.setenv("CRONHOOK_MIN_INTERVAL_S", "1")
    reset_settings()
    try:
        schedule = {"interval_s": 5, "catchup": {"mode": "none", "window_s": 60}}
        trigger_id = create_scheduled(root, clock, schedule=schedule)
        runner = assembly.build_runner(clock=clock)
        for _ in range(3):  # 12:00:05 ... 12:00:15 run
            assembly.tick(now=clock())
            clock.advance(5)
            aws.drain(runner)
        assert triggers.get_trigger(trigger_id).run_count == 3
        # The stack stops; the queue dies with it. It starts again 155 s later.
        aws.sqs().purge_queue(QueueUrl=aws.queue_url)
        clock.advance(155)  # 12:02:50: the slots 12:00:20 ... 12:02:50 were missed
        restart = clock()
        _forget_cursors()
        EXECUTIONS.clear()
        assembly.tick(now=restart)
        aws.purge_delays(restart + timedelta(seconds=5))
        messages = aws.receive()
        aws.delete(messages)
        fires = {m.scheduled_ms: m for m in (FireMessage.parse(m["Body"]) for m in messages)}
        missed_ms = ms(restart - timedelta(seconds=150))  # 12:00:20, the trigger's slot
        next_ms = ms(restart + timedelta(seconds=5))  # 12:02:55
        assert set(fires) == {missed_ms, next_ms}
        # The race, as a timeline:
        #   12:02:50.5  the missed slot's claim reads its clock (next slot: 12:02:55)
        #               and writes the 31 missed records...
        #   12:02:55    ...the 12:02:55 message lands: the trigger is still on 12:00:20,
        #               so it is dropped ("slot already run or moved")
        #   12:02:56    the claim moves the trigger to 12:02:55, whose message is gone
        late = Runner(pipeline=runner.pipeline, clock=_at(restart + timedelta(seconds=5)))
        assert late.handle(fires[next_ms]) == "dropped"
        early = Runner(pipeline=runner.pipeline, clock=_at(restart + timedelta(seconds=0.5)))
        assert early.handle(fires[missed_ms]) == "missed"
        # Then the stack runs on: a tick a minute, the queue drained every 5 s.
        clock.at = restart + timedelta(seconds=6)
        for n in range(36):
            if n % 12 == 0:
                assembly.tick(now=clock())
            aws.drain(runner)
            clock.advance(5)
        item = triggers.get_trigger(trigger_id)
        after = sorted(
            (int(r.scheduled_for), r.status)
            for r in runs_of(trigger_id)
            if int(r.scheduled_for) > ms(restart)
        )
        # Every slot from 12:02:55 on ran, in its time; none was passed as missed.
        expected = [(next_ms + 5000 * n, "succeeded") for n in range(len(after))]
        assert after == expected
        assert len(after) >= 30
        assert item.run_count == 3 + len(after)
        assert int(item.next_fire_at) > ms(clock()) - 5000
        assert all(n == 1 for n in EXECUTIONS.values())
    finally:
        monkeypatch.delenv("CRONHOOK_MIN_INTERVAL_S")
        reset_settings()
