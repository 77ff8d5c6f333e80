"""The runner's time budget: a batch whose early workflows are slow hands its later messages
back to the queue un-started (batch item failures), and they run once when redelivered.

Lambda's context is a fake whose remaining time follows the test clock; the workflow
``slow`` moves the clock on as if it took ``SLOW_S`` seconds. Messages go through
``wiring.handle_sqs_batch`` (on one thread) in the shape Lambda's event source mapping
delivers them, and the test deletes what the batch answer says succeeded, as the mapping does.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest

from chalicelib import assembly, wiring
from chalicelib.observability import metric_counts
from chalicelib.services import events, triggers
from chalicelib.services.runner import START_MARGIN_S, start_margin_ms
from chalicelib.settings import reset_settings
from chalicelib.store import triggers as triggers_store
from chalicelib.store.aws import client
from chalicelib.store.runs import RunModel
from chalicelib.store.tables import ALL_MODELS
from chalicelib.workflows import REGISTRY, Fire, Result, Workflow
from devstack.stack import InvocationContext, _lambda_record
from tests.signing import signed_headers

TIMEOUT_S = 300  # the runner's Lambda timeout (settings default)
SLOW_S = 280  # what the first workflow of the batch takes: 20 s are left after it


class FakeContext:
    """Lambda's context: the remaining time of an invocation that started at ``clock()``."""

    def __init__(self, clock, timeout_s: float = TIMEOUT_S):
        self.clock = clock
        self.deadline: datetime = clock() + timedelta(seconds=timeout_s)
        self.calls = 0

    def get_remaining_time_in_millis(self) -> int:
        self.calls += 1
        return max(0, int((self.deadline - self.clock()).total_seconds() * 1000))


@pytest.fixture
def slow(monkeypatch, clock):
    """A workflow that takes SLOW_S seconds of the test clock; keeps the fire ids it ran."""
    ran: list[str] = []

    def run(fire: Fire) -> Result:
        ran.append(fire.fire_id)
        clock.advance(SLOW_S)
        return Result(state={"n": (fire.state or {}).get("n", 0) + 1})

    monkeypatch.setitem(REGISTRY, "slow", Workflow(name="slow", func=run))
    return ran


def poll(aws, context, runner, *, expect: int) -> tuple[dict, list[dict]]:
    """One poll of the event source mapping: receive, invoke, delete the successes.

    On one thread (``concurrency=1``): each message waits for the one before it, as the
    messages beyond the runner's threads do; the rule is about a message that waited.
    (A batch on a thread per message: ``test_runner_batch.py``.)
    """
    aws.purge_delays(runner.clock())
    messages = aws.receive()
    assert len(messages) == expect, [m["Body"] for m in messages]
    event = {"Records": [_lambda_record(m, aws.queue_url) for m in messages]}
    answer = wiring.handle_sqs_batch(event, context, runner=runner, concurrency=1)
    failed = {f["itemIdentifier"] for f in answer["batchItemFailures"]}
    aws.delete([m for m in messages if m["MessageId"] not in failed])
    return answer, messages


def snapshot(*, without: str | None = None) -> dict:
    """Every item of every table (as stored), except those that mention ``without``."""
    ddb = client("dynamodb")
    tables = {}
    for model in ALL_MODELS:
        items = ddb.scan(TableName=model.Meta.table_name, ConsistentRead=True)["Items"]
        rows = sorted(json.dumps(item, sort_keys=True) for item in items)
        tables[model.Meta.table_name] = [r for r in rows if not (without and without in r)]
    return tables


def three_fires(root, clock) -> dict[str, str]:
    """One of each surface: a scheduled slot, a manual fire and a webhook event.

    Returns {trigger_id: surface}; their three messages are on the queue.
    """
    # Hourly: one tick at its first slot sends that slot alone, and no later slot comes
    # due while the slow runs move the clock on.
    scheduled = triggers.create_trigger(
        root, {"workflow": "slow", "schedule": {"interval_s": 3600}}, now=clock()
    )
    manual = triggers.create_trigger(
        root, {"workflow": "slow", "schedule": {"cron": "0 8 1 1 *"}}, now=clock()
    )
    hooked = triggers.create_trigger(
        root, {"workflow": "slow", "event": {"source": "webhook"}}, now=clock()
    )
    clock.advance(3600)
    assert assembly.tick(now=clock()).due == 1
    triggers.fire_now(root, manual["id"], now=clock())
    body = json.dumps({"type": "job", "n": 1}).encode()
    headers = signed_headers("webhook", hooked["webhook"]["secret"], body, ts=0, delivery="d-1")
    status, _ = events.receive(
        hooked["webhook"]["url"].rsplit("/", 1)[1], body=body, headers=headers, now=clock()
    )
    assert status == 202
    return {scheduled["id"]: "schedule", manual["id"]: "manual", hooked["id"]: "event"}


def _trigger_of(message: dict) -> str:
    return json.loads(message["Body"])["t"]


def test_the_margin_is_thirty_seconds_or_a_quarter_of_a_shorter_timeout(aws, monkeypatch):
    assert START_MARGIN_S == 30
    assert start_margin_ms() == 30_000
    monkeypatch.setenv("CRONHOOK_RUNNER_TIMEOUT_S", "60")
    reset_settings()
    assert start_margin_ms() == 15_000


def test_a_batch_out_of_time_hands_back_the_messages_it_did_not_start(aws, clock, root, slow):
    kinds = three_fires(root, clock)
    runner = assembly.build_runner(clock=clock)
    before = snapshot()

    answer, messages = poll(aws, FakeContext(clock), runner, expect=3)

    # The first message ran (280 s); 20 s were left for the others, under the 30 s margin.
    first, *rest = messages
    assert [f["itemIdentifier"] for f in answer["batchItemFailures"]] == [
        m["MessageId"] for m in rest
    ]
    assert slow == [json.loads(first["Body"])["r"]]
    done = _trigger_of(first)
    # Nothing of the two handed-back runs changed: not started, claimed as before, no run
    # recorded, nothing counted (run_count, failures, lost) on their triggers or events.
    assert snapshot(without=done) == {
        name: [r for r in rows if done not in r] for name, rows in before.items()
    }
    for message in rest:
        item = triggers_store.get_trigger(_trigger_of(message))
        assert int(item.run_count or 0) == 0 and int(item.consecutive_failures or 0) == 0
        assert item.last_run is None
    assert metric_counts("Runs") == {(("status", "succeeded"), ("surface", kinds[done])): 1}
    assert sum(metric_counts("RunsHandedBack").values()) == 2
    assert {dims for dims in metric_counts("RunsHandedBack")} == {
        (("surface", kinds[_trigger_of(m)]),) for m in rest
    }
    assert not metric_counts("RunsDropped") and not metric_counts("LeasesReaped")

    # Handed back visible at once (not after the queue's visibility timeout): the next
    # poll, with time enough for both, runs each exactly once.
    ample = FakeContext(clock, timeout_s=2 * SLOW_S + START_MARGIN_S)
    answer, again = poll(aws, ample, runner, expect=2)
    assert answer["batchItemFailures"] == []
    assert sorted(m["MessageId"] for m in again) == sorted(m["MessageId"] for m in rest)
    assert {m["Attributes"]["ApproximateReceiveCount"] for m in again} == {"2"}
    assert sorted(slow) == sorted(json.loads(m["Body"])["r"] for m in messages)
    assert aws.receive() == []
    for trigger_id in kinds:
        item = triggers_store.get_trigger(trigger_id)
        assert int(item.run_count) == 1 and int(item.consecutive_failures or 0) == 0
        assert triggers_store.in_flight_of(item) == {}
        (run,) = list(RunModel.query(trigger_id))
        assert run.status == "succeeded"
    assert sum(metric_counts("Runs").values()) == 3
    assert sum(metric_counts("RunsHandedBack").values()) == 2
    # The heartbeat later finds nothing to reap.
    assert assembly.tick(now=clock() + timedelta(hours=1)).reaped == 0


def test_the_first_message_of_an_invocation_always_starts(aws, clock, root, slow):
    three_fires(root, clock)
    context = FakeContext(clock, timeout_s=1)  # less than the margin from the start
    answer, messages = poll(aws, context, assembly.build_runner(clock=clock), expect=3)
    assert len(slow) == 1
    assert len(answer["batchItemFailures"]) == 2
    assert context.calls == 2  # the time is read only before the second and third


def test_without_a_context_there_is_no_budget(aws, clock, root, slow):
    three_fires(root, clock)
    answer, _ = poll(aws, None, assembly.build_runner(clock=clock), expect=3)
    assert answer["batchItemFailures"] == []
    assert len(slow) == 3
    assert not metric_counts("RunsHandedBack")


def test_with_time_left_every_message_of_the_batch_runs(aws, clock, root, slow):
    three_fires(root, clock)
    context = FakeContext(clock, timeout_s=3 * SLOW_S + START_MARGIN_S)
    answer, _ = poll(aws, context, assembly.build_runner(clock=clock), expect=3)
    assert answer["batchItemFailures"] == []
    assert len(slow) == 3


def test_a_message_handed_back_often_is_sent_again_fresh_not_dead_lettered(aws, clock, root, slow):
    kinds = three_fires(root, clock)
    runner = assembly.build_runner(clock=clock)
    # The first batch runs one message and hands two back (their receive count is 1).
    poll(aws, FakeContext(clock), runner, expect=3)
    # Both are received once more and come back un-run (receive count 2), as if their
    # invocation had been cut short before starting them.
    messages = aws.receive()
    assert {m["Attributes"]["ApproximateReceiveCount"] for m in messages} == {"2"}
    for m in messages:
        client("sqs").change_message_visibility(
            QueueUrl=aws.queue_url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0
        )
    # Third receive: the first runs (slow); the second is out of time again, and is sent
    # again as a fresh message (receive count 1) rather than handed back a third time.
    answer, messages = poll(aws, FakeContext(clock), runner, expect=2)
    assert {m["Attributes"]["ApproximateReceiveCount"] for m in messages} == {"3"}
    assert answer["batchItemFailures"] == []  # acknowledged: a fresh copy is queued
    (copy,) = aws.receive(visibility=0)
    assert copy["Attributes"]["ApproximateReceiveCount"] == "1"
    assert copy["Body"] == messages[1]["Body"]
    assert copy["MessageId"] != messages[1]["MessageId"]
    answer, _ = poll(aws, FakeContext(clock), runner, expect=1)
    assert answer["batchItemFailures"] == []
    assert len(slow) == 3 and len(set(slow)) == 3
    for trigger_id in kinds:
        assert int(triggers_store.get_trigger(trigger_id).run_count) == 1
    assert sum(metric_counts("RunsHandedBack").values()) == 3


def test_the_local_stack_gives_each_batch_the_runner_timeout():
    now = [100.0]
    context = InvocationContext(300, clock=lambda: now[0])
    assert context.get_remaining_time_in_millis() == 300_000
    now[0] += 299.5
    assert context.get_remaining_time_in_millis() == 500
    now[0] += 10
    assert context.get_remaining_time_in_millis() == 0
