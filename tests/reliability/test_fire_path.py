"""The fire path's promises, each where it can break, on the moto server.

This is the suite ``make mutants`` runs against planted bugs (``bench/mutants.py``):
every test here fails for at least one of them. Time is driven by hand; deliveries are
concurrent and duplicated on purpose (threads released together by a barrier, each a
runner of its own, as two Lambda pollers would be).
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from datetime import timedelta
from functools import partial

import pytest
from pynamodb.exceptions import UpdateError

from chalicelib import assembly
from chalicelib.domain.epoch_ms import ms as _ms
from chalicelib.domain.ids import schedule_run_id
from chalicelib.services import events, triggers
from chalicelib.services.heartbeat import shards
from chalicelib.services.pipeline import AFTER_SETTLE_ATTEMPTS, RunPolicy
from chalicelib.services.runner.claim import claim_slot
from chalicelib.settings import get_settings
from chalicelib.store import kms
from chalicelib.store import triggers as triggers_store
from chalicelib.store.aws import client
from chalicelib.store.events import EventModel
from chalicelib.store.sqs import FireMessage, send_fires
from chalicelib.store.triggers import TriggerModel
from chalicelib.workflows import REGISTRY, Fire, Result, Workflow, workflow
from tests.scenarios import EXECUTIONS, Esm, create_scheduled, runs_of
from tests.signing import signed_headers

MINUTE = 60

# While a run of ``overlap-probe`` executes, these run inside it (time passes, ticks and
# other deliveries happen); RUNNING counts the runs executing at once, per trigger.
DURING: list = []
RUNNING: Counter = Counter()
MAX_RUNNING: Counter = Counter()
_running_lock = threading.Lock()

if "overlap-probe" not in REGISTRY:

    @workflow("overlap-probe")
    def overlap_probe(fire: Fire) -> Result:
        """Counts executions and overlap; runs the queued actions while it executes."""
        with _running_lock:
            EXECUTIONS[fire.fire_id] += 1
            RUNNING[fire.trigger_id] += 1
            MAX_RUNNING[fire.trigger_id] = max(
                MAX_RUNNING[fire.trigger_id], RUNNING[fire.trigger_id]
            )
        try:
            while DURING:
                DURING.pop(0)()
        finally:
            with _running_lock:
                RUNNING[fire.trigger_id] -= 1
        return Result(output={"fire_id": fire.fire_id})


@pytest.fixture(autouse=True)
def _clean():
    DURING.clear()
    RUNNING.clear()
    MAX_RUNNING.clear()
    kms.clear_cache()
    yield
    DURING.clear()


def _deliver_concurrently(aws, clock, *, copies: int = 3, rounds: int = 30) -> Counter:
    """Drain the queue delivering every message ``copies`` times at once; statuses."""
    statuses: Counter = Counter()
    for _ in range(rounds):
        aws.purge_delays(clock())
        messages = aws.receive(visibility=0)
        if not messages:
            return statuses
        aws.delete(messages)
        for m in messages:
            fire = FireMessage.parse(m["Body"])
            barrier = threading.Barrier(copies)
            lock = threading.Lock()

            def deliver(fire=fire, barrier=barrier, lock=lock) -> None:
                barrier.wait()
                status = assembly.build_runner(clock=clock).handle(fire)
                with lock:
                    statuses[status] += 1

            threads = [threading.Thread(target=deliver) for _ in range(copies)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=120)
    raise AssertionError("queue not drained")


# Triggers here fail often on purpose: they must not be disabled for it.
_create = partial(create_scheduled, limits={"max_failures": 1000})


# --- exactly once ----------------------------------------------------------------------


def test_every_slot_runs_exactly_once_when_every_message_is_delivered_three_times_at_once(
    aws, clock, root, executions
):
    ids = [_create(root, clock) for _ in range(4)]
    failing = _create(root, clock, workflow="fail")
    start_ms = _ms(clock())
    for _ in range(5):
        clock.advance(MINUTE)
        assembly.tick(now=clock())
        _deliver_concurrently(aws, clock)
    # Each message went to three runners at once, and the heartbeat sent some slots
    # twice (a slot in the window is sent with the tick before it): one run per slot.
    assert executions and set(executions.values()) == {1}, executions
    for trigger_id in ids:
        slots = [int(r.scheduled_for) for r in runs_of(trigger_id)]
        assert slots == [start_ms + n * MINUTE * 1000 for n in range(1, 6)], trigger_id
        assert {r.status for r in runs_of(trigger_id)} == {"succeeded"}
        assert all(executions[schedule_run_id(trigger_id, s)] == 1 for s in slots)
    # A workflow that raises still settles: nothing stuck, every slot tried once.
    assert [r.status for r in runs_of(failing)] == ["failed"] * 5
    for item in TriggerModel.batch_get([*ids, failing]):
        assert triggers_store.in_flight_of(item) == {}, item.id


def test_a_manual_fire_delivered_twice_at_once_runs_once(aws, clock, root, executions):
    trigger_id = _create(root, clock, schedule={"interval_s": 3600})
    answer = triggers.fire_now(root, trigger_id, now=clock())
    statuses = _deliver_concurrently(aws, clock, copies=4)
    assert statuses == Counter({"succeeded": 1, "dropped": 3})
    assert executions[answer["run_id"]] == 1


def test_a_message_delivered_again_after_its_run_settled_is_dropped(aws, clock, root, executions):
    trigger_id = _create(root, clock)
    clock.advance(MINUTE)
    assembly.tick(now=clock())
    aws.purge_delays(clock())
    (message,) = aws.receive()
    fire = FireMessage.parse(message["Body"])
    assert assembly.build_runner(clock=clock).handle(fire) == "succeeded"
    clock.advance(5)
    assert assembly.build_runner(clock=clock).handle(fire) == "dropped"
    assert executions[fire.run_id] == 1
    assert [r.status for r in runs_of(trigger_id)] == ["succeeded"]


# --- overlap and busy, decided when the fire is due ----------------------------------------


def _minute_inside_the_run(aws, clock, statuses: list) -> None:
    clock.advance(MINUTE)
    assembly.tick(now=clock())
    statuses.extend(aws.drain(assembly.build_runner(clock=clock)))


def test_a_slot_due_while_a_run_executes_is_skipped_and_runs_never_overlap(
    aws, clock, root, executions
):
    trigger_id = _create(root, clock, workflow="overlap-probe")
    during: list = []
    DURING.append(lambda: _minute_inside_the_run(aws, clock, during))
    clock.advance(MINUTE)
    assembly.tick(now=clock())
    assert aws.drain(assembly.build_runner(clock=clock)) == ["succeeded"]
    assert during == ["skipped"]
    assert MAX_RUNNING[trigger_id] == 1
    assert sorted(r.status for r in runs_of(trigger_id)) == ["skipped", "succeeded"]
    # Nothing executes now: the next slot runs (a skip is decided at due time only).
    clock.advance(MINUTE)
    assembly.tick(now=clock())
    assert aws.drain(assembly.build_runner(clock=clock)) == ["succeeded"]


def test_a_slot_whose_previous_run_is_still_queued_is_not_skipped(aws, clock, root):
    # Seen: a tick claimed slot S+1 while slot S's claim still waited, unstarted, in the
    # queue, and recorded S+1 skipped. A queued fire is not an executing one.
    trigger_id = _create(root, clock)
    clock.advance(MINUTE)
    assembly.tick(now=clock())
    clock.advance(MINUTE)
    assembly.tick(now=clock())  # slot 1 was not picked up yet
    aws.drain(assembly.build_runner(clock=clock))
    clock.advance(MINUTE)
    assembly.tick(now=clock())
    aws.drain(assembly.build_runner(clock=clock))
    statuses = [r.status for r in runs_of(trigger_id)]
    assert "skipped" not in statuses
    assert statuses.count("succeeded") >= 2


def test_a_run_that_outlasts_a_tick_is_never_reaped_while_its_lease_is_live(
    aws, clock, root, executions
):
    # A weekly-ish period: the lease is what puts the trigger in the due index while it runs.
    trigger_id = _create(root, clock, workflow="overlap-probe", schedule={"interval_s": 7200})
    reports: list = []

    def five_long_minutes() -> None:
        for _ in range(5):  # 5 min of a 6 min lease
            clock.advance(MINUTE)
            reports.append(assembly.tick(now=clock()))

    DURING.append(five_long_minutes)
    clock.advance(7200)
    assembly.tick(now=clock())
    assert aws.drain(assembly.build_runner(clock=clock)) == ["succeeded"]
    assert sum(r.reaped for r in reports) == 0
    assert [r.status for r in runs_of(trigger_id)] == ["succeeded"]


def test_a_slow_run_that_settles_after_the_reapers_read_is_recorded_succeeded_not_lost(
    aws, clock, root, executions, monkeypatch
):
    # Seen: a tick read an expired lease (the runner slow, not dead); the runner then
    # settled and recorded its run succeeded; the reaper recorded it lost over that record,
    # then its reap was fenced out: last_run succeeded, the run shown lost forever.
    trigger_id = _create(root, clock, workflow="overlap-probe", schedule={"interval_s": 7200})
    read, recorded = threading.Event(), threading.Event()
    reports: list = []
    real_reap = shards.reap_expired

    def reap_after_the_settle(item, **kwargs):  # the tick's reaper, holding what it read
        read.set()
        assert recorded.wait(timeout=120), "the runner never settled"
        return real_reap(item, **kwargs)

    monkeypatch.setattr(shards, "reap_expired", reap_after_the_settle)
    tick = threading.Thread(target=lambda: reports.append(assembly.tick(now=clock())))

    def past_the_lease() -> None:  # the run outlasts its lease; a tick reaps meanwhile
        clock.advance(get_settings().runner_timeout_s + 2 * MINUTE)
        tick.start()
        assert read.wait(timeout=120), "the tick did not reap"

    DURING.append(past_the_lease)
    clock.advance(7200)
    assembly.tick(now=clock())
    assert aws.drain(assembly.build_runner(clock=clock)) == ["succeeded"]  # settled, recorded
    recorded.set()
    tick.join(timeout=120)
    assert [r.reaped for r in reports] == [0]
    assert [r.status for r in runs_of(trigger_id)] == ["succeeded"]
    view = triggers.get_trigger_view(root, trigger_id)
    assert (view["last_run"]["status"], view["consecutive_failures"]) == ("succeeded", 0)
    assert triggers_store.in_flight_of(triggers_store.get_trigger(trigger_id)) == {}


# --- a backlog, a crash, a lost message ------------------------------------------------------


def test_a_fire_that_waited_in_a_backlog_past_its_lease_runs_late_and_is_not_a_failure(
    aws, clock, root, executions
):
    # Seen: a claim whose message waited in SQS longer than its lease was reaped, recorded
    # lost and counted a failure; five in a row disabled a healthy trigger.
    trigger_id = _create(root, clock, limits={"max_failures": 5})
    lease_s = get_settings().lease_s
    for backlog in range(6):
        clock.advance(MINUTE)
        for _ in range(lease_s // MINUTE + 2):  # ticks go on; no runner takes anything
            assembly.tick(now=clock())
            clock.advance(MINUTE)
        statuses = aws.drain(assembly.build_runner(clock=clock))
        assert statuses.count("succeeded") == 1, (backlog, statuses)
    records = runs_of(trigger_id)
    # The slots passed while it waited are recorded missed (catchup: latest): not failures.
    assert {r.status for r in records} == {"succeeded", "missed"}
    ran = [r for r in records if r.status == "succeeded"]
    assert len(ran) == 6 and all(int(r.lateness_ms) > lease_s * 1000 for r in ran)
    view = triggers.get_trigger_view(root, trigger_id)
    assert (view["status"], view["consecutive_failures"]) == ("active", 0)


def test_a_runner_that_dies_after_its_claim_is_reaped_lost_and_the_trigger_fires_again(
    aws, clock, root, executions
):
    trigger_id = _create(root, clock)
    clock.advance(MINUTE)
    assembly.tick(now=clock())
    aws.purge_delays(clock())
    (message,) = aws.receive()
    aws.delete([message])  # the runner took it ...
    fire = FireMessage.parse(message["Body"])
    lease_ms = _ms(clock()) + (get_settings().runner_timeout_s + 60) * 1000
    assert (
        claim_slot(fire, lease_ms=lease_ms, now=clock(), pipeline=assembly.build_pipeline())
        is not None
    )
    # ... and died after its claim (which started the run). Its lease runs out.
    statuses = []
    for _ in range(8):
        clock.advance(MINUTE)
        assembly.tick(now=clock())
        statuses += aws.drain(assembly.build_runner(clock=clock))
    records = {r.run_id: r.status for r in runs_of(trigger_id)}
    assert records[fire.run_id] == "lost"
    assert "succeeded" in statuses
    assert triggers_store.in_flight_of(triggers_store.get_trigger(trigger_id)) == {}


def test_an_at_trigger_whose_only_run_is_lost_does_not_stay_active_forever(aws, clock, root):
    at = clock() + timedelta(seconds=90)
    trigger_id = _create(root, clock, schedule={"at": at.strftime("%Y-%m-%dT%H:%M:%SZ")}, limits={})
    clock.advance(90)
    assembly.tick(now=clock())
    aws.purge_delays(clock())
    (message,) = aws.receive()
    aws.delete([message])
    fire = FireMessage.parse(message["Body"])
    lease_ms = _ms(clock()) + (get_settings().runner_timeout_s + 60) * 1000
    assert (
        claim_slot(fire, lease_ms=lease_ms, now=clock(), pipeline=assembly.build_pipeline())
        is not None
    )
    for _ in range(8):  # the runner died; its lease runs out
        clock.advance(MINUTE)
        assembly.tick(now=clock())
    view = triggers.get_trigger_view(root, trigger_id)
    assert view["status"] == "disabled", view
    assert view["disabled_reason"] == "max_runs"
    assert [r.status for r in runs_of(trigger_id)] == ["lost"]


def test_a_failed_send_is_sent_again_by_the_next_tick_not_left_to_the_overdue_pass(
    aws, clock, root, executions, monkeypatch
):
    trigger_id = _create(root, clock, schedule={"interval_s": 120})
    sqs = client("sqs")
    real = sqs.send_message_batch
    failures = [1]

    def failing_once(**kwargs):
        if failures:
            failures.pop()
            raise client("sqs").exceptions.ClientError(
                {"Error": {"Code": "InternalError", "Message": "injected"}}, "SendMessageBatch"
            )
        return real(**kwargs)

    monkeypatch.setattr(sqs, "send_message_batch", failing_once)
    clock.advance(120)
    assert assembly.tick(now=clock()).send_failed == 1
    clock.advance(MINUTE)
    assembly.tick(now=clock())
    assert aws.drain(assembly.build_runner(clock=clock)) == ["succeeded"]
    (record,) = runs_of(trigger_id)
    assert int(record.lateness_ms) <= MINUTE * 1000  # one tick late, not the overdue pass's


def test_a_claim_that_raised_is_not_acknowledged_and_runs_when_delivered_again(
    aws, clock, root, executions, monkeypatch
):
    trigger_id = _create(root, clock)
    clock.advance(MINUTE)
    assembly.tick(now=clock())
    real = TriggerModel.update
    failures = [1, 1, 1]  # the claim write fails three times (throttled), then goes through

    def throttled(self, *args, **kwargs):
        if failures:
            failures.pop()
            raise UpdateError("injected: ProvisionedThroughputExceededException")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(TriggerModel, "update", throttled)

    esm = Esm(aws, assembly.build_runner(clock=clock))
    esm.drain()  # each failed invocation's message comes back, until the write goes through
    assert max(esm.received.values()) == 4
    assert [r.status for r in runs_of(trigger_id)] == ["succeeded"]


# --- started_at and finished_at ----------------------------------------------------------------


def test_started_and_finished_at_are_when_the_workflow_really_started_and_ended(
    aws, clock, root, monkeypatch
):
    class SlowCheck(RunPolicy):
        def check(self, ctx):
            clock.advance(5)  # e.g. the serialize_key guard waited for its lock
            return None

    def three_seconds(fire: Fire) -> Result:
        clock.advance(3)
        return Result()

    monkeypatch.setitem(REGISTRY, "three-s", Workflow(name="three-s", func=three_seconds))
    monkeypatch.setattr(assembly, "POLICIES", (*assembly.POLICIES, SlowCheck()))
    trigger_id = _create(root, clock, workflow="three-s")
    clock.advance(MINUTE)
    slot_ms = _ms(clock())
    assembly.tick(now=clock())
    assert aws.drain(assembly.build_runner(clock=clock)) == ["succeeded"]
    (record,) = runs_of(trigger_id)
    assert int(record.started_at) == slot_ms + 5000
    assert int(record.finished_at) == slot_ms + 8000
    assert int(record.lateness_ms) == 5000


# --- the event chain -----------------------------------------------------------------------------


def _event_trigger(root, clock, workflow: str = "count-executions") -> dict:
    return triggers.create_trigger(
        root, {"workflow": workflow, "event": {"source": "webhook"}}, now=clock()
    )


def _post(created: dict, clock, n: int) -> dict:
    body = json.dumps({"type": "job", "n": n, "stateless": True}).encode()
    headers = signed_headers(
        "webhook", created["webhook"]["secret"], body, ts=0, delivery=f"job-{n}"
    )
    token = created["webhook"]["url"].rsplit("/", 1)[1]
    status, answer = events.receive(token, body=body, headers=headers, now=clock())
    assert status == 202, answer
    return answer


def _event_statuses(trigger_id: str) -> Counter:
    # The events (an Idempotency-Key's alias is an item of the table, not an event).
    return Counter(
        e.status for e in EventModel.scan(EventModel.trigger_id == trigger_id) if e.alias_of is None
    )


def test_a_burst_to_a_busy_trigger_sends_one_message_per_run_not_one_per_event(
    aws, clock, root, monkeypatch
):
    # Ingress sends a message only when the trigger had room: events that arrive while a
    # run is in flight wait in its queue, and each run pulls the next. (A burst onto an
    # idle trigger sends each event that arrives before the first claim its message; the
    # runner that takes one runs the queue's head: see the next test.)
    real = events.accept.send_fires
    by_ingress: list[str] = []

    def counted(messages):
        by_ingress.extend(m.event_id for m in messages)
        return real(messages)

    monkeypatch.setattr(events.accept, "send_fires", counted)
    during: list[int] = []

    def first_run_meets_the_burst(fire: Fire) -> Result:
        if fire.payload["n"] == 0 and not during:
            for n in range(1, 20):
                clock.advance(0.01)
                _post(created, clock, n)
            during.append(len(by_ingress))
        return Result()

    monkeypatch.setitem(
        REGISTRY, "meets-burst", Workflow(name="meets-burst", func=first_run_meets_the_burst)
    )
    created = _event_trigger(root, clock, workflow="meets-burst")
    first = _post(created, clock, 0)
    assert by_ingress == [first["event_id"]]
    statuses = _deliver_concurrently(aws, clock, copies=2, rounds=200)
    assert during == [1]  # the 19 that arrived while a run was in flight: no message
    assert by_ingress == [first["event_id"]]  # the others were pulled, run after run
    assert _event_statuses(created["id"]) == Counter({"succeeded": 20})
    assert statuses["succeeded"] == 20


def test_a_message_for_a_trigger_with_room_runs_the_queue_head_instead_of_being_dropped(
    aws, clock, root, executions, monkeypatch
):
    created = _event_trigger(root, clock)
    # The first event's message is lost at ingress (send failed): it heads the queue.
    real = events.accept.send_fires
    monkeypatch.setattr(events.accept, "send_fires", lambda messages: list(messages))
    first = _post(created, clock, 1)
    monkeypatch.setattr(events.accept, "send_fires", real)
    clock.advance(1)  # arrival order is by received time: the first stays the head
    second = _post(created, clock, 2)
    # A message for the second (not the head) arrives while the trigger is idle.
    assert not send_fires(
        [
            FireMessage(
                run_id=second["run_id"],
                trigger_id=created["id"],
                surface="event",
                event_id=second["event_id"],
            )
        ]
    )
    assert aws.drain(assembly.build_runner(clock=clock))  # no heartbeat, no sweep
    assert _event_statuses(created["id"]) == Counter({"succeeded": 2})
    assert executions[first["run_id"]] == 1 and executions[second["run_id"]] == 1


def test_a_pull_that_failed_is_retried_and_the_chain_does_not_stall(
    aws, clock, root, executions, monkeypatch
):
    # The four later events arrive while the first run is in flight: no message is sent
    # for them, so the first run's pull is the only way the queue moves (no sweep here).
    def first_run_meets_the_rest(fire: Fire) -> Result:
        if fire.payload["n"] == 0:
            for n in range(1, 5):
                clock.advance(0.01)  # arrival order is by received time
                _post(created, clock, n)
        return Result()

    monkeypatch.setitem(
        REGISTRY, "meets-rest", Workflow(name="meets-rest", func=first_run_meets_the_rest)
    )
    created = _event_trigger(root, clock, workflow="meets-rest")
    _post(created, clock, 0)
    real = events.pull.send_fires
    # The first pull fails all its attempts (and is raised), then the hook's retry goes through.
    failures = [1] * events.PULL_ATTEMPTS

    def flaky(messages):
        if failures:
            failures.pop()
            return list(messages)
        return real(messages)

    monkeypatch.setattr(events.pull, "send_fires", flaky)
    aws.drain(assembly.build_runner(clock=clock))
    assert not failures  # the pull did fail, every attempt
    assert _event_statuses(created["id"]) == Counter({"succeeded": 5})


def _fail_settle_event(monkeypatch, times: int) -> None:
    """The event's settle fails its next ``times`` calls ("events table unavailable")."""
    real = events.attempts.settle_event
    failures = [1] * times

    def failing(*args, **kwargs):
        if failures:
            failures.pop()
            raise RuntimeError("injected: events table unavailable")
        return real(*args, **kwargs)

    monkeypatch.setattr(events.attempts, "settle_event", failing)


def test_bookkeeping_that_keeps_failing_after_settle_fails_the_message_and_is_finished_on_redelivery(
    aws, clock, root, executions, monkeypatch
):
    created = _event_trigger(root, clock)
    _post(created, clock, 1)
    clock.advance(0.01)
    _post(created, clock, 2)
    _fail_settle_event(monkeypatch, AFTER_SETTLE_ATTEMPTS)  # every try of the first run's hook

    # One message at a time, in order: the first event's own message runs it. (In one
    # batch the second event's message may run the queue's head in its place; its
    # redelivery then runs its own event, and the sweep finishes the head's bookkeeping:
    # the next test. Both orders were seen here, so this one is made certain.)
    esm = Esm(aws, assembly.build_runner(clock=clock), batch=1)
    esm.drain()  # no heartbeat: the redelivered message finishes the bookkeeping
    assert _event_statuses(created["id"]) == Counter({"succeeded": 2})
    assert max(esm.received.values()) >= 2  # the failed message came back
    assert sorted(executions.values()) == [1, 1]


def test_a_head_run_in_another_events_place_whose_bookkeeping_keeps_failing_is_finished_by_the_sweep(
    aws, clock, root, executions, monkeypatch
):
    created = _event_trigger(root, clock)
    first = _post(created, clock, 1)
    clock.advance(0.01)
    _post(created, clock, 2)
    # The first event's message is gone (or comes later): the second event's message runs
    # the queue's head, the first event, in its place.
    aws.delete([m for m in aws.receive(visibility=0) if first["event_id"] in m["Body"]])
    _fail_settle_event(monkeypatch, AFTER_SETTLE_ATTEMPTS)  # every try of the head's hook

    esm = Esm(aws, assembly.build_runner(clock=clock), batch=1)
    esm.drain()
    # The redelivered message ran its own event; the head is left running...
    assert _event_statuses(created["id"]) == Counter({"succeeded": 1, "running": 1})
    # ...until a tick's sweep, past its run's lease and the grace, finishes it from the
    # run's record.
    lease_s = get_settings().runner_timeout_s + 60
    clock.advance(lease_s + events.event_sweep.SWEEP_GRACE_S + 60)
    assembly.tick(now=clock())
    esm.drain()
    assert _event_statuses(created["id"]) == Counter({"succeeded": 2})
    assert sorted(executions.values()) == [1, 1]


@pytest.fixture
def sent_count():
    """How many fire messages were sent (SendMessageBatch entries) since the fixture."""
    sent: list = []

    def hook(params, **kwargs):
        sent.extend(params.get("Entries", []))

    events_ = client("sqs").meta.events
    events_.register("provide-client-params.sqs.SendMessageBatch", hook, unique_id="rel-sent")
    yield lambda: len(sent)
    events_.unregister("provide-client-params.sqs.SendMessageBatch", unique_id="rel-sent")


def test_the_org_wide_run_list_shows_a_run_while_it_executes(aws, clock, root):
    # Seen: GET /v1/runs?status=running never listed a running run.
    trigger_id = _create(root, clock, workflow="overlap-probe")
    seen: list = []
    unfiltered: list = []
    DURING.append(lambda: seen.append(triggers.list_runs(root, {"status": "running"})["items"]))
    DURING.append(lambda: unfiltered.append(triggers.list_runs(root, {})["items"]))
    clock.advance(MINUTE)
    slot_ms = _ms(clock())
    assembly.tick(now=clock())
    assert aws.drain(assembly.build_runner(clock=clock)) == ["succeeded"]
    run_id = schedule_run_id(trigger_id, slot_ms)
    (listed,) = seen
    assert [(r["id"], r["status"]) for r in listed] == [(run_id, "running")]
    # Unfiltered, the org-wide list shows it too, in flight, on its first page.
    (everything,) = unfiltered
    assert [(r["id"], r["status"]) for r in everything] == [(run_id, "running")]
    assert triggers.list_runs(root, {"status": "running"})["items"] == []
    done = triggers.list_runs(root, {"status": "succeeded"})["items"]
    assert [r["id"] for r in done] == [run_id]
    # Settled, it is listed once: by its record.
    after = triggers.list_runs(root, {})["items"]
    assert [(r["id"], r["status"]) for r in after] == [(run_id, "succeeded")]
