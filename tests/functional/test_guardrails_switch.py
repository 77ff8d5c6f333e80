"""The triggers_enabled switch on the moto server: off means nothing fires; on resumes calmly."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from chalicelib import assembly, wiring
from chalicelib.domain.errors import ServiceUnavailable
from chalicelib.services import events, switch, triggers
from chalicelib.settings import reset_settings
from chalicelib.store import kms
from chalicelib.store.aws import client
from chalicelib.store.sqs import FireMessage
from tests.signing import signed_headers

PARAM = "/cronhook/test/triggers_enabled"


@pytest.fixture(autouse=True)
def switch_reset():
    switch.set_override(None)
    switch._cache.clear()
    kms.clear_cache()
    yield
    switch.set_override(None)
    switch._cache.clear()


def _runs(root, trigger_id):
    return triggers.list_trigger_runs(root, trigger_id, {})["items"]


def test_off_nothing_fires_and_on_resumes_without_a_burst(aws, clock, root, row_form):
    trigger_id = triggers.create_trigger(
        root, {"workflow": "echo", "schedule": {"interval_s": 60}}, now=clock()
    )["id"]
    runner = assembly.build_runner(clock=clock)
    clock.advance(60)
    # Queued just before the switch (this slot, and the next within the lookahead).
    assert wiring.heartbeat_once(clock()).due == 2
    switch.set_override(False)

    # A fire already queued does not run: recorded skipped, not a failure.
    assert aws.drain(runner) == ["skipped"]
    [skipped] = _runs(root, trigger_id)
    assert skipped["error"] == "triggers are switched off (triggers_enabled)"
    # The heartbeat does nothing, for ten minutes of slots.
    for _ in range(10):
        clock.advance(60)
        assert wiring.heartbeat_once(clock()) is None
    assert aws.receive() == []
    with pytest.raises(ServiceUnavailable):
        triggers.fire_now(root, trigger_id, now=clock())
    view = triggers.get_trigger_view(root, trigger_id)
    assert (view["status"], view["consecutive_failures"]) == ("active", 0)

    # On again: one fire now, not one per missed slot, then the usual cadence.
    switch.set_override(True)
    clock.advance(30)
    report = wiring.heartbeat_once(clock())
    # The slot left due while off goes out again (no tick ran while its window passed),
    # with the next two (the 90 s lookahead: a period and its margin); its old message is
    # dropped as a spare. Keyed, it is the row's overdue slot; standing, the window's
    # first missed slot, whose message runs the row's pointer (the slot left due).
    expected = (1, 2) if row_form == "keyed" else (0, 3)
    assert (report.overdue, report.due) == expected
    assert [s for s in aws.drain(runner) if s != "dropped"] == ["succeeded"]
    clock.advance(60)
    assert wiring.heartbeat_once(clock()).due == 1
    assert [s for s in aws.drain(runner) if s != "dropped"] == ["succeeded"]
    statuses = [r["status"] for r in _runs(root, trigger_id)]
    # The slots passed while off are each recorded missed (catchup: latest, the default).
    assert [s for s in statuses if s != "missed"] == ["succeeded", "succeeded", "skipped"]
    assert "missed" in statuses


def test_an_event_accepted_before_the_switch_went_off_waits_for_it(aws, clock, root):
    created = triggers.create_trigger(
        root, {"workflow": "echo", "event": {"source": "webhook"}}, now=clock()
    )
    body = json.dumps({"n": 1}).encode()
    headers = signed_headers("webhook", created["webhook"]["secret"], body, ts=0, delivery="d1")
    token = created["webhook"]["url"].rsplit("/", 1)[1]
    status, answer = events.receive(token, body=body, headers=headers, now=clock())
    assert status == 202
    switch.set_override(False)
    runner = assembly.build_runner(clock=clock)
    [message] = aws.receive()
    aws.delete([message])
    assert runner.handle(FireMessage.parse(message["Body"])) == "deferred"
    assert _runs(root, created["id"]) == []
    # While off, ingress refuses new deliveries and stores nothing.
    with pytest.raises(ServiceUnavailable):
        events.receive(token, body=body, headers=headers, now=clock())
    switch.set_override(True)
    clock.advance(60)
    assert aws.drain(runner) == ["succeeded"]
    [run] = _runs(root, created["id"])
    assert run["event_id"] == answer["event_id"] and run["output"] == {"n": 1}


def test_an_at_triggers_only_fire_queued_before_the_switch_went_off_waits(aws, clock, root):
    at = clock() + timedelta(seconds=60)
    trigger_id = triggers.create_trigger(
        root, {"workflow": "echo", "schedule": {"at": at.isoformat()}}, now=clock()
    )["id"]
    clock.advance(60)
    assert wiring.heartbeat_once(clock()).due == 1
    switch.set_override(False)
    runner = assembly.build_runner(clock=clock)
    [message] = aws.receive()
    aws.delete([message])
    assert runner.handle(FireMessage.parse(message["Body"])) == "deferred"
    view = triggers.get_trigger_view(root, trigger_id)
    assert (view["status"], view["run_count"]) == ("active", 0)
    clock.advance(3600)
    switch.set_override(True)
    assert aws.drain(runner) == ["succeeded"]
    view = triggers.get_trigger_view(root, trigger_id)
    assert (view["state"], view["disabled_reason"]) == ({"count": 1}, "max_runs")


def test_the_switch_is_an_ssm_parameter_read_with_a_short_cache(aws, clock, monkeypatch):
    monkeypatch.setenv("CRONHOOK_SWITCH_PARAM", PARAM)
    reset_settings()
    assert switch.triggers_enabled(now=clock()) is True  # no parameter: on
    ssm = client("ssm")
    ssm.put_parameter(Name=PARAM, Value="off", Type="String")
    clock.advance(switch.CACHE_S)
    assert switch.triggers_enabled(now=clock()) is False
    assert wiring.heartbeat_once(clock()) is None
    ssm.put_parameter(Name=PARAM, Value="on", Type="String", Overwrite=True)
    clock.advance(switch.CACHE_S - 1)
    assert switch.triggers_enabled(now=clock()) is False  # still cached
    clock.advance(1)
    assert switch.triggers_enabled(now=clock()) is True
    assert wiring.heartbeat_once(clock()) is not None
