"""Runners on threads share one event trigger: never more of its events at once than its
concurrency, each event exactly once.

Four runners on threads take two messages per receive, as Lambda's pollers do, until the
queue is empty and none of them is running anything. If events are still waiting then,
the heartbeat's sweep is run at an explicit ``now`` (past its grace, so that no lease of
a live run has expired) and the runners go again: no watchdog, no wall-clock wait.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any

import pytest

from chalicelib import assembly
from chalicelib.services import events
from chalicelib.store.events import EventModel
from chalicelib.store.sqs import FireMessage
from chalicelib.workflows import REGISTRY, Fire, Result, Workflow
from tests.scenarios import deliver, webhook_trigger

RUNNERS = 4
# Rounds of "runners until idle, then a sweep": each event needs at most a few.
MAX_ROUNDS = 12


def run_until_idle(aws, runner: Any, *, runners: int = RUNNERS) -> list[BaseException]:
    """``runners`` threads, two messages per receive, until the queue is empty and no
    runner is running: a settle sends the next event's message before its runner counts
    as idle, so nothing a run pulls is missed. What the runners raised."""
    idle = threading.Condition()
    busy = [0]
    errors: list[BaseException] = []

    def work() -> None:
        try:
            while True:
                with idle:
                    messages = aws.receive(max_messages=2)
                    if not messages:
                        if busy[0] == 0:
                            idle.notify_all()
                            return
                        idle.wait(timeout=1.0)  # a run in progress may pull the next event
                        continue
                    busy[0] += 1
                try:
                    for m in messages:
                        runner.handle(FireMessage.parse(m["Body"]))
                    aws.delete(messages)
                finally:
                    with idle:
                        busy[0] -= 1
                        idle.notify_all()
        except BaseException as exc:  # surfaced by the caller
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(runners)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a runner thread did not finish"
    return errors


@pytest.mark.server
def test_concurrent_runners_never_run_more_of_a_triggers_events_than_its_concurrency(
    aws, clock, root, monkeypatch
):
    lock = threading.Lock()
    running = {"now": 0, "max": 0}
    ran: list[int] = []

    def slow(fire: Fire) -> Result:
        with lock:
            running["now"] += 1
            running["max"] = max(running["max"], running["now"])
        time.sleep(0.2)  # long enough for the other runners to try to start more
        with lock:
            running["now"] -= 1
            ran.append(fire.payload["n"])
        return Result()

    monkeypatch.setitem(REGISTRY, "slow", Workflow(name="slow", func=slow))
    created = webhook_trigger(root, clock, workflow="slow", concurrency=2)
    total = 24
    for n in range(total):
        deliver(created, clock, n)
    runner = assembly.build_runner(clock=clock)
    sweeps: list[int] = []
    for _round in range(MAX_ROUNDS):
        assert run_until_idle(aws, runner) == []
        if len(ran) >= total:
            break
        # Idle with events waiting: the sweep restarts the queue.
        later = clock() + timedelta(seconds=events.SWEEP_GRACE_S + 1)
        sweeps.append(assembly.tick(now=later).events_dispatched)
    assert sorted(ran) == list(range(total)), f"sweeps: {sweeps}"  # each event exactly once
    assert 1 <= running["max"] <= 2
    statuses = {e.status for e in EventModel.scan() if e.alias_of is None}
    assert statuses == {"succeeded"}
