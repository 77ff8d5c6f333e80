"""``events.EVENT_RUNS``, the event trigger's run policy, driven through a ``Pipeline`` alone.

The runner is not involved: the event is started as the runner would start it
(``start_event_run``), then the policy's hooks are called as the pipeline calls them.
"""

from __future__ import annotations

import json

import pytest

from chalicelib.services import events, triggers
from chalicelib.services.pipeline import Pipeline, RunContext, RunPolicy
from chalicelib.store import claims, kms, payloads
from chalicelib.store import triggers as triggers_store
from chalicelib.store.events import EventModel
from chalicelib.store.sqs import FireMessage
from tests.signing import signed_headers


@pytest.fixture(autouse=True)
def _fresh_secret_cache():
    kms.clear_cache()


def _trigger(root, clock) -> dict:
    return triggers.create_trigger(
        root, {"workflow": "echo", "event": {"source": "webhook", "max_attempts": 2}}, now=clock()
    )


def _deliver(created: dict, clock, n: int) -> dict:
    body = json.dumps({"type": "job", "n": n}).encode()
    headers = signed_headers("webhook", created["webhook"]["secret"], body, ts=0, delivery=f"p{n}")
    token = created["webhook"]["url"].rsplit("/", 1)[1]
    status, answer = events.receive(token, body=body, headers=headers, now=clock())
    assert status == 202
    return answer


def _started(answer: dict, created: dict, clock) -> RunContext:
    message = FireMessage(
        run_id=answer["run_id"],
        trigger_id=created["id"],
        surface="event",
        event_id=answer["event_id"],
    )
    lease_ms = int(clock().timestamp() * 1000) + 60_000
    started = events.start_event_run(message, lease_ms=lease_ms, now=clock())
    assert started is not None
    item, event = started
    return RunContext(
        item=item, spec=payloads.load_spec(item), message=message, now=clock(), event=event
    )


def _settle(ctx: RunContext, status: str) -> None:
    """What the runner does before the after-settle hooks: free the slot."""
    assert claims.settle_run(
        ctx.item.id,
        run_id=ctx.message.run_id,
        succeeded=status == "succeeded",
        failure_counts=True,
        last_run={"id": ctx.message.run_id, "status": status, "finished_at": 1, "error": None},
        next_fire_override_ms=None,
        shard="0",
    )
    ctx.status = status


def test_the_event_policy_is_a_run_policy_with_its_own_hooks():
    policy = events.EVENT_RUNS
    assert isinstance(policy, events.EventRunPolicy) and isinstance(policy, RunPolicy)
    for hook in ("fire_fields", "after_settle", "after_lost"):
        assert getattr(type(policy), hook) is not getattr(RunPolicy, hook)


def test_fire_fields_give_the_whole_body_as_payload_and_the_clipped_headers(aws, clock, root):
    created = _trigger(root, clock)
    ctx = _started(_deliver(created, clock, 7), created, clock)
    fields = Pipeline((events.EVENT_RUNS,)).fire_fields(ctx)
    assert fields["payload"] == {"type": "job", "n": 7}
    stored = EventModel.get(ctx.event.id, consistent_read=True)
    assert fields["headers"] == json.loads(stored.headers)
    assert "content-type" in {k.lower() for k in fields["headers"]}


def test_after_settle_records_the_attempt_and_pulls_the_next_event(aws, clock, root):
    created = _trigger(root, clock)
    first = _deliver(created, clock, 1)
    clock.advance(0.01)
    # The trigger had room: ingress sent the second its own message too (it does not read
    # the queue; a runner that takes that message runs the first in its place).
    second = _deliver(created, clock, 2)
    ctx = _started(first, created, clock)
    _settle(ctx, "succeeded")
    aws.purge_delays()
    before = len(aws.receive())
    Pipeline((events.EVENT_RUNS,)).after_settle(ctx)
    assert EventModel.get(first["event_id"], consistent_read=True).status == "succeeded"
    pulled = [FireMessage.parse(m["Body"]) for m in aws.receive()]
    assert before == 2 and [m.event_id for m in pulled] == [second["event_id"]]


def test_after_settle_of_a_failed_attempt_retries_it_until_attempts_run_out(aws, clock, root):
    created = _trigger(root, clock)
    answer = _deliver(created, clock, 1)
    ctx = _started(answer, created, clock)
    _settle(ctx, "failed")
    events.EVENT_RUNS.after_settle(ctx)
    event = EventModel.get(answer["event_id"], consistent_read=True)
    assert (event.status, event.attempt) == ("pending", 1) and event.retry_at is not None
    clock.advance(3)  # the first backoff is 2 s
    ctx = _started(answer, created, clock)
    _settle(ctx, "failed")
    events.EVENT_RUNS.after_settle(ctx)
    event = EventModel.get(answer["event_id"], consistent_read=True)
    assert (event.status, event.attempt) == ("failed", 2)


def test_after_lost_counts_a_reaped_run_as_a_failed_attempt(aws, clock, root):
    created = _trigger(root, clock)
    answer = _deliver(created, clock, 1)
    ctx = _started(answer, created, clock)
    entry = triggers_store.in_flight_of(ctx.item)[ctx.message.run_id]
    events.EVENT_RUNS.after_lost(item=ctx.item, run_id=ctx.message.run_id, entry=entry, now=clock())
    event = EventModel.get(answer["event_id"], consistent_read=True)
    assert (event.status, event.attempt) == ("pending", 1) and event.retry_at is not None


def test_a_schedule_trigger_is_none_of_the_event_policys_business(aws, clock, root):
    created = triggers.create_trigger(
        root, {"workflow": "echo", "schedule": {"interval_s": 60}}, now=clock()
    )
    item = triggers_store.get_trigger(created["id"])
    message = FireMessage(run_id="run_x", trigger_id=item.id, surface="manual")
    ctx = RunContext(item=item, spec=payloads.load_spec(item), message=message, now=clock())
    assert events.EVENT_RUNS.fire_fields(ctx) == {}
    events.EVENT_RUNS.after_settle(ctx)  # nothing to pull, nothing to record: no error
    events.EVENT_RUNS.after_lost(item=item, run_id="run_x", entry={"k": "m"}, now=clock())
