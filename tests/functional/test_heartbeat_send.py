"""The heartbeat's sends (services/heartbeat/send.py): a failed entry of a batch is sent
again; a message is sent within the look-ahead and delayed to its second.
"""

from __future__ import annotations

import json

import pytest

from chalicelib import assembly
from chalicelib.services import triggers
from chalicelib.settings import reset_settings
from chalicelib.store import triggers as triggers_store
from chalicelib.store.aws import client
from tests.scenarios import create_scheduled


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


def test_one_failed_send_in_a_batch_of_ten_leaves_nine_sent_and_fires_it_next_tick(
    aws, clock, root, monkeypatch
):
    monkeypatch.setenv("CRONHOOK_DUE_SHARDS", "1")
    reset_settings()
    # Keyed rows (a 20-minute interval does not stand): only the failed slot is sent again.
    ids = [create_scheduled(root, clock, schedule={"interval_s": 1200}) for _ in range(10)]
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
    clock.advance(1200)
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
    assert triggers_store.get_trigger(soon).in_flight == {}
    assert triggers_store.get_trigger(later).in_flight == {}
