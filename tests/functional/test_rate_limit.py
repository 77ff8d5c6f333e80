"""event.rate_limit: events beyond it are stored and recorded ``throttled``, never run, and a
replay runs them (services/events/rate.py)."""

from __future__ import annotations

import pytest

from chalicelib import assembly
from chalicelib.domain.errors import ValidationError
from chalicelib.services import deliveries, events, triggers
from chalicelib.store.events import EventModel
from tests.scenarios import deliver, webhook_trigger

pytestmark = pytest.mark.usefixtures("fresh_secrets")

LIMIT = {"max": 3, "per_s": 60}


def _ran(aws, runner) -> list[str]:
    """The statuses of the runs the queue's messages made (a spare message is no run)."""
    return [s for s in aws.drain(runner) if s != "dropped"]


def _statuses(trigger_id: str) -> dict[int, str]:
    """Each stored event's status, by the payload's ``n``."""
    import json

    return {
        json.loads(e.body)["n"]: e.status
        for e in EventModel.scan()
        if e.trigger_id == trigger_id and e.body
    }


def test_events_beyond_the_rate_are_stored_throttled_recorded_and_never_run(aws, clock, root, ran):
    created = webhook_trigger(root, clock, event={"rate_limit": LIMIT})
    answers = [deliver(created, clock, n) for n in range(1, 6)]
    assert [status for status, _ in answers] == [202] * 5
    assert [a.get("throttled") for _, a in answers] == [None, None, None, True, True]
    assert all(a["event_id"] for _, a in answers)
    assert [a["run_id"] is None for _, a in answers] == [False, False, False, True, True]

    runner = assembly.build_runner(clock=clock)
    assert _ran(aws, runner) == ["succeeded"] * 3
    assert sorted(ran) == [1, 2, 3]
    assert _statuses(created["id"]) == {
        1: "succeeded",
        2: "succeeded",
        3: "succeeded",
        4: "throttled",
        5: "throttled",
    }

    # The heartbeat's sweep of pending events never picks a throttled one up.
    clock.advance(600)
    assembly.tick(now=clock())
    assert _ran(aws, runner) == []
    assert sorted(ran) == [1, 2, 3]

    rows = deliveries.list_deliveries(root, created["id"], {"outcome": "throttled"})["items"]
    assert sorted(r["event_id"] for r in rows) == sorted(a["event_id"] for _, a in answers[3:])
    listed = events.list_events(root, created["id"], {"status": "throttled"})["items"]
    assert len(listed) == 2
    # Every delivery is listed once: the accepted ones from their events, the throttled
    # ones from their rows (never also as accepted from the event they stored).
    every = deliveries.list_deliveries(root, created["id"], {})["items"]
    outcomes = [r["outcome"] for r in every]
    assert sorted(outcomes) == ["accepted"] * 3 + ["throttled"] * 2


def test_a_throttled_event_runs_when_replayed(aws, clock, root, ran):
    created = webhook_trigger(root, clock, event={"rate_limit": {"max": 1, "per_s": 60}})
    deliver(created, clock, 1)
    _, throttled = deliver(created, clock, 2)
    assert throttled["throttled"] is True
    runner = assembly.build_runner(clock=clock)
    assert _ran(aws, runner) == ["succeeded"]
    replayed = events.replay_event(root, throttled["event_id"], now=clock())
    assert _ran(aws, runner) == ["succeeded"]
    assert sorted(ran) == [1, 2]
    runs = triggers.list_trigger_runs(root, created["id"], {})["items"]
    assert replayed["run_id"] in {r["id"] for r in runs}


def test_a_new_window_runs_again_and_a_duplicate_of_a_throttled_event_stays_throttled(
    aws, clock, root, ran
):
    created = webhook_trigger(root, clock, event={"rate_limit": {"max": 1, "per_s": 60}})
    deliver(created, clock, 1)
    _, second = deliver(created, clock, 2)
    status, again = deliver(created, clock, 2)
    assert status == 200
    assert again == {
        "event_id": second["event_id"],
        "run_id": None,
        "duplicate": True,
        "throttled": True,
    }
    clock.advance(60)  # the next window
    assert "throttled" not in deliver(created, clock, 3)[1]
    assert _ran(aws, assembly.build_runner(clock=clock)) == ["succeeded", "succeeded"]
    assert sorted(ran) == [1, 3]


def test_no_rate_limit_costs_no_counter(aws, clock, root, ran):
    from chalicelib.store.deliveries import DeliveryModel

    created = webhook_trigger(root, clock)
    for n in range(5):
        deliver(created, clock, n)
    assert not [d for d in DeliveryModel.scan() if d.sk.startswith("#r#")]


@pytest.mark.parametrize(
    ("limit", "field"),
    [
        ({"max": 0, "per_s": 60}, "event.rate_limit.max"),
        ({"max": 3, "per_s": 0}, "event.rate_limit.per_s"),
        ({"max": 3}, "event.rate_limit.per_s"),
        ({"max": 3, "per_s": 60, "burst": 2}, "event.rate_limit.burst"),
        ({"max": "3", "per_s": 60}, "event.rate_limit.max"),
        ([3, 60], "event.rate_limit"),
    ],
)
def test_a_bad_rate_limit_is_a_422_naming_the_field(aws, clock, root, limit, field):
    with pytest.raises(ValidationError) as caught:
        webhook_trigger(root, clock, event={"rate_limit": limit})
    assert caught.value.field == field


def test_a_patch_sets_and_removes_the_rate_limit(aws, clock, root, ran):
    created = webhook_trigger(root, clock)
    patched = triggers.patch_trigger(
        root,
        created["id"],
        {
            "version": created["version"],
            "event": {"source": "webhook", "rate_limit": {"max": 1, "per_s": 60}},
        },
        now=clock(),
    )
    assert patched["event"]["rate_limit"] == {"max": 1, "per_s": 60}
    deliver(created, clock, 1)
    assert deliver(created, clock, 2)[1]["throttled"] is True
    patched = triggers.patch_trigger(
        root,
        created["id"],
        {"version": patched["version"], "event": {"source": "webhook", "rate_limit": None}},
        now=clock(),
    )
    assert patched["event"].get("rate_limit") is None
    assert "throttled" not in deliver(created, clock, 3)[1]


def test_the_delivery_log_shows_each_throttled_delivery_once(aws, clock, root, ran):
    created = webhook_trigger(root, clock, event={"rate_limit": {"max": 1, "per_s": 60}})
    first = deliver(created, clock, 1)[1]
    clock.advance(0.01)
    second = deliver(created, clock, 2)[1]
    rows = deliveries.list_deliveries(root, created["id"], {})["items"]
    assert sorted((r["outcome"], r["event_id"]) for r in rows) == sorted(
        [("accepted", first["event_id"]), ("throttled", second["event_id"])]
    )
