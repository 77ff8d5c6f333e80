"""Event runs on the fenced run path, against the moto server: queueing behind a full
trigger, retries, lost runs, the heartbeat's safety sweep, replay, listing."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from botocore.exceptions import ClientError

from chalicelib import assembly
from chalicelib.domain.errors import Conflict, NotFound, ValidationError
from chalicelib.services import events, triggers
from chalicelib.store import dynamo, kms
from chalicelib.store.aws import client
from chalicelib.store.sqs import FireMessage, send_fires
from chalicelib.workflows import REGISTRY, Fire, Result, Workflow
from tests.scenarios import deliver, event_of, webhook_trigger
from tests.signing import signed_headers


@pytest.fixture(autouse=True)
def _fresh_secret_cache():
    kms.clear_cache()


def test_events_of_a_full_trigger_wait_and_run_one_after_another_in_arrival_order(
    aws, clock, root, monkeypatch
):
    order: list[int] = []
    nested: list[str] = []
    runner = assembly.build_runner(clock=clock)

    def run(fire: Fire) -> Result:
        order.append(fire.payload["n"])
        if fire.payload["n"] == 1:
            # While the first event runs, the others have no message of their own: they
            # arrived while an older event waited, so ingress sent none.
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
    assert nested == []

    statuses = aws.drain(runner)
    assert statuses.count("succeeded") == 5
    assert order == [1, 2, 3, 4, 5, 6]
    assert {event_of(a).status for a in answers} == {"succeeded"}
    runs = triggers.list_trigger_runs(root, created["id"], {})["items"]
    assert sorted(r["id"] for r in runs) == sorted(a["run_id"] for a in answers)
    assert dynamo.in_flight_of(dynamo.get_trigger(created["id"])) == {}


def test_a_newer_events_message_leaves_the_slot_to_the_oldest_waiting_event(aws, clock, root, ran):
    created = webhook_trigger(root, clock)
    answers = []
    for n in (1, 2, 3):
        answers.append(deliver(created, clock, n)[1])
        clock.advance(1)
    assert len(aws.receive(visibility=0)) == 1  # ingress sent only the first a message
    # Messages of the newer two arrive anyway (two ingress calls raced), newest first:
    # a message for a trigger with room runs the oldest waiting event, not its own.
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


def step(aws, runner) -> list[str]:
    """Handle what is queued now, once (delayed messages included: time is the test's clock)."""
    aws.purge_delays()
    messages = aws.receive()
    statuses = [runner.handle(FireMessage.parse(m["Body"])) for m in messages]
    aws.delete(messages)
    return statuses


def test_a_failed_event_is_retried_with_backoff_then_marked_failed_and_kept(aws, clock, root):
    created = webhook_trigger(root, clock, workflow="fail", event={"max_attempts": 3})
    answer = deliver(created, clock, 1)[1]
    runner = assembly.build_runner(clock=clock)
    assert step(aws, runner) == ["failed"]
    event = event_of(answer)
    assert (event.status, event.attempt) == ("pending", 1)
    assert event.retry_at == int(clock().timestamp() * 1000) + 2000

    # On time, the delayed retry message runs the second attempt.
    clock.advance(2)
    assert step(aws, runner) == ["failed"]
    event = event_of(answer)
    assert (event.status, event.attempt) == ("pending", 2)
    assert event.retry_at == int(clock().timestamp() * 1000) + 8000

    # A retry message that arrives before its time is dropped; the event keeps waiting,
    # and the heartbeat's sweep sends it again once it is overdue.
    assert step(aws, runner) == ["dropped"]
    assert event_of(answer).status == "pending"
    clock.advance(8 + events.SWEEP_GRACE_S)
    assert assembly.tick(now=clock()).events_dispatched == 1
    assert step(aws, runner) == ["failed"]
    event = event_of(answer)
    assert (event.status, event.attempt) == ("failed", 3)
    assert event.pending_sk is None

    clock.advance(3600)
    assert assembly.tick(now=clock()).events_dispatched == 0
    assert aws.drain(runner) == []
    (run,) = triggers.list_trigger_runs(root, created["id"], {})["items"]
    assert (run["id"], run["status"], run["attempt"]) == (answer["run_id"], "failed", 3)
    view = events.list_events(root, created["id"], {})["items"][0]
    assert (view["status"], view["attempt"]) == ("failed", 3)


def test_an_event_stored_but_not_enqueued_is_run_after_the_next_tick(aws, clock, root, ran):
    created = webhook_trigger(root, clock)
    sqs = client("sqs")

    def refuse(**kwargs):
        raise ClientError(
            {"Error": {"Code": "InternalError", "Message": "injected"}}, "SendMessageBatch"
        )

    sqs.meta.events.register("before-send.sqs.SendMessageBatch", refuse)
    try:
        status, answer = deliver(created, clock, 7)
    finally:
        sqs.meta.events.unregister("before-send.sqs.SendMessageBatch", refuse)
    assert status == 202  # stored durably: acknowledged even though the send failed
    assert event_of(answer).status == "pending"
    runner = assembly.build_runner(clock=clock)
    assert aws.drain(runner) == []

    clock.advance(events.SWEEP_GRACE_S - 1)
    assert assembly.tick(now=clock()).events_dispatched == 0  # not overdue yet
    clock.advance(2)
    assert assembly.tick(now=clock()).events_dispatched == 1
    assert aws.drain(runner) == ["succeeded"]
    assert ran == [7]
    (run,) = triggers.list_trigger_runs(root, created["id"], {})["items"]
    assert run["id"] == answer["run_id"] and run["event_id"] == answer["event_id"]


def test_a_reaped_event_run_counts_as_a_failed_attempt_and_is_retried(aws, clock, root, ran):
    created = webhook_trigger(root, clock)
    answer = deliver(created, clock, 3)[1]
    (message,) = aws.receive()
    aws.delete([message])
    now_ms = int(clock().timestamp() * 1000)
    # A runner starts the event and dies before settling.
    started = events.start_event_run(
        FireMessage.parse(message["Body"]), lease_ms=now_ms + 5000, now=clock()
    )
    assert started is not None and event_of(answer).status == "running"

    clock.advance(6)
    assert assembly.tick(now=clock()).reaped == 1
    event = event_of(answer)
    assert (event.status, event.attempt) == ("pending", 1)
    assert triggers.get_run_view(root, answer["run_id"])["status"] == "lost"

    clock.advance(2)
    assert aws.drain(assembly.build_runner(clock=clock)) == ["succeeded"]
    assert ran == [3]
    event = event_of(answer)
    assert (event.status, event.attempt) == ("succeeded", 2)
    run = triggers.get_run_view(root, answer["run_id"])
    assert (run["status"], run["attempt"]) == ("succeeded", 2)


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
    assert dynamo.in_flight_of(dynamo.get_trigger(created["id"])) == {}
    assert deliver(created, clock, 2)[0] == 202
    assert aws.drain(runner) == ["succeeded"]  # the slot was given back


def test_replay_runs_a_stored_event_again_as_a_new_run(aws, clock, root, ran):
    created = webhook_trigger(root, clock)
    answer = deliver(created, clock, 4)[1]
    runner = assembly.build_runner(clock=clock)
    with pytest.raises(Conflict):
        events.replay_event(root, answer["event_id"], now=clock())  # still pending
    assert aws.drain(runner) == ["succeeded"]

    clock.advance(60)
    replayed = events.replay_event(root, answer["event_id"], now=clock())
    assert replayed["run_id"] != answer["run_id"]
    assert aws.drain(runner) == ["succeeded"]
    assert ran == [4, 4]
    runs = triggers.list_trigger_runs(root, created["id"], {})["items"]
    assert [r["id"] for r in runs] == [replayed["run_id"], answer["run_id"]]
    assert {r["event_id"] for r in runs} == {answer["event_id"]}
    # A redelivery is still a duplicate, now answered with the latest run.
    assert deliver(created, clock, 4)[1] == {
        "event_id": answer["event_id"],
        "run_id": replayed["run_id"],
        "duplicate": True,
    }
    with pytest.raises(NotFound):
        events.replay_event(root, "evt_doesnotexist", now=clock())


def test_pending_events_of_a_disabled_trigger_are_skipped_not_run(aws, clock, root, ran):
    created = webhook_trigger(root, clock)
    answers = [deliver(created, clock, n)[1] for n in (1, 2, 3)]
    triggers.set_enabled(root, created["id"], enabled=False, now=clock())
    aws.drain(assembly.build_runner(clock=clock))
    assert ran == []
    assert {event_of(a).status for a in answers} == {"skipped"}
    assert triggers.list_trigger_runs(root, created["id"], {})["items"] == []


def test_events_are_listed_newest_first_a_page_at_a_time(aws, clock, root, ran):
    created = webhook_trigger(root, clock)
    answers = []
    for n in (1, 2, 3):
        answers.append(deliver(created, clock, n)[1])
        clock.advance(1)
    first = events.list_events(root, created["id"], {"limit": "2"})
    assert [e["id"] for e in first["items"]] == [answers[2]["event_id"], answers[1]["event_id"]]
    assert first["items"][0]["status"] == "pending"
    assert first["items"][0]["headers"]["idempotency-key"] == "job-3"
    assert "x-signature-256" not in first["items"][0]["headers"]
    rest = events.list_events(root, created["id"], {"limit": "2", "cursor": first["next_cursor"]})
    assert [e["id"] for e in rest["items"]] == [answers[0]["event_id"]]
    other = webhook_trigger(root, clock)
    with pytest.raises(ValidationError):  # a cursor of another trigger is refused
        events.list_events(root, other["id"], {"cursor": first["next_cursor"]})


def test_an_event_waiting_for_its_serialize_key_runs_when_the_key_is_handed_over(
    aws, clock, root, monkeypatch
):
    runner = assembly.build_runner(clock=clock)
    ran: list[str] = []
    nested: list[str] = []

    def hold(fire: Fire) -> Result:
        ran.append(fire.payload["who"])
        if fire.payload["who"] == "a":
            # While A holds the key, B's event comes up: it must wait, not fail.
            messages = aws.receive()
            nested.extend(runner.handle(FireMessage.parse(m["Body"])) for m in messages)
            aws.delete(messages)
        return Result()

    monkeypatch.setitem(REGISTRY, "hold", Workflow(name="hold", func=hold))
    a = webhook_trigger(root, clock, workflow="hold", serialize_key="client-7")
    b = webhook_trigger(root, clock, workflow="hold", serialize_key="client-7")

    def send(created: dict, who: str) -> dict:
        body = json.dumps({"who": who}).encode()
        headers = signed_headers("webhook", created["webhook"]["secret"], body, ts=0, delivery=who)
        token = created["webhook"]["url"].rsplit("/", 1)[1]
        return events.receive(token, body=body, headers=headers, now=clock())[1]

    send(a, "a")
    (first,) = aws.receive()
    b_answer = send(b, "b")
    assert runner.handle(FireMessage.parse(first["Body"])) == "succeeded"
    aws.delete([first])
    assert nested == ["deferred"]
    event = event_of(b_answer)
    assert (event.status, event.attempt, event.retry_at) == ("pending", 0, None)

    # A's release hands the key to B and sends B's message: B runs at once.
    assert aws.drain(runner).count("succeeded") == 1
    assert ran == ["a", "b"]
    event = event_of(b_answer)
    assert (event.status, event.attempt) == ("succeeded", 1)


def test_only_an_events_last_failed_attempt_counts_toward_max_failures(aws, clock, root):
    created = webhook_trigger(
        root, clock, workflow="fail", event={"max_attempts": 2}, limits={"max_failures": 2}
    )
    runner = assembly.build_runner(clock=clock)

    def failures() -> tuple[str, int, str | None]:
        view = triggers.get_trigger_view(root, created["id"])
        return view["status"], view["consecutive_failures"], view["disabled_reason"]

    for n in (1, 2):
        deliver(created, clock, n)
        assert step(aws, runner) == ["failed"]  # attempt 1: retried, not counted
        assert failures() == ("active", n - 1, None)
        clock.advance(2)
        assert step(aws, runner) == ["failed"]  # attempt 2, the last: counted
        clock.advance(1)
    # Two events failed for good: the trigger is disabled, and says why.
    assert failures() == ("disabled", 2, "failures")
    runs = triggers.list_trigger_runs(root, created["id"], {})["items"]
    # One run record per event (its attempts share the run id).
    assert [(r["status"], r["attempt"]) for r in runs] == [("failed", 2)] * 2


def test_a_reaped_attempt_that_will_be_retried_does_not_count_toward_max_failures(
    aws, clock, root, ran
):
    created = webhook_trigger(root, clock, event={"max_attempts": 2}, limits={"max_failures": 1})
    answer = deliver(created, clock, 4)[1]

    def die_after_start() -> None:
        aws.purge_delays()
        (message,) = aws.receive()
        aws.delete([message])
        now_ms = int(clock().timestamp() * 1000)
        fire = FireMessage.parse(message["Body"])
        assert events.start_event_run(fire, lease_ms=now_ms + 5000, now=clock()) is not None

    def trigger() -> tuple[str, int]:
        view = triggers.get_trigger_view(root, created["id"])
        return view["status"], view["consecutive_failures"]

    die_after_start()  # attempt 1 is lost: retried, not counted
    clock.advance(6)
    assert assembly.tick(now=clock()).reaped == 1
    assert trigger() == ("active", 0)
    assert event_of(answer).status == "pending"

    clock.advance(2)
    die_after_start()  # attempt 2, the last, is lost too: counted, and max_failures is 1
    clock.advance(6)
    assert assembly.tick(now=clock()).reaped == 1
    assert trigger() == ("disabled", 1)
    assert event_of(answer).status == "failed"
    assert ran == []
