"""Replay (services/events/replay.py): a stored event runs again as a new run."""

from __future__ import annotations

import pytest

from chalicelib import assembly
from chalicelib.domain.errors import Conflict, NotFound
from chalicelib.services import events, triggers
from tests.scenarios import deliver, webhook_trigger

pytestmark = pytest.mark.usefixtures("fresh_secrets")


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
