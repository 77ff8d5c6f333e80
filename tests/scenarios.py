"""Scenario helpers shared by the functional and reliability tests (time driven by hand).

- ``create_scheduled``: a trigger through the service, every minute unless told otherwise.
- ``create_staggered``: many triggers with slightly different periods.
- ``fire_next``: the next tick's runs, the heartbeat at ``now`` and the queue drained.
- ``ticks_at_once``: heartbeat ticks released together on threads.
- ``webhook_trigger``, ``deliver``, ``event_of``: a generic-webhook trigger, a signed
  delivery of ``{"n": n}`` straight to the service, and the event it stored.
- the ``scenario-count`` workflow and ``EXECUTIONS``, the count of its runs per fire id,
  taken inside the workflow: the one count that proves "never run twice".
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from typing import Any

from chalicelib import assembly
from chalicelib.services import events, triggers
from chalicelib.store.models import EventModel
from chalicelib.workflows import REGISTRY, Fire, Result, workflow
from tests.signing import signed_headers

__all__ = [
    "EXECUTIONS",
    "create_scheduled",
    "create_staggered",
    "fire_next",
    "ticks_at_once",
    "webhook_trigger",
    "deliver",
    "event_of",
]

EXECUTIONS: Counter = Counter()
_lock = threading.Lock()

if "scenario-count" not in REGISTRY:

    @workflow("scenario-count")
    def count_executions(fire: Fire) -> Result:
        """Counts its executions per fire id; its runs in ``state.n``."""
        with _lock:
            EXECUTIONS[fire.fire_id] += 1
        return Result(state={"n": (fire.state or {}).get("n", 0) + 1})


def create_scheduled(principal: Any, clock: Any, **body: Any) -> str:
    """Create a trigger (every 60 s unless ``schedule`` says otherwise); its id."""
    body.setdefault("schedule", {"interval_s": 60})
    return triggers.create_trigger(principal, body, now=clock())["id"]


def create_staggered(principal: Any, clock: Any, count: int) -> list[str]:
    """``count`` ``scenario-count`` triggers every 60, 61, 62... s; their ids."""
    created = []
    for n in range(count):
        body = {"workflow": "scenario-count", "schedule": {"interval_s": 60 + n}}
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


def webhook_trigger(
    principal: Any, clock: Any, *, workflow: str, event: dict | None = None, **fields: Any
) -> dict:
    """Create a generic-webhook trigger (``event`` adds to its event fields); the answer."""
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


def event_of(answer: dict) -> EventModel:
    """The stored event of an accepted delivery (a consistent read)."""
    return EventModel.get(answer["event_id"], consistent_read=True)
