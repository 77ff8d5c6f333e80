"""Event runs of one trigger, on the moto server: a full trigger's events wait and are
pulled in arrival order when a run settles (services/events/pull.py); a message for an
event that is not next, or already finished, gives the slot to the oldest waiting one; a
disabled trigger's events are skipped.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from chalicelib import assembly, fire_batch
from chalicelib.observability import logger
from chalicelib.services import events, triggers
from chalicelib.store import triggers as triggers_store
from chalicelib.store.sqs import FireMessage, send_fires
from chalicelib.workflows import REGISTRY, Fire, Result, Workflow
from tests.scenarios import LogLines, deliver, event_of, webhook_trigger

pytestmark = pytest.mark.usefixtures("fresh_secrets")


def test_events_of_a_full_trigger_wait_and_run_one_after_another_in_arrival_order(
    aws, clock, root, monkeypatch
):
    order: list[int] = []
    nested: list[str] = []
    runner = assembly.build_runner(clock=clock)

    def run(fire: Fire) -> Result:
        order.append(fire.payload["n"])
        if fire.payload["n"] == 1:
            # While the first event runs, the messages ingress sent the others (the trigger
            # had room when they arrived: ingress does not read the queue) find it full and
            # are dropped: each waits in the queue for the run before it to pull it.
            messages = aws.receive()
            nested.extend(runner.handle(FireMessage.parse(m["Body"])) for m in messages)
            aws.delete(messages)
            # An event that arrives while the trigger is full is stored without a message:
            # the run in flight pulls it when it settles.
            clock.advance(1)
            answers.append(deliver(created, clock, 6)[1])
            assert aws.receive() == []
            # Nor does the sweep resend the waiting events: they wait their turn.
            later = clock() + timedelta(seconds=events.SWEEP_GRACE_S + 30)
            assert assembly.tick(now=later).events_dispatched == 0
        return Result()

    monkeypatch.setitem(REGISTRY, "queue", Workflow(name="queue", func=run))
    created = webhook_trigger(root, clock, workflow="queue")
    answers = [deliver(created, clock, 1)[1]]
    (first,) = aws.receive(max_messages=1)
    for n in range(2, 6):
        clock.advance(1)
        answers.append(deliver(created, clock, n)[1])
    assert runner.handle(FireMessage.parse(first["Body"])) == "succeeded"
    aws.delete([first])
    assert nested == ["dropped"] * 4

    statuses = aws.drain(runner)
    assert statuses.count("succeeded") == 5
    assert order == [1, 2, 3, 4, 5, 6]
    assert {event_of(a).status for a in answers} == {"succeeded"}
    runs = triggers.list_trigger_runs(root, created["id"], {})["items"]
    assert sorted(r["id"] for r in runs) == sorted(a["run_id"] for a in answers)
    assert triggers_store.in_flight_of(triggers_store.get_trigger(created["id"])) == {}


def test_a_newer_events_message_leaves_the_slot_to_the_oldest_waiting_event(aws, clock, root, ran):
    created = webhook_trigger(root, clock)
    answers = []
    for n in (1, 2, 3):
        answers.append(deliver(created, clock, n)[1])
        clock.advance(1)
    # The trigger had room at each delivery: ingress sent each its message (it does not
    # read the queue). They arrive newest first: a message for a trigger with room runs
    # the oldest waiting event, not its own.
    assert len(aws.receive(visibility=0)) == 3
    newest_first = [
        FireMessage(
            run_id=a["run_id"], trigger_id=created["id"], surface="event", event_id=a["event_id"]
        )
        for a in reversed(answers[1:])
    ]
    runner = assembly.build_runner(clock=clock)
    statuses = [runner.handle(m) for m in newest_first]
    assert statuses == ["succeeded", "succeeded"]
    assert ran == [1, 2]
    assert aws.drain(runner).count("succeeded") == 1
    assert ran == [1, 2, 3]


def test_the_lines_of_a_message_that_ran_the_queues_head_carry_the_heads_ids(aws, clock, root, ran):
    # Seen in CI: a runner batch with the messages of two events of an idle trigger; the
    # newer one's message ran the older (the head), and its "fire handled" line named the
    # newer event's run: one run logged twice, the other never.
    created = webhook_trigger(root, clock)
    answers = []
    for n in (1, 2):
        answers.append(deliver(created, clock, n)[1])
        clock.advance(1)
    aws.receive(visibility=0)  # ingress's one message (the head's) is left to its queue
    newer = FireMessage(
        run_id=answers[1]["run_id"],
        trigger_id=created["id"],
        surface="event",
        event_id=answers[1]["event_id"],
    )
    record = {
        "messageId": "m-newer",
        "receiptHandle": "r-newer",
        "body": newer.body(),
        "attributes": {"ApproximateReceiveCount": "1"},
        "messageAttributes": {},
        "eventSource": "aws:sqs",
    }
    lines = LogLines()
    logger._logger.addHandler(lines)
    try:
        answer = fire_batch.run_batch(
            {"Records": [record]}, runner=assembly.build_runner(clock=clock)
        )
    finally:
        logger._logger.removeHandler(lines)
    assert answer == {"batchItemFailures": []}
    assert ran == [1]  # the head ran, on the newer event's message
    (handled,) = [line for line in lines.lines if line["message"] == "fire handled"]
    assert handled["status"] == "succeeded"
    assert handled["run_id"] == answers[0]["run_id"]
    assert handled["event_id"] == answers[0]["event_id"]
    # Every line about the run carries the run it was about, never the message's own.
    about_runs = [line for line in lines.lines if line.get("run_id")]
    assert about_runs and {line["run_id"] for line in about_runs} == {answers[0]["run_id"]}


def test_a_second_message_for_a_finished_event_is_dropped_and_gives_its_slot_back(
    aws, clock, root, ran
):
    created = webhook_trigger(root, clock)
    answer = deliver(created, clock, 1)[1]
    runner = assembly.build_runner(clock=clock)
    assert aws.drain(runner) == ["succeeded"]
    duplicate = FireMessage(
        run_id=answer["run_id"],
        trigger_id=created["id"],
        surface="event",
        event_id=answer["event_id"],
    )
    assert send_fires([duplicate, duplicate]) == []
    assert aws.drain(runner) == ["dropped", "dropped"]
    assert ran == [1]
    assert triggers_store.in_flight_of(triggers_store.get_trigger(created["id"])) == {}
    assert deliver(created, clock, 2)[0] == 202
    assert aws.drain(runner) == ["succeeded"]  # the slot was given back


def test_pending_events_of_a_disabled_trigger_are_skipped_not_run(aws, clock, root, ran):
    created = webhook_trigger(root, clock)
    answers = [deliver(created, clock, n)[1] for n in (1, 2, 3)]
    triggers.set_enabled(root, created["id"], enabled=False, now=clock())
    aws.drain(assembly.build_runner(clock=clock))
    assert ran == []
    assert {event_of(a).status for a in answers} == {"skipped"}
    assert triggers.list_trigger_runs(root, created["id"], {})["items"] == []
