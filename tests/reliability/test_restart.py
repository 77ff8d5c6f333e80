"""Restart survival: a one-minute interval trigger across stops and restarts of the
heartbeat and the runners, time driven by hand.

Nothing of ours holds state between invocations, so a restart is: new Runner
instances, new AWS clients (a cold start), and whatever the crash did to the messages
in flight — lost, redelivered, or left behind by a runner that died between its start
fence and its settle.
"""

from __future__ import annotations

import threading

from chalicelib import assembly
from chalicelib.domain.epoch_ms import ms as _ms
from chalicelib.domain.ids import schedule_run_id
from chalicelib.services import triggers
from chalicelib.services.runner.claim import claim_slot
from chalicelib.settings import get_settings
from chalicelib.store import triggers as triggers_store
from chalicelib.store.sqs import FireMessage
from tests.scenarios import Esm, runs_of

MINUTE_S = 60


def _cold_start() -> None:
    """What a new process starts with: no cached clients or connections."""
    from chalicelib.store.aws import reset_clients
    from chalicelib.store.tables import ALL_MODELS

    reset_clients()
    for model in ALL_MODELS:
        model._connection = None


def _forget_cursors() -> None:
    """What a restart of the local stack does to the heartbeat's cursors and the standing
    rows (its queue is gone): ``local/restore.forget_queue``."""
    from devstack.restore import forget_queue

    forget_queue()


def _receive_one(aws, now) -> tuple[FireMessage, dict]:
    aws.purge_delays(now)
    messages = aws.receive(max_messages=1, visibility=0)
    assert len(messages) == 1, messages
    return FireMessage.parse(messages[0]["Body"]), messages[0]


def _lose_queued_messages(aws) -> None:
    """What a restart of the local stack does to its in-memory queue."""
    while True:
        aws.purge_delays()
        messages = aws.receive(visibility=0)
        if not messages:
            return
        aws.delete(messages)


def test_one_run_per_slot_across_restarts_crashes_lost_and_redelivered_messages(
    aws, clock, root, executions
):
    created = triggers.create_trigger(
        root,
        {"workflow": "count-executions", "schedule": {"interval_s": MINUTE_S}},
        now=clock(),
    )
    trigger_id = created["id"]
    start_ms = _ms(clock())
    lease_s = get_settings().lease_s
    runner = assembly.build_runner(clock=clock)
    esm = Esm(aws, runner)
    slots = 0

    def minute(*, drain: bool = True):
        nonlocal slots
        clock.advance(MINUTE_S)
        slots += 1
        report = assembly.tick(now=clock())
        if drain:
            esm.drain()
        return report

    # Minutes 1-2: normal fires.
    minute()
    minute()

    # Minute 3: a runner takes the message, passes its start fence and dies before
    # settling; the heartbeat and every runner restart.
    minute(drain=False)
    message, _ = _receive_one(aws, clock())
    assert claim_slot(
        message,
        lease_ms=_ms(clock()) + 360_000,
        now=clock(),
        pipeline=assembly.build_pipeline(),
    )
    _cold_start()
    runner = assembly.build_runner(clock=clock)
    esm = Esm(aws, runner)
    crashed_run = message.run_id

    # The message comes back after its visibility timeout: the new runner drops it at
    # the start fence. The next slots are skipped (overlap: skip) until the lease
    # expires and the heartbeat reaps the crashed run as lost.
    while True:
        item = triggers_store.get_trigger(trigger_id)
        if crashed_run not in triggers_store.in_flight_of(item):
            break
        minute()
        assert slots < 20, "the crashed run was never reaped"

    # Next minute: enqueued, then the process stops before the message is handled, and
    # the queue loses it (the local stack's queue is in memory). Nothing was claimed: the
    # restarted stack forgets the heartbeat's cursors (it knows its queue is gone), so
    # the next tick sends the slot again and it runs, late, with its lateness recorded.
    minute(drain=False)
    _lose_queued_messages(aws)
    _cold_start()
    _forget_cursors()
    runner = assembly.build_runner(clock=clock)
    esm = Esm(aws, runner)
    lost_message_run = schedule_run_id(trigger_id, start_ms + slots * MINUTE_S * 1000)
    for _ in range(lease_s // MINUTE_S + 1):
        minute()

    # Next minute: the message is delivered twice at once (two runner instances), and
    # once more after the first runner settled but died before deleting it.
    minute(drain=False)
    message, raw = _receive_one(aws, clock())
    barrier = threading.Barrier(2)
    twins: list[str] = []

    def deliver() -> None:
        runner_ = assembly.build_runner(clock=clock)
        barrier.wait()
        twins.append(runner_.handle(message))

    threads = [threading.Thread(target=deliver) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert sorted(twins) == ["dropped", "succeeded"]
    assert assembly.build_runner(clock=clock).handle(message) == "dropped"
    aws.delete([raw])  # its last copy; the next slot's message stays queued

    # And a few quiet minutes after all of that.
    for _ in range(3):
        minute()

    records = runs_of(trigger_id)
    by_slot = {int(r.scheduled_for): r for r in records}
    # The slot due when the lost one finally ran was merged into it (a late fire moves
    # the trigger past now: after downtime an interval trigger fires once); every other
    # slot has exactly one record.
    merged = int(lost_message_run.split(".")[1][:13]) + MINUTE_S * 1000
    expected = [
        slot
        for slot in (start_ms + n * MINUTE_S * 1000 for n in range(1, slots + 1))
        if slot != merged
    ]
    assert len(records) == len({r.run_id for r in records}), "a run id was recorded twice"
    assert sorted(by_slot) == expected, "every slot has exactly one run record"
    assert [r.run_id for r in records] == [schedule_run_id(trigger_id, s) for s in expected]
    assert all(n == 1 for n in executions.values()), executions
    statuses = {r.run_id: r.status for r in records}
    assert statuses[crashed_run] == "lost"
    assert statuses[lost_message_run] == "succeeded"  # late, not lost
    for r in records:
        if r.status != "succeeded":
            assert r.status in ("lost", "skipped") and r.error, (r.run_id, r.status, r.error)
    succeeded = [r.run_id for r in records if r.status == "succeeded"]
    assert sorted(executions) == sorted(succeeded)
    view = triggers.get_trigger_view(root, trigger_id)
    assert view["state"]["n"] == len(succeeded)
    assert view["status"] == "active"
    assert triggers_store.in_flight_of(triggers_store.get_trigger(trigger_id)) == {}


def test_after_downtime_an_interval_trigger_fires_once_not_once_per_missed_slot(
    aws, clock, root, executions, row_form
):
    created = triggers.create_trigger(
        root,
        {"workflow": "count-executions", "schedule": {"interval_s": MINUTE_S}},
        now=clock(),
    )
    runner = assembly.build_runner(clock=clock)
    clock.advance(MINUTE_S)
    assembly.tick(now=clock())
    Esm(aws, runner).drain()

    # Ten minutes without heartbeat or runners, then a cold start.
    clock.advance(10 * MINUTE_S)
    _cold_start()
    runner = assembly.build_runner(clock=clock)
    report = assembly.tick(now=clock())
    # The late slot (sent again: no tick ran while its window passed) and the next one:
    # keyed, the row's overdue slot; standing, the window's first missed slot, whose
    # message runs the row's pointer, the late slot.
    expected = (1, 1) if row_form == "keyed" else (0, 2)
    assert (report.overdue, report.due) == expected
    Esm(aws, runner).drain()
    clock.advance(MINUTE_S)
    assembly.tick(now=clock())
    Esm(aws, runner).drain()

    records = runs_of(created["id"])
    # Once, not once per missed slot: the nine slots the late one stood for are each
    # recorded missed (catchup: latest, the default), none run.
    assert [r.status for r in records if r.status != "missed"] == ["succeeded"] * 3
    assert sum(r.status == "missed" for r in records) == 9
    assert list(executions.values()) == [1, 1, 1]
    late = records[1]
    assert late.lateness_ms >= 9 * MINUTE_S * 1000  # the one fire for the downtime
