"""The heartbeat's event sweep (services/events/event_sweep.py): an event stored but never
sent is sent once it is overdue.
"""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from chalicelib import assembly
from chalicelib.services import events, triggers
from chalicelib.store.aws import client
from tests.scenarios import deliver, event_of, webhook_trigger

pytestmark = pytest.mark.usefixtures("fresh_secrets")


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
