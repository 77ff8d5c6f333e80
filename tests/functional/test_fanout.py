"""The heartbeat's fan-out: one tick message per due shard, an enqueuer per message.

On the moto server, time driven by hand: the heartbeat ticks at an explicit ``now`` and
sends its shards to the tick queue; each enqueuer takes a message with an explicit
clock (``assembly.tick_messages``). Duplicated, concurrent, late, stale, lost and unsent
tick messages never run a slot twice nor leave one behind.
"""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from chalicelib import assembly
from chalicelib.domain.epoch_ms import dt, ms
from chalicelib.observability import metric_counts
from chalicelib.settings import reset_settings
from chalicelib.store import triggers as triggers_store
from chalicelib.store.aws import client
from tests.functional.test_shard_registry import _assert_every_slot_once, _create
from tests.scenarios import EXECUTIONS

SHARDS = 4
STEP_S = 120  # each interval is at least this: every slot is due at a tick of its own
PERIOD_S = 60  # the heartbeat's period and lookahead (CRONHOOK_HEARTBEAT_S)


@pytest.fixture
def ticks(aws, monkeypatch):
    """The tick queue, fan-out on from one shard up, four due shards; the queue's URL."""
    url = client("sqs").create_queue(QueueName="cronhook-ticks")["QueueUrl"]
    monkeypatch.setenv("CRONHOOK_TICK_QUEUE_URL", url)
    monkeypatch.setenv("CRONHOOK_FANOUT_SHARDS", "1")
    monkeypatch.setenv("CRONHOOK_DUE_SHARDS", str(SHARDS))
    reset_settings()
    EXECUTIONS.clear()
    return url


def _take(url: str) -> list[str]:
    """Every tick message queued (received and deleted): their bodies."""
    sqs = client("sqs")
    bodies = []
    while got := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        bodies += [m["Body"] for m in got]
        sqs.delete_message_batch(
            QueueUrl=url,
            Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)
            ],
        )
    return bodies


def _enqueue(body: str, at) -> list:
    """One enqueuer invocation for ``body``, received at ``at``: its reports."""
    return assembly.tick_messages([body], clock=lambda: at, remaining_s=lambda: 60.0)


def _at_once(bodies: list[str], at) -> list:
    """Each body handled by its own enqueuer, all released together on threads."""
    reports: list = []
    barrier = threading.Barrier(len(bodies))

    def enqueuer(body: str) -> None:
        barrier.wait()
        reports.extend(_enqueue(body, at))

    threads = [threading.Thread(target=enqueuer, args=(b,)) for b in bodies]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    return reports


def _shard_of(body: str) -> int:
    from chalicelib.store.ticks import TickMessage

    return TickMessage.parse(body).shard_no


def test_fanned_out_ticks_fire_every_slot_once_with_duplicated_and_concurrent_messages(
    aws, clock, root, ticks
):
    made = _create(root, clock, SHARDS)
    runner = assembly.build_runner(clock=clock)
    sent: list[str] = []
    for _round in range(4):
        clock.advance(STEP_S)
        report = assembly.tick(now=clock())
        # The heartbeat read no shard itself: it sent one message per shard.
        assert (report.errors, report.fanned_out, report.rows_read) == (0, SHARDS, 0)
        bodies = _take(ticks)
        assert sorted(map(_shard_of, bodies)) == list(range(SHARDS))
        # Each message delivered twice at once, and once more a little later (SQS delivers
        # at least once): the fenced cursor lets one of them send the window.
        reports = _at_once(bodies + bodies, clock())
        reports += [r for b in bodies for r in _enqueue(b, clock() + timedelta(seconds=5))]
        assert all(r is not None and r.errors == 0 for r in reports)
        sent += [run_id for r in reports for run_id in r.run_ids]
        aws.drain(runner)
    assert sent and len(sent) == len(set(sent)), "a slot was sent twice"
    _assert_every_slot_once(made, until_ms=ms(clock()))


def test_a_tick_message_older_than_a_tick_period_is_dropped_and_the_next_tick_reads_its_shard(
    aws, clock, root, ticks
):
    made = _create(root, clock, SHARDS)
    runner = assembly.build_runner(clock=clock)
    clock.advance(STEP_S)
    assembly.tick(now=clock())
    # The enqueuers took these more than a tick period (60 s) after the tick: dropped.
    stale = [_enqueue(b, clock() + timedelta(seconds=61)) for b in _take(ticks)]
    assert stale == [[None]] * SHARDS
    assert metric_counts("TicksDropped") == {(("reason", "stale"),): SHARDS}
    assert not aws.receive(), "a dropped tick message sent fires"
    # The cursors did not move: the next tick's messages (a tick period later) send both
    # windows, the slots due meanwhile late (by less than a period: none is merged away).
    sent: list[str] = []
    for _round in range(5):
        clock.advance(PERIOD_S)
        assembly.tick(now=clock())
        sent += [run_id for b in _take(ticks) for r in _enqueue(b, clock()) for run_id in r.run_ids]
        aws.drain(runner)
    assert len(sent) == len(set(sent))
    _assert_every_slot_once(made, until_ms=ms(clock()))


def test_a_late_tick_message_counts_its_delays_from_when_it_sends(aws, clock, root, ticks):
    """Taken 30 s after the tick, a slot 45 s after the tick waits at most 15 s, not 45."""
    from chalicelib.services import triggers

    created = triggers.create_trigger(
        root, {"workflow": "count-executions", "schedule": {"interval_s": 600}}, now=clock()
    )
    slot_ms = int(triggers_store.get_trigger(created["id"]).next_fire_at)
    tick_at = dt(slot_ms - 45_000)
    clock.at = tick_at
    assembly.tick(now=tick_at)
    entries: list[dict] = []

    def hook(params, **kwargs):
        entries.extend(params.get("Entries", []))

    events = client("sqs").meta.events
    events.register("provide-client-params.sqs.SendMessageBatch", hook)
    try:
        reports = [r for b in _take(ticks) for r in _enqueue(b, tick_at + timedelta(seconds=30))]
    finally:
        events.unregister("provide-client-params.sqs.SendMessageBatch", hook)
    assert sum(len(r.run_ids) for r in reports) == 1
    (entry,) = entries
    assert 0 <= entry["DelaySeconds"] <= 15, entry


def test_a_lost_tick_message_leaves_its_shard_to_the_next_tick(aws, clock, root, ticks):
    made = _create(root, clock, SHARDS)
    runner = assembly.build_runner(clock=clock)
    clock.advance(STEP_S)
    assembly.tick(now=clock())
    bodies = _take(ticks)
    lost = bodies[0]  # the enqueuer that took it crashed before reading anything
    for body in bodies[1:]:
        _enqueue(body, clock())
    aws.drain(runner)
    late_shard = str(_shard_of(lost))
    waiting = [t for t in made if triggers_store.get_trigger(t).due_shard == late_shard]
    assert waiting and not any(f.startswith(tuple(waiting)) for f in EXECUTIONS)
    # The next tick, a tick period later, reads that shard from where its cursor stayed.
    sent: list[str] = []
    for _round in range(5):
        clock.advance(PERIOD_S)
        assembly.tick(now=clock())
        sent += [run_id for b in _take(ticks) for r in _enqueue(b, clock()) for run_id in r.run_ids]
        aws.drain(runner)
    assert len(sent) == len(set(sent))
    _assert_every_slot_once(made, until_ms=ms(clock()))


def _fail_entry_one(tick_url: str):
    """Hooks on SendMessageBatch: to the tick queue, entry "1" is not sent and is reported
    ``Failed`` (as SQS reports an entry it could not take); the others are sent."""

    def strip(params, context, **_):
        if params.get("QueueUrl") == tick_url:
            params["Entries"] = [e for e in params["Entries"] if e["Id"] != "1"]
            context["fail_entry"] = True

    def report(parsed, context, **_):
        if context.pop("fail_entry", False):
            failed = {"Id": "1", "SenderFault": False, "Code": "InternalError"}
            parsed.setdefault("Failed", []).append(failed)

    return [
        ("provide-client-params.sqs.SendMessageBatch", strip),
        ("after-call.sqs.SendMessageBatch", report),
    ]


def test_a_shard_whose_tick_message_was_not_sent_is_read_by_the_heartbeat_itself(
    aws, clock, root, ticks
):
    made = _create(root, clock, SHARDS)
    runner = assembly.build_runner(clock=clock)
    events = client("sqs").meta.events
    hooks = _fail_entry_one(ticks)
    sent: list[str] = []
    for _round in range(3):
        clock.advance(STEP_S)
        for name, hook in hooks:
            events.register(name, hook)
        try:
            report = assembly.tick(now=clock())
        finally:
            for name, hook in hooks:
                events.unregister(name, hook)
        # Shard 1's message failed: the heartbeat read it inline, the others went out.
        assert report.fanned_out == SHARDS - 1 and report.rows_read > 0
        bodies = _take(ticks)
        assert sorted(map(_shard_of, bodies)) == [0, 2, 3]
        sent += report.run_ids
        sent += [run_id for b in bodies for r in _enqueue(b, clock()) for run_id in r.run_ids]
        aws.drain(runner)
    assert metric_counts("TickSendFailed") == {(): 3}
    assert len(sent) == len(set(sent))
    _assert_every_slot_once(made, until_ms=ms(clock()))


def test_below_the_threshold_or_without_a_tick_queue_the_heartbeat_reads_every_shard(
    aws, clock, root, ticks, monkeypatch
):
    made = _create(root, clock, SHARDS)
    clock.advance(STEP_S)
    monkeypatch.setenv("CRONHOOK_FANOUT_SHARDS", str(SHARDS + 1))
    reset_settings()
    report = assembly.tick(now=clock())
    assert report.fanned_out == 0 and report.due > 0  # the heartbeat read the shards itself
    assert _take(ticks) == []
    monkeypatch.setenv("CRONHOOK_FANOUT_SHARDS", "1")
    monkeypatch.delenv("CRONHOOK_TICK_QUEUE_URL")
    reset_settings()
    clock.advance(STEP_S)
    report = assembly.tick(now=clock())
    assert report.fanned_out == 0 and report.due > 0
    assert {r.split(".")[0] for r in report.run_ids} <= set(made)


def test_a_malformed_tick_message_is_dropped(aws, clock, ticks):
    for body in ("", "{}", '{"shard": -1, "now": 1}', '{"shard": "0", "now": 1}', "[1]"):
        assert _enqueue(body, clock()) == [None]
    assert metric_counts("TicksDropped") == {(("reason", "malformed"),): 5}
