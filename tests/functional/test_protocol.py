"""The fenced claim → start → settle protocol where it can break, on the moto server.

Time is driven by hand: ``assembly.tick(now=...)`` and ``assembly.build_runner(clock=...)``.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from chalicelib import assembly
from chalicelib.domain.epoch_ms import ms as _ms
from chalicelib.services import triggers
from chalicelib.settings import reset_settings
from chalicelib.store import dynamo
from chalicelib.store.aws import client
from chalicelib.store.sqs import FireMessage
from chalicelib.workflows import Result, workflow
from tests.scenarios import EXECUTIONS, create_scheduled


@pytest.fixture
def sent_entries():
    """Every SendMessageBatch entry the heartbeat makes (through a botocore hook)."""
    sent: list[dict] = []

    def hook(params, **kwargs):
        sent.extend(params.get("Entries", []))

    events = client("sqs").meta.events
    events.register("provide-client-params.sqs.SendMessageBatch", hook, unique_id="test-sent")
    yield sent
    events.unregister("provide-client-params.sqs.SendMessageBatch", unique_id="test-sent")


def test_a_duplicate_sqs_delivery_runs_once(aws, clock, root):
    trigger_id = create_scheduled(root, clock)
    clock.advance(60)
    assembly.tick(now=clock())
    aws.purge_delays(clock())
    (message,) = aws.receive()
    fire = FireMessage.parse(message["Body"])
    EXECUTIONS.clear()
    first = assembly.build_runner(clock=clock).handle(fire)
    second = assembly.build_runner(clock=clock).handle(fire)
    assert (first, second) == ("succeeded", "dropped")
    assert EXECUTIONS[fire.run_id] == 1
    assert dynamo.get_state(trigger_id)[0] == {"n": 1}


def _receive_slot(aws, trigger_id: str, slot_ms: int) -> tuple[FireMessage, dict]:
    """The queued message of one slot (the others are left in the queue)."""
    aws.purge_delays()
    for message in aws.receive(visibility=0):
        fire = FireMessage.parse(message["Body"])
        if fire.trigger_id == trigger_id and fire.scheduled_ms == slot_ms:
            return fire, message
    raise AssertionError(f"no message for slot {slot_ms}")


def test_a_runner_that_dies_between_start_and_settle_is_reaped_and_the_trigger_fires_again(
    aws, clock, root
):
    trigger_id = create_scheduled(root, clock)
    clock.advance(60)
    assembly.tick(now=clock())
    fire, message = _receive_slot(aws, trigger_id, _ms(clock()))
    lease_ms = _ms(clock() + timedelta(seconds=360))
    # The runner writes its claim (which starts the run), then its process dies.
    outcome, _ = dynamo.claim_slot_and_start(
        trigger_id,
        slot_ms=fire.scheduled_ms,
        sched=fire.sched,
        next_slot_ms=fire.scheduled_ms + 60_000,
        run_id=fire.run_id,
        lease_ms=lease_ms,
        capacity=1,
        shard=dynamo.shard_of(trigger_id, 4),
    )
    assert outcome == dynamo.ClaimResult.CLAIMED
    aws.delete([message])

    # While the lease is live, the next slot is skipped (overlap: skip), not run.
    clock.advance(60)
    assembly.tick(now=clock())
    assert aws.drain(assembly.build_runner(clock=clock)) == ["skipped"]

    # Past the lease: the dead run is reaped and recorded lost, the trigger fires again
    # (a spare message of a slot sent again after the gap is dropped).
    clock.advance(360)
    assembly.tick(now=clock())
    assert [s for s in aws.drain(assembly.build_runner(clock=clock)) if s != "dropped"] == [
        "succeeded"
    ]
    lost = triggers.get_run_view(root, fire.run_id)
    assert lost["status"] == "lost"
    assert "lease expired" in lost["error"]
    view = triggers.get_trigger_view(root, trigger_id)
    assert view["last_run"]["status"] == "succeeded"
    assert view["consecutive_failures"] == 0
    statuses = [r["status"] for r in triggers.list_trigger_runs(root, trigger_id, {})["items"]]
    assert sorted(statuses) == ["lost", "skipped", "succeeded"]


def test_one_failed_send_in_a_batch_of_ten_leaves_nine_sent_and_fires_it_next_tick(
    aws, clock, root, monkeypatch
):
    monkeypatch.setenv("CRONHOOK_DUE_SHARDS", "1")
    reset_settings()
    ids = [create_scheduled(root, clock, schedule={"interval_s": 120}) for _ in range(10)]
    sqs = client("sqs")
    real = sqs.send_message_batch
    failed_once: list[str] = []

    def flaky(**kwargs):
        entries = kwargs["Entries"]
        if failed_once:
            return real(**kwargs)
        victim, rest = entries[0], entries[1:]
        answer = real(**{**kwargs, "Entries": rest})
        failed_once.append(json.loads(victim["MessageBody"])["r"])
        answer.setdefault("Failed", []).append(
            {
                "Id": victim["Id"],
                "SenderFault": False,
                "Code": "InternalError",
                "Message": "injected",
            }
        )
        return answer

    monkeypatch.setattr(sqs, "send_message_batch", flaky)
    clock.advance(120)
    report = assembly.tick(now=clock())
    assert (report.due, report.enqueued, report.send_failed) == (10, 9, 1)
    runner = assembly.build_runner(clock=clock)
    assert aws.drain(runner) == ["succeeded"] * 9

    # The cursor went back before the failed slot: the next tick sends it again (same
    # run id). The nine that ran have moved on to their next slot, beyond the horizon.
    clock.advance(5)
    report = assembly.tick(now=clock())
    assert report.run_ids == failed_once
    assert aws.drain(runner) == ["succeeded"]
    for trigger_id in ids:
        runs = triggers.list_trigger_runs(root, trigger_id, {})["items"]
        assert [r["status"] for r in runs] == ["succeeded"]


def test_a_failed_run_never_leaks_its_claim(aws, clock, root):
    failing = create_scheduled(root, clock, workflow="fail")

    @workflow("bad-state")
    def bad_state(fire):
        return Result(state={"not json": object()})

    unserialisable = create_scheduled(root, clock, workflow="bad-state")
    runner = assembly.build_runner(clock=clock)
    for _ in range(3):
        clock.advance(60)
        assembly.tick(now=clock())
        assert aws.drain(runner) == ["failed", "failed"]
        for trigger_id in (failing, unserialisable):
            item = dynamo.get_trigger(trigger_id)
            assert dynamo.in_flight_of(item) == {}
    view = triggers.get_trigger_view(root, unserialisable)
    assert view["consecutive_failures"] == 3
    error = view["last_run"]["error"]
    assert "state not saved" in error or "state that is not JSON" in error, error


def test_after_three_hours_down_a_fifteen_minute_interval_fires_once(aws, clock, root):
    trigger_id = create_scheduled(root, clock, schedule={"interval_s": 900})
    clock.advance(3 * 3600 + 30)
    report = assembly.tick(now=clock())
    assert report.due == 1
    assert aws.drain(assembly.build_runner(clock=clock)) == ["succeeded"]
    item = dynamo.get_trigger(trigger_id)
    # The next slot is the first one after now, not one of the twelve missed.
    assert int(item.next_fire_at) == int((clock().timestamp() + 870) * 1000)
    report = assembly.tick(now=clock() + timedelta(seconds=1))
    assert report.due == 0


def test_heartbeat_enqueues_within_its_lookahead_and_delays_the_message_to_the_second(
    aws, clock, root, sent_entries
):
    sent = sent_entries
    soon = create_scheduled(root, clock, schedule={"interval_s": 90})  # first slot at +90 s
    later = create_scheduled(root, clock, schedule={"interval_s": 200})  # first slot at +200 s
    clock.advance(59.6)  # soon is 30.4 s ahead: inside the 60 s look-ahead; later is not
    report = assembly.tick(now=clock())
    assert report.run_ids == [f"{soon}.{int((clock().timestamp() + 30.4) * 1000):013d}s"]
    # Rounded down: the message lands up to 1 s early and the runner waits out the
    # fraction; counted from the send, so the time the tick took before it is taken off.
    (delay,) = [e["DelaySeconds"] for e in sent]
    assert 30.4 - report.duration_ms / 1000 - 1 <= delay <= 30
    # Nothing is claimed ahead of time: the runner claims when the fire is due.
    assert dynamo.get_trigger(soon).in_flight.as_dict() == {}
    assert dynamo.get_trigger(later).in_flight.as_dict() == {}


def test_a_message_that_lands_early_waits_out_the_fraction_and_starts_on_its_second(
    aws, clock, root
):
    trigger_id = create_scheduled(root, clock, schedule={"interval_s": 90})
    clock.advance(59.6)
    assembly.tick(now=clock())
    clock.advance(30)  # visible 0.4 s before the slot (DelaySeconds 30 rounded down)
    waited: list[float] = []

    def sleep(seconds: float) -> None:
        waited.append(seconds)
        clock.advance(seconds)

    assert aws.drain(assembly.build_runner(clock=clock, sleep=sleep)) == ["succeeded"]
    assert waited == [pytest.approx(0.4, abs=0.002)]
    (run,) = triggers.list_trigger_runs(root, trigger_id, {})["items"]
    assert run["lateness_ms"] == 0
    assert run["started_at"] == run["scheduled_for"]
