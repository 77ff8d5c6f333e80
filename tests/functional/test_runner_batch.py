"""The runner's Lambda runs a batch's messages concurrently, each behind its own fences.

Ten manual fires of ten triggers arrive in one batch, as Lambda's event source mapping
delivers them. Their workflow waits on one barrier of ten (with a timeout): it passes
only if all ten run at once. One message's bookkeeping after settle keeps failing (a
policy of the test's own pipeline): that message alone is reported as a batch item
failure; the other nine are not held up by it.
"""

from __future__ import annotations

import json
import threading

import pytest

from chalicelib import assembly, wiring
from chalicelib.services import triggers
from chalicelib.services.pipeline import Pipeline, RunContext, RunPolicy
from chalicelib.store import triggers as triggers_store
from chalicelib.store.runs import RunModel
from chalicelib.workflows import REGISTRY, Fire, Result, Workflow
from devstack.stack import _lambda_record

BATCH = 10
BARRIER_TIMEOUT_S = 60  # generous: only a batch run one after another waits it out


@pytest.fixture
def barrier(monkeypatch):
    """A workflow that returns only once all ``BATCH`` fires are running together."""
    meeting = threading.Barrier(BATCH, timeout=BARRIER_TIMEOUT_S)
    passed: list[str] = []
    lock = threading.Lock()

    def run(fire: Fire) -> Result:
        meeting.wait()  # BrokenBarrierError (the run fails) unless all ten are here
        with lock:
            passed.append(fire.fire_id)
        return Result(output={"met": True})

    monkeypatch.setitem(REGISTRY, "barrier", Workflow(name="barrier", func=run))
    return passed


class FailsAfterSettle(RunPolicy):
    """Bookkeeping after settle that keeps failing for one trigger."""

    name = "fails_after_settle"

    def __init__(self, trigger_id: str):
        self.trigger_id = trigger_id

    def after_settle(self, ctx: RunContext) -> None:
        if ctx.item.id == self.trigger_id:
            raise RuntimeError("injected: bookkeeping unavailable")


def test_a_batch_runs_concurrently_and_only_the_failing_message_is_reported(
    aws, clock, root, barrier
):
    ids = [
        triggers.create_trigger(
            root, {"workflow": "barrier", "schedule": {"cron": "0 8 1 1 *"}}, now=clock()
        )["id"]
        for _ in range(BATCH)
    ]
    for trigger_id in ids:
        triggers.fire_now(root, trigger_id, now=clock())
    messages = []
    while len(messages) < BATCH:
        got = aws.receive()
        assert got, "the manual fires were not all queued"
        messages += got
    assert len(messages) == BATCH
    failing = ids[3]
    pipeline = Pipeline((*assembly.POLICIES, FailsAfterSettle(failing)))
    runner = assembly.build_runner(clock=clock, pipeline=pipeline)
    event = {"Records": [_lambda_record(m, aws.queue_url) for m in messages]}

    answer = wiring.handle_sqs_batch(event, None, runner=runner)

    (failed_message,) = [m for m in messages if json.loads(m["Body"])["t"] == failing]
    assert answer["batchItemFailures"] == [{"itemIdentifier": failed_message["MessageId"]}]
    # All ten met at the barrier: they ran at the same time.
    assert len(barrier) == BATCH
    for trigger_id in ids:
        (run,) = list(RunModel.query(trigger_id, consistent_read=True))
        assert run.status == "succeeded"  # each settled behind its own fence
        assert triggers_store.in_flight_of(triggers_store.get_trigger(trigger_id)) == {}


def test_with_one_thread_the_batch_runs_one_message_after_another(aws, clock, root):
    ids = [
        triggers.create_trigger(
            root, {"workflow": "echo", "schedule": {"cron": "0 8 1 1 *"}}, now=clock()
        )["id"]
        for _ in range(3)
    ]
    for trigger_id in ids:
        triggers.fire_now(root, trigger_id, now=clock())
    messages = aws.receive()
    assert len(messages) == 3
    event = {"Records": [_lambda_record(m, aws.queue_url) for m in messages]}
    answer = wiring.handle_sqs_batch(
        event, None, runner=assembly.build_runner(clock=clock), concurrency=1
    )
    assert answer["batchItemFailures"] == []
    for trigger_id in ids:
        (run,) = list(RunModel.query(trigger_id, consistent_read=True))
        assert run.status == "succeeded"
