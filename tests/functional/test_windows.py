"""event.debounce and event.batch: one run per window, every event of it in fire.events,
oldest first, on the event runs' exactly-once protocol (services/events/window.py)."""

from __future__ import annotations

import json

import pytest

from chalicelib import assembly
from chalicelib.domain.errors import ValidationError
from chalicelib.services import deliveries, events, triggers
from chalicelib.services.runner import core as runner_core
from chalicelib.store import triggers as triggers_store
from chalicelib.store import windows
from chalicelib.store.events import EventModel
from chalicelib.store.sqs import FireMessage
from chalicelib.workflows import REGISTRY, Fire, Result, Workflow
from tests.scenarios import webhook_trigger
from tests.signing import delivery_body, signed_headers

pytestmark = pytest.mark.usefixtures("fresh_secrets")


class Crash(BaseException):
    """The runner's process dies here (nothing in the runner catches a BaseException)."""


@pytest.fixture
def seen(monkeypatch) -> list[dict]:
    """Workflow ``collect``: keeps each run's fire (its events) as it got them."""
    fires: list[dict] = []

    def collect(fire: Fire) -> Result:
        fires.append(
            {
                "fire_id": fire.fire_id,
                "ns": [e["payload"]["n"] for e in fire.events or []],
                "ids": [e["event_id"] for e in fire.events or []],
                "dropped": fire.events_dropped,
            }
        )
        return Result()

    monkeypatch.setitem(REGISTRY, "collect", Workflow(name="collect", func=collect))
    return fires


def github_trigger(root, clock, **event) -> dict:
    return triggers.create_trigger(
        root,
        {"workflow": "collect", "event": {"source": "github", "secret": "gh-secret-123", **event}},
        now=clock(),
    )


def push(created: dict, clock, n: int, *, delivery: str | None = None) -> tuple[int, dict]:
    """A signed GitHub push whose body carries ``n``."""
    body = delivery_body("github", f"d{n}", n=n)
    headers = signed_headers("github", "gh-secret-123", body, ts=0, delivery=delivery or f"d{n}")
    token = created["webhook"]["url"].rsplit("/", 1)[1]
    return events.receive(token, body=body, headers=headers, now=clock())


def run_all(aws, runner, *, rounds: int = 20) -> list[str]:
    """Drain the queue at the test's clock; a Crash leaves its message (a dead runner)."""
    statuses = []
    for _ in range(rounds):
        aws.purge_delays()
        messages = aws.receive()
        if not messages:
            break
        for m in messages:
            try:
                statuses.append(runner.handle(FireMessage.parse(m["Body"])))
            except Crash:
                statuses.append("crashed")
        aws.delete(messages)
    return [s for s in statuses if s != "dropped"]


def stored(trigger_id: str) -> list[EventModel]:
    return [e for e in EventModel.scan() if e.trigger_id == trigger_id and e.received_sk]


def test_a_burst_of_40_pushes_within_wait_s_is_one_run_with_40_events_in_order(
    aws, clock, root, seen
):
    created = github_trigger(root, clock, debounce={"wait_s": 30, "max_wait_s": 300})
    answered = []
    for n in range(1, 41):
        status, answer = push(created, clock, n)
        assert status == 202
        answered.append(answer["run_id"])
        clock.advance(0.5)
    runner = assembly.build_runner(clock=clock)
    assert run_all(aws, runner, rounds=4) == []  # 0.5 s after the last push: not quiet
    clock.advance(20)
    assert run_all(aws, runner, rounds=4) == []  # 20.5 s: still within wait_s
    assert seen == []
    clock.advance(10.5)  # 31 s after the last push
    assert run_all(aws, runner) == ["succeeded"]
    [fire] = seen
    assert fire["ns"] == list(range(1, 41))
    assert fire["dropped"] == 0
    assert len(set(fire["ids"])) == 40
    runs = triggers.list_trigger_runs(root, created["id"], {})["items"]
    assert [r["id"] for r in runs] == [fire["fire_id"]]
    # Each 202 named the run that took its event: the window's (its first event's).
    assert answered == [fire["fire_id"]] * 40
    events_ = stored(created["id"])
    assert {(e.status, e.run_id) for e in events_} == {("succeeded", fire["fire_id"])}
    # The delivery log shows which run took each event.
    rows = deliveries.list_deliveries(root, created["id"], {"limit": "100"})["items"]
    assert len(rows) == 40 and {r["run_id"] for r in rows} == {fire["fire_id"]}


def test_max_wait_s_ends_a_window_that_never_goes_quiet(aws, clock, root, seen):
    created = github_trigger(root, clock, debounce={"wait_s": 10, "max_wait_s": 30})
    runner = assembly.build_runner(clock=clock)
    for n in range(1, 9):  # one push every 5 s: never 10 s of quiet
        push(created, clock, n)
        clock.advance(5)
        run_all(aws, runner, rounds=3)
    # Due 30 s after push 1 (pushes 1-6 by then), though never quiet for 10 s.
    assert [f["ns"] for f in seen] == [[1, 2, 3, 4, 5, 6]]
    clock.advance(11)  # push 8 was 16 s ago: quiet
    run_all(aws, runner)
    assert [f["ns"] for f in seen] == [[1, 2, 3, 4, 5, 6], [7, 8]]


@pytest.mark.parametrize("dies", ["before its riders are taken", "after they are taken"])
def test_a_duplicate_delivery_and_a_runner_killed_mid_window_still_give_one_run_with_40(
    aws, clock, root, seen, monkeypatch, dies
):
    created = github_trigger(root, clock, debounce={"wait_s": 30, "max_wait_s": 300})
    for n in range(1, 41):
        assert push(created, clock, n)[0] == 202
        if n == 7:
            assert push(created, clock, 7)[0] == 200  # GitHub redelivers push 7
        clock.advance(0.5)
    clock.advance(31)
    runner = assembly.build_runner(clock=clock)
    real_riders_of = windows.riders_of

    def kill(*args, **kwargs):
        raise Crash()  # the runner's process dies: nothing after this runs

    def taken_then_killed(event_ids, *, run_id):
        real_riders_of(event_ids, run_id=run_id)
        raise Crash()

    with monkeypatch.context() as m:
        if dies == "before its riders are taken":
            m.setattr(windows, "take_window", kill)
        else:
            m.setattr(windows, "riders_of", taken_then_killed)
        m.setattr(runner_core, "settle", kill)  # no settle: the claim stays in flight
        assert run_all(aws, runner) == ["crashed"]
    assert seen == []
    # The reaper finds the run lost when its lease is over; the event's retry runs it again.
    head = min(stored(created["id"]), key=lambda e: e.received_ms)
    lease_ms = int(head.lease_ms)
    clock.advance((lease_ms - clock().timestamp() * 1000) / 1000 + events.SWEEP_GRACE_S + 1)
    assert assembly.tick(now=clock()).reaped == 1
    clock.advance(60)
    assert run_all(aws, runner) == ["succeeded"]
    [fire] = seen
    assert fire["ns"] == list(range(1, 41))
    assert len(set(fire["ids"])) == 40
    runs = triggers.list_trigger_runs(root, created["id"], {})["items"]
    assert [(r["id"], r["status"]) for r in runs] == [(fire["fire_id"], "succeeded")]
    assert {(e.status, e.run_id) for e in stored(created["id"])} == {("succeeded", fire["fire_id"])}


def test_batching_120_events_with_max_events_50_is_three_runs_of_50_50_20(aws, clock, root, seen):
    created = webhook_trigger(
        root, clock, workflow="collect", event={"batch": {"max_events": 50, "max_wait_s": 60}}
    )
    secret = created["webhook"]["secret"]
    token = created["webhook"]["url"].rsplit("/", 1)[1]
    answered = []
    for n in range(1, 121):
        body = json.dumps({"type": "job", "n": n}).encode()
        headers = signed_headers("webhook", secret, body, ts=0, delivery=f"job-{n}")
        status, answer = events.receive(token, body=body, headers=headers, now=clock())
        assert status == 202
        answered.append(answer["run_id"])
        clock.advance(0.01)
    runner = assembly.build_runner(clock=clock)
    assert run_all(aws, runner) == ["succeeded", "succeeded"]  # the two full batches
    clock.advance(61)  # the last 20 wait out max_wait_s
    assert run_all(aws, runner) == ["succeeded"]
    assert [len(f["ns"]) for f in seen] == [50, 50, 20]
    assert [n for f in seen for n in f["ns"]] == list(range(1, 121))
    assert len({f["fire_id"] for f in seen}) == 3
    # Each 202 named the run of its batch.
    assert answered == [f["fire_id"] for f in seen for _ in f["ns"]]


def test_a_window_over_100_events_hands_100_and_counts_the_rest(aws, clock, root, seen):
    created = webhook_trigger(
        root, clock, workflow="collect", event={"debounce": {"wait_s": 5, "max_wait_s": 60}}
    )
    secret = created["webhook"]["secret"]
    token = created["webhook"]["url"].rsplit("/", 1)[1]
    for n in range(1, 131):
        body = json.dumps({"type": "job", "n": n}).encode()
        headers = signed_headers("webhook", secret, body, ts=0, delivery=f"job-{n}")
        events.receive(token, body=body, headers=headers, now=clock())
        clock.advance(0.01)
    clock.advance(6)
    assert run_all(aws, assembly.build_runner(clock=clock)) == ["succeeded"]
    [fire] = seen
    assert fire["ns"] == list(range(1, 101)) and fire["dropped"] == 30
    # The rest were taken by the same run too: nothing waits, nothing runs twice.
    assert {e.run_id for e in stored(created["id"])} == {fire["fire_id"]}


@pytest.mark.parametrize(
    ("event", "field"),
    [
        ({"debounce": {"wait_s": 0, "max_wait_s": 10}}, "event.debounce.wait_s"),
        ({"debounce": {"wait_s": 30, "max_wait_s": 10}}, "event.debounce.max_wait_s"),
        ({"debounce": {"wait_s": 30, "max_wait_s": 901}}, "event.debounce.max_wait_s"),
        ({"debounce": {"wait_s": 30}}, "event.debounce.max_wait_s"),
        ({"batch": {"max_events": 101, "max_wait_s": 60}}, "event.batch.max_events"),
        ({"batch": {"max_events": 5}}, "event.batch.max_wait_s"),
        (
            {
                "batch": {"max_events": 5, "max_wait_s": 6},
                "debounce": {"wait_s": 1, "max_wait_s": 2},
            },
            "event.batch",
        ),
    ],
)
def test_a_bad_window_is_a_422_naming_the_field(aws, clock, root, event, field):
    with pytest.raises(ValidationError) as caught:
        webhook_trigger(root, clock, event=event)
    assert caught.value.field == field


def test_a_trigger_without_a_window_runs_each_event_with_no_events_field(aws, clock, root, seen):
    created = webhook_trigger(root, clock, workflow="collect")
    secret = created["webhook"]["secret"]
    token = created["webhook"]["url"].rsplit("/", 1)[1]
    body = json.dumps({"type": "job", "n": 1}).encode()
    events.receive(
        token, body=body, headers=signed_headers("webhook", secret, body, ts=0), now=clock()
    )
    assert run_all(aws, assembly.build_runner(clock=clock)) == ["succeeded"]
    assert seen[0]["ns"] == [] and seen[0]["dropped"] == 0
    assert triggers_store.get_trigger(created["id"]) is not None


def test_remote_targets_get_the_windows_events_in_the_fire_json():
    fire = Fire(trigger_id="trg_x", fire_id="trg_x.1e", scheduled_for=None, surface="event")
    assert "events" not in fire.to_json()  # a run of one event: unchanged
    fire.events, fire.events_dropped = [{"event_id": "evt_1", "payload": {"n": 1}}], 3
    assert fire.to_json()["events"] == [{"event_id": "evt_1", "payload": {"n": 1}}]
    assert fire.to_json()["events_dropped"] == 3
