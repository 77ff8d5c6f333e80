"""serialize_key through the runner on the moto server: one run at a time across triggers."""

from __future__ import annotations

import json
import threading
from datetime import timedelta
from functools import partial

import pytest

from chalicelib import assembly
from chalicelib.services import events, keys, triggers
from chalicelib.services.auth import Principal
from chalicelib.store import kms, locks
from chalicelib.store import runs as runs_store
from chalicelib.store import triggers as triggers_store
from chalicelib.store.sqs import FireMessage
from chalicelib.workflows import REGISTRY, Fire, Result, Workflow, workflow
from tests.scenarios import create_scheduled, event_of, webhook_trigger
from tests.signing import signed_headers

GATE = threading.Event()
ENTERED = threading.Event()
LOG: list[tuple[str, str]] = []


@workflow("test-serial")
def serial(fire):
    """Logs enter/exit; a payload with block waits at the gate in between."""
    LOG.append(("enter", fire.trigger_id))
    if (fire.payload or {}).get("block"):
        ENTERED.set()
        GATE.wait(timeout=20)
    LOG.append(("exit", fire.trigger_id))
    return Result(state={"done": True})


def _ms(at):
    return int(at.timestamp() * 1000)


_create = partial(create_scheduled, workflow="test-serial", serialize_key="client-7")


def _handle_visible(aws, runner):
    """Handle what is visible now (no fast-forward of delayed messages)."""
    messages = aws.receive()
    statuses = [runner.handle(FireMessage.parse(m["Body"])) for m in messages]
    aws.delete(messages)
    return statuses


def test_triggers_sharing_a_serialize_key_never_overlap_and_the_waiter_runs_next(aws, clock, root):
    LOG.clear()
    GATE.clear()
    ENTERED.clear()
    first = _create(root, clock, payload={"block": True})
    second = _create(root, clock)  # the same schedule: both slots are due together
    runner = assembly.build_runner(clock=clock)
    clock.advance(60)
    assert {r.split(".")[0] for r in assembly.tick(now=clock()).run_ids} == {first, second}
    messages = {FireMessage.parse(m["Body"]).trigger_id: m for m in aws.receive()}
    aws.delete(list(messages.values()))
    statuses: dict[str, str] = {}

    def run_first():
        statuses[first] = runner.handle(FireMessage.parse(messages[first]["Body"]))

    holder = threading.Thread(target=run_first)
    holder.start()
    assert ENTERED.wait(timeout=10)
    # The second trigger's run finds the key held: it waits, and is not a failure.
    second_message = FireMessage.parse(messages[second]["Body"])
    assert runner.handle(second_message) == "deferred"
    item = triggers_store.get_trigger(second)
    entry = triggers_store.in_flight_of(item)[second_message.run_id]
    assert entry["s"] == 0  # still claimed, not started: the start fence accepts it again
    assert item.run_count == 0 and item.last_run is None
    assert runs_store.get_run(second, second_message.run_id) is None
    held = locks.holder("local#client-7")
    assert held.owner.startswith(first) and second_message.run_id in held.waiters

    GATE.set()
    holder.join(timeout=20)
    assert statuses[first] == "succeeded"
    # The key was handed to the waiter, and its message sent again at once.
    assert locks.holder("local#client-7").owner == second_message.run_id
    # Both its own delayed retry and the hand-off arrive; the start fence runs it once.
    assert sorted(aws.drain(runner)) == ["dropped", "succeeded"]
    assert LOG == [("enter", first), ("exit", first), ("enter", second), ("exit", second)]
    run = runs_store.get_run(second, second_message.run_id)
    assert run.status == "succeeded" and run.scheduled_for == second_message.scheduled_ms
    assert locks.holder("local#client-7").owner is None
    view = triggers.get_trigger_view(root, second)
    assert (view["run_count"], view["consecutive_failures"]) == (1, 0)


def test_a_deferred_at_trigger_keeps_its_only_fire(aws, clock, root):
    LOG.clear()
    at = clock() + timedelta(seconds=60)
    trigger_id = _create(root, clock, schedule={"at": at.isoformat()})
    # Another run holds the key (its runner died), with 10 s left on its lease.
    assert locks.acquire(
        "local#client-7",
        run_id="trg_other.0000000000000s",
        lease_until_ms=_ms(at) + 10_000,
        now_ms=_ms(clock()),
    )
    runner = assembly.build_runner(clock=clock)
    clock.advance(60)
    assembly.tick(now=clock())
    assert _handle_visible(aws, runner) == ["deferred"]
    view = triggers.get_trigger_view(root, trigger_id)
    assert view["status"] == "active" and view["run_count"] == 0  # waiting is not a run
    # The holder's lease runs out; the waiter's own retry takes the key over.
    clock.advance(20)
    assert aws.drain(runner) == ["succeeded"]
    assert LOG == [("enter", trigger_id), ("exit", trigger_id)]
    view = triggers.get_trigger_view(root, trigger_id)
    assert (view["status"], view["disabled_reason"], view["run_count"]) == (
        "disabled",
        "max_runs",
        1,
    )


def test_a_waiter_that_ends_without_its_turn_leaves_the_queue(aws, clock, root):
    trigger_id = _create(root, clock)
    assert locks.acquire(
        "local#client-7", run_id="trg_other.1s", lease_until_ms=_ms(clock()) + 600_000, now_ms=0
    )
    runner = assembly.build_runner(clock=clock)
    clock.advance(60)
    assembly.tick(now=clock())
    assert _handle_visible(aws, runner) == ["deferred"]
    assert len(locks.holder("local#client-7").waiters) == 1
    triggers.set_enabled(root, trigger_id, enabled=False, now=clock())
    assert aws.drain(runner) == ["skipped"]  # its retry finds the trigger disabled
    assert locks.holder("local#client-7").waiters == {}
    # The holder's release then finds nobody to hand the key to.
    assert locks.release("local#client-7", run_id="trg_other.1s", handoff_until_ms=0) is None
    assert locks.holder("local#client-7").owner is None


def test_one_tenants_serialize_key_never_holds_up_another_tenant(aws, clock, root):
    acme_key = keys.create_key(root, {"role": "operator", "tenant": "acme"}, now=clock())
    acme = Principal(acme_key["id"], "acme", "operator")
    ours = _create(root, clock)
    theirs = _create(acme, clock)
    # A run of tenant local holds local's client-7 for a long while.
    assert locks.acquire(
        "local#client-7", run_id="trg_x.1s", lease_until_ms=_ms(clock()) + 600_000, now_ms=0
    )
    clock.advance(60)
    assembly.tick(now=clock())
    runner = assembly.build_runner(clock=clock)
    by_trigger = {}
    for message in aws.receive():
        fire = FireMessage.parse(message["Body"])
        by_trigger[fire.trigger_id] = runner.handle(fire)
    assert by_trigger == {ours: "deferred", theirs: "succeeded"}


def test_event_runs_wait_for_the_serialize_key_too(aws, clock, root):
    kms.clear_cache()
    created = triggers.create_trigger(
        root,
        {"workflow": "echo", "event": {"source": "webhook"}, "serialize_key": "client-7"},
        now=clock(),
    )
    assert locks.acquire(
        "local#client-7", run_id="trg_x.1s", lease_until_ms=_ms(clock()) + 30_000, now_ms=0
    )
    body = json.dumps({"n": 1}).encode()
    headers = signed_headers("webhook", created["webhook"]["secret"], body, ts=0, delivery="d1")
    token = created["webhook"]["url"].rsplit("/", 1)[1]
    assert events.receive(token, body=body, headers=headers, now=clock())[0] == 202
    runner = assembly.build_runner(clock=clock)
    assert _handle_visible(aws, runner) == ["deferred"]
    assert triggers.list_trigger_runs(root, created["id"], {})["items"] == []
    clock.advance(31)  # the holder's lease runs out
    assert aws.drain(runner) == ["succeeded"]
    [run] = triggers.list_trigger_runs(root, created["id"], {})["items"]
    assert (run["attempt"], run["output"]) == (1, {"n": 1})  # waiting used no attempt


@pytest.mark.usefixtures("fresh_secrets")
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
