"""Scenario helpers shared by the functional and reliability tests (time driven by hand).

Test files import their helpers from here (fixtures come from the conftest files), never
from another test file; each helper has one copy.

- the ``count-executions`` workflow and ``EXECUTIONS``, the count of its runs per fire
  id, taken inside the workflow: the one count that proves "never run twice".
- ``create_scheduled``: a trigger through the service, every minute unless told otherwise.
- ``create_staggered``: many triggers with slightly different periods.
- ``fire_next``: the next tick's runs, the heartbeat at ``now`` and the queue drained.
- ``ticks_at_once``: heartbeat ticks released together on threads.
- ``webhook_trigger``, ``deliver``, ``accept``, ``event_of``: a generic-webhook trigger,
  a signed delivery of ``{"n": n}`` straight to the service (``accept``: one that must be
  accepted), and the event it stored.
- ``source_trigger``, ``token_of``, ``post``, ``now_s``: an event trigger of any source
  and a delivery through the ``/hooks`` route (the ``http`` fixture).
- ``Esm`` and ``runs_of``: Lambda's SQS event source mapping by hand, a trigger's runs.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from chalicelib import assembly
from chalicelib.services import events, triggers
from chalicelib.store.events import EventModel
from chalicelib.workflows import REGISTRY, Fire, Result, workflow
from tests.signing import ISSUED_SECRETS, signed_headers

__all__ = [
    "EXECUTIONS",
    "COUNTING",
    "create_scheduled",
    "create_staggered",
    "fire_next",
    "ticks_at_once",
    "webhook_trigger",
    "deliver",
    "accept",
    "event_of",
    "source_trigger",
    "token_of",
    "post",
    "now_s",
    "Esm",
    "runs_of",
]

# fire_id -> how many times the workflow body ran. The one count that proves "never run
# twice": it is taken inside the workflow, not from any record.
EXECUTIONS: Counter = Counter()
_lock = threading.Lock()
COUNTING = "count-executions"

if COUNTING not in REGISTRY:

    @workflow(COUNTING)
    def count_executions(fire: Fire) -> Result:
        """Counts its executions per fire id, and its runs in ``state.n`` (unless the
        payload says ``stateless``: one write less per fire)."""
        with _lock:
            EXECUTIONS[fire.fire_id] += 1
        output = {"fire_id": fire.fire_id}
        if isinstance(fire.payload, dict) and fire.payload.get("stateless"):
            return Result(output=output)
        state = dict(fire.state or {})
        state["n"] = int(state.get("n") or 0) + 1
        return Result(state=state, output=output)


def create_scheduled(principal: Any, clock: Any, **body: Any) -> str:
    """Create a trigger (``count-executions`` every 60 s unless told otherwise); its id."""
    body.setdefault("workflow", COUNTING)
    body.setdefault("schedule", {"interval_s": 60})
    return triggers.create_trigger(principal, body, now=clock())["id"]


def create_staggered(principal: Any, clock: Any, count: int) -> list[str]:
    """``count`` ``count-executions`` triggers every 60, 61, 62... s; their ids."""
    created = []
    for n in range(count):
        body = {"workflow": COUNTING, "schedule": {"interval_s": 60 + n}}
        created.append(triggers.create_trigger(principal, body, now=clock())["id"])
    return created


def fire_next(
    aws: Any, clock: Any, runner: Any, seconds: float = 60, *, keep_dropped: bool = False
) -> list[str]:
    """The statuses of the next tick's runs: ``seconds`` later, one tick, the queue drained.

    A spare message fenced out (``dropped``) is no run, so it is left out unless
    ``keep_dropped``.
    """
    clock.advance(seconds)
    assembly.tick(now=clock())
    statuses = aws.drain(runner)
    return statuses if keep_dropped else [s for s in statuses if s != "dropped"]


def ticks_at_once(count: int, *, now: Any) -> list:
    """``count`` heartbeat ticks at ``now``, released together on threads; their reports."""
    reports: list = []
    barrier = threading.Barrier(count)

    def beat() -> None:
        barrier.wait()
        reports.append(assembly.tick(now=now))

    threads = [threading.Thread(target=beat) for _ in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    return reports


# -- event triggers, straight to the service ------------------------------------------


def webhook_trigger(
    principal: Any, clock: Any, *, workflow: str = "count", event: dict | None = None, **fields: Any
) -> dict:
    """Create a generic-webhook trigger (``event`` adds to its event fields); the answer.

    The default workflow ``count`` is the ``ran`` fixture's (tests/functional/conftest.py).
    """
    spec = {"source": "webhook", **(event or {})}
    return triggers.create_trigger(
        principal, {"workflow": workflow, "event": spec, **fields}, now=clock()
    )


def deliver(created: dict, clock: Any, n: int, *, key: str | None = None) -> tuple[int, dict]:
    """A signed generic-webhook delivery with payload ``{"n": n}``, straight to the service."""
    body = json.dumps({"type": "job", "n": n}).encode()
    headers = signed_headers(
        "webhook", created["webhook"]["secret"], body, ts=0, delivery=key or f"job-{n}"
    )
    token = created["webhook"]["url"].rsplit("/", 1)[1]
    return events.receive(token, body=body, headers=headers, now=clock())


def accept(created: dict, clock: Any, n: int, *, key: str | None = None) -> dict:
    """``deliver``, which must be accepted (202); the answer."""
    status, answer = deliver(created, clock, n, key=key)
    assert status == 202, answer
    return answer


def event_of(answer: dict) -> EventModel:
    """The stored event of an accepted delivery (a consistent read)."""
    return EventModel.get(answer["event_id"], consistent_read=True)


# -- event triggers of any source, through the /hooks route ----------------------------


def source_trigger(
    root: Any, clock: Any, source: str, *, workflow: str = "echo", **event: Any
) -> dict:
    """Create an event trigger for ``source`` (with the provider's secret where it issues one)."""
    spec = {"source": source, **event}
    if source in ISSUED_SECRETS and "secret" not in event:
        spec["secret"] = ISSUED_SECRETS[source]
    return triggers.create_trigger(root, {"workflow": workflow, "event": spec}, now=clock())


def token_of(created: dict) -> str:
    return created["webhook"]["url"].rsplit("/", 1)[1]


def post(http: Any, created_or_token: Any, body: bytes, headers: dict) -> tuple[int, dict]:
    """A delivery through the ``/hooks`` route of the ``http`` fixture; status and answer."""
    token = created_or_token if isinstance(created_or_token, str) else token_of(created_or_token)
    response = http.post(f"/hooks/{token}", headers=headers, body=body)
    return response.status_code, json.loads(response.body or b"null")


def now_s(clock: Any) -> int:
    return int(clock().timestamp())


# -- the fire queue as Lambda drains it -------------------------------------------------


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
    # Messages a receive takes (Lambda's batch size): 1 runs them one at a time, in order.
    batch: int = 10

    def drain(self) -> None:
        from chalicelib import wiring
        from devstack.lambda_events import lambda_record

        sqs = self.aws.sqs()
        for _ in range(self.rounds):
            self.aws.purge_delays(self.runner.clock())
            try:
                messages = sqs.receive_message(
                    QueueUrl=self.aws.queue_url,
                    MaxNumberOfMessages=self.batch,
                    VisibilityTimeout=0,
                    AttributeNames=["All"],
                ).get("Messages", [])
            except Exception:  # the poller retries
                continue
            if not messages:
                return
            for m in messages:
                self.received[m["MessageId"]] += 1
            event = {"Records": [lambda_record(m, self.aws.queue_url) for m in messages]}
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
    from chalicelib.store.runs import RunModel

    return list(RunModel.query(trigger_id, consistent_read=True))


class LogLines(logging.Handler):
    """The app logger's records, formatted as they are printed (JSON, with the ids)."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[dict] = []

    def emit(self, record: logging.LogRecord) -> None:
        from chalicelib.observability import logger

        self.lines.append(json.loads(logger.registered_formatter.format(record)))
