"""Helpers of the reliability tests: a counting workflow, an ESM-like drain, a run ledger."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from chalicelib.workflows import REGISTRY, Fire, Result, workflow

# fire_id -> how many times the workflow body ran. The one count that proves
# "never run twice": it is taken inside the workflow, not from any record.
EXECUTIONS: Counter = Counter()
_executions_lock = threading.Lock()

if "reliability-count" not in REGISTRY:

    @workflow("reliability-count")
    def reliability_count(fire: Fire) -> Result:
        """Counts its executions per fire id, and its runs in state.count (unless the
        payload says ``stateless``: one write less per fire)."""
        with _executions_lock:
            EXECUTIONS[fire.fire_id] += 1
        if isinstance(fire.payload, dict) and fire.payload.get("stateless"):
            return Result(output={"fire_id": fire.fire_id})
        state = dict(fire.state or {})
        state["count"] = int(state.get("count") or 0) + 1
        return Result(state=state, output={"fire_id": fire.fire_id})


@pytest.fixture
def executions() -> Counter:
    """The execution counter, empty at the start of the test."""
    EXECUTIONS.clear()
    return EXECUTIONS


@dataclass
class Esm:
    """Lambda's SQS event source mapping, by hand: receive up to 10, run the batch through
    the runner's entry point (partial batch failures), delete what succeeded; what failed
    or was not deleted comes back (visibility 0 here instead of waiting it out)."""

    aws: Any
    runner: Any
    rounds: int = 60
    on_delete: Callable[[], None] | None = None
    received: Counter = field(default_factory=Counter)

    def drain(self) -> None:
        from chalicelib import wiring
        from chalicelib.local.stack import _lambda_record

        sqs = self.aws.sqs()
        for _ in range(self.rounds):
            self.aws.purge_delays(self.runner.clock())
            try:
                messages = sqs.receive_message(
                    QueueUrl=self.aws.queue_url,
                    MaxNumberOfMessages=10,
                    VisibilityTimeout=0,
                    AttributeNames=["All"],
                ).get("Messages", [])
            except Exception:  # the poller retries
                continue
            if not messages:
                return
            for m in messages:
                self.received[m["MessageId"]] += 1
            event = {"Records": [_lambda_record(m, self.aws.queue_url) for m in messages]}
            try:
                answer = wiring.handle_sqs_batch(event, runner=self.runner)
                failed = {f["itemIdentifier"] for f in answer.get("batchItemFailures", [])}
            except Exception:  # the invocation failed: the whole batch comes back
                failed = {m["MessageId"] for m in messages}
            done = [m for m in messages if m["MessageId"] not in failed]
            if done:
                try:
                    sqs.delete_message_batch(
                        QueueUrl=self.aws.queue_url,
                        Entries=[
                            {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                            for i, m in enumerate(done)
                        ],
                    )
                except Exception:  # not deleted: delivered again (at least once)
                    pass
        raise AssertionError(f"queue not drained in {self.rounds} rounds")


def runs_of(trigger_id: str) -> list:
    """Every run record of a trigger, oldest first."""
    from chalicelib.store.models import RunModel

    return list(RunModel.query(trigger_id, consistent_read=True))
