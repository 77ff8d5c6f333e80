"""Alerts end to end on the moto server: runs settle, transitions are queued, the worker
notifies (email to the outbox, a webhook on a local receiver) and puts lifecycle events on
the bus. Time is the test's clock; the alerts queue is drained by hand at explicit
instants (``AlertsQueue``)."""

from __future__ import annotations

import json
import time
from datetime import timedelta

import pytest

from chalicelib import assembly
from chalicelib.domain.alerts import Transition
from chalicelib.domain.epoch_ms import ms
from chalicelib.domain.signatures.standard import verify_standard
from chalicelib.services import triggers
from chalicelib.services.alerts import policies
from chalicelib.services.alerts.detect import queue_transitions
from chalicelib.services.alerts.sweep import sweep_findings as sweep
from chalicelib.settings import reset_settings
from chalicelib.store import kms
from chalicelib.store.aws import client
from chalicelib.workflows import REGISTRY, Fire, Result, Workflow
from tests.functional.alerts_helpers import AlertsQueue, Receiver, outbox, subjects
from tests.scenarios import deliver, fire_next, webhook_trigger


@pytest.fixture
def alerting(aws, monkeypatch, tmp_path) -> AlertsQueue:
    """The alerts queue, and the outbox under a data dir of this test."""
    url = client("sqs").create_queue(QueueName="cronhook-alerts")["QueueUrl"]
    monkeypatch.setenv("CRONHOOK_ALERTS_QUEUE_URL", url)
    monkeypatch.setenv("CRONHOOK_DATA_DIR", str(tmp_path))
    reset_settings()
    kms.clear_cache()
    return AlertsQueue(url)


@pytest.fixture
def flip(monkeypatch) -> dict:
    """Workflow ``flip`` fails while ``mode["fail"]`` is true, and succeeds otherwise."""
    mode = {"fail": True}

    def run(fire: Fire) -> Result:
        if mode["fail"]:
            raise RuntimeError("upstream answered 503")
        return Result(output={"ok": True})

    monkeypatch.setitem(REGISTRY, "flip", Workflow(name="flip", func=run))
    return mode


def _policy(root, clock, **body) -> dict:
    body.setdefault("name", "ops")
    body.setdefault("channels", [{"type": "email", "to": ["ops@example.com"]}])
    return policies.create_alert(root, body, now=clock())


def _runner(clock):
    return assembly.build_runner(clock=clock)


def test_three_failures_in_a_row_email_once_then_once_more_when_it_recovers(
    aws, clock, root, alerting, flip, tmp_path
):
    policy = _policy(root, clock, on=["failed", "recovered"], failures_in_a_row=3)
    trigger_id = triggers.create_trigger(
        root, {"workflow": "flip", "schedule": {"interval_s": 60}, "title": "nightly"}, now=clock()
    )["id"]
    for n in range(1, 5):
        assert fire_next(aws, clock, _runner(clock)) == ["failed"]
        alerting.deliver(clock())
        # Nothing before the third failure, one message after it, none for the fourth.
        assert len(outbox(tmp_path)) == (0 if n < 3 else 1), n
    flip["fail"] = False
    assert fire_next(aws, clock, _runner(clock)) == ["succeeded"]
    alerting.deliver(clock())
    found = subjects(tmp_path)
    assert len(found) == 2
    assert "nightly failed" in found[0] and "upstream answered 503" in found[0]
    assert "nightly recovered" in found[1]
    items = policies.list_notifications(root, policy["id"], {})["items"]
    assert [(i["kind"], i["outcome"], i["trigger_id"]) for i in items] == [
        ("recovered", "sent", trigger_id),
        ("failed", "sent", trigger_id),
    ]


@pytest.mark.parametrize("how", ["enable", "patch"])
def test_a_trigger_disabled_by_failures_fixed_and_enabled_recovers_with_its_first_success(
    aws, clock, root, alerting, flip, tmp_path, how
):
    # The enable clears the streak (max_failures counts from it), not the alert's: the
    # first success after it ends the failing streak that was alerted.
    policy = _policy(root, clock, on=["failed", "disabled", "recovered"], failures_in_a_row=2)
    trigger_id = triggers.create_trigger(
        root,
        {
            "workflow": "flip",
            "schedule": {"interval_s": 60},
            "title": "nightly",
            "limits": {"max_failures": 2},
        },
        now=clock(),
    )["id"]
    for _ in range(2):
        assert fire_next(aws, clock, _runner(clock)) == ["failed"]
    alerting.deliver(clock())
    assert triggers.get_trigger_view(root, trigger_id)["enabled"] is False
    flip["fail"] = False
    if how == "enable":
        triggers.set_enabled(root, trigger_id, enabled=True, now=clock())
    else:
        triggers.patch_trigger(root, trigger_id, {"enabled": True}, now=clock())
    assert triggers.get_trigger_view(root, trigger_id)["enabled"] is True
    assert fire_next(aws, clock, _runner(clock)) == ["succeeded"]
    alerting.deliver(clock())
    assert fire_next(aws, clock, _runner(clock)) == ["succeeded"]  # once: the streak ended
    alerting.deliver(clock())
    items = policies.list_notifications(root, policy["id"], {})["items"]
    kinds = [i["kind"] for i in items]
    assert kinds[0] == "recovered" and sorted(kinds) == ["disabled", "failed", "recovered"]


def test_a_trigger_disabled_by_failures_puts_trigger_disabled_on_the_bus_and_an_eventbridge_trigger_runs_once(
    aws, clock, root, alerting, flip, monkeypatch
):
    from chalicelib.sources.ingest import handle_message as ingest
    from devstack.resources import create_sources

    for name, value in create_sources().items():
        monkeypatch.setenv(name, value)
    reset_settings()
    listener = triggers.create_trigger(
        root,
        {
            "workflow": "echo",
            "event": {
                "source": "eventbridge",
                "pattern": {"source": ["cronhook"], "detail-type": ["Trigger Disabled"]},
            },
        },
        now=clock(),
    )["id"]
    failing = triggers.create_trigger(
        root,
        {"workflow": "flip", "schedule": {"interval_s": 60}, "limits": {"max_failures": 2}},
        now=clock(),
    )["id"]
    assert fire_next(aws, clock, _runner(clock)) == ["failed"]
    assert fire_next(aws, clock, _runner(clock)) == ["failed"]
    assert triggers.get_trigger_view(root, failing)["disabled_reason"] == "failures"
    alerting.drain(clock())  # Run Failed twice, Trigger Disabled once: all on the bus
    sqs = client("sqs")
    ingest_url = sqs.get_queue_url(QueueName="cronhook-ingest")["QueueUrl"]
    delivered = sqs.receive_message(QueueUrl=ingest_url, MaxNumberOfMessages=10)["Messages"]
    assert len(delivered) == 1  # the rule's pattern let only Trigger Disabled through
    for message in delivered:
        ingest(message["Body"], now=clock())
    assert aws.drain(_runner(clock)) == ["succeeded"]
    runs = triggers.list_trigger_runs(root, listener, {})["items"]
    assert len(runs) == 1
    output = triggers.get_run_view(root, runs[0]["id"])["output"]
    assert output["source"] == "cronhook" and output["detail-type"] == "Trigger Disabled"
    assert output["detail"]["trigger_id"] == failing
    assert output["detail"]["tenant_id"] == "local"
    assert output["detail"]["reason"] == "failures"


def test_two_hundred_triggers_failing_in_one_minute_send_one_digest_per_channel(
    aws, clock, root, alerting, monkeypatch, tmp_path
):
    monkeypatch.setenv("CRONHOOK_ALLOW_PRIVATE_TARGETS", "1")
    reset_settings()
    with Receiver() as hook:
        created = _policy(
            root,
            clock,
            on=["failed"],
            channels=[
                {"type": "email", "to": ["ops@example.com"]},
                {"type": "webhook", "url": hook.url + "/cronhook"},
            ],
        )
        # 200 runs of 200 triggers failed in the same minute: what their settles queue
        # (running 200 fires on the moto server would take minutes; the runs' own
        # transitions are the other tests').
        at = clock() + timedelta(seconds=20)
        queue_transitions(
            [
                Transition(
                    kind="failed",
                    tenant="local",
                    trigger_id=f"trg_storm{n:03d}",
                    at_ms=ms(at) + n * 100,
                    run_id=f"trg_storm{n:03d}.{ms(at):013d}s",
                    error="upstream answered 503",
                    consecutive_failures=1,
                )
                for n in range(200)
            ]
        )
        alerting.deliver(at + timedelta(seconds=25))
        assert len(outbox(tmp_path)) == 1
        assert "200 notifications" in subjects(tmp_path)[0]
        assert len(hook.requests) == 1
        path, headers, body = hook.requests[0]
        verify_standard([created["signing_secret"]], headers, body, now=time.time())
        digest = json.loads(body)
        assert digest["count"] == 200 and digest["type"] == "cronhook.alert"
        assert len(digest["notifications"]) == 100
        assert "... and 195 more." in digest["text"]
    items = []
    page: dict = {}
    while True:
        answer = policies.list_notifications(root, created["id"], {"limit": "200", **page})
        items += answer["items"]
        if not answer["next_cursor"]:
            break
        page = {"cursor": answer["next_cursor"]}
    assert len(items) == 400 and {i["outcome"] for i in items} == {"sent"}


def test_late_fires_for_a_slot_held_back_past_its_threshold(aws, clock, root, alerting, tmp_path):
    policy = _policy(root, clock, on=["late"], late_after_s=300)
    trigger_id = triggers.create_trigger(
        root, {"workflow": "echo", "schedule": {"interval_s": 3600}}, now=clock()
    )["id"]
    slot = clock() + timedelta(seconds=3600)
    # The runners are stopped: the slot's message waits in the queue, nobody claims it.
    assembly.tick(now=slot - timedelta(seconds=30))
    assert sweep(now=slot + timedelta(seconds=240)) == 0  # 4 minutes: not late yet
    assert sweep(now=slot + timedelta(seconds=300)) == 1
    assert sweep(now=slot + timedelta(seconds=360)) == 0  # the same lateness is not news
    alerting.deliver(slot + timedelta(seconds=300))
    items = policies.list_notifications(root, policy["id"], {})["items"]
    assert [(i["kind"], i["trigger_id"], i["outcome"]) for i in items] == [
        ("late", trigger_id, "sent")
    ]
    assert "is late" in subjects(tmp_path)[0]


def test_no_event_fires_for_a_quiet_webhook_trigger(aws, clock, root, alerting):
    policy = _policy(root, clock, on=["no_event"], no_event_for_s=3600)
    heard = webhook_trigger(root, clock, workflow="echo")
    quiet = webhook_trigger(root, clock, workflow="echo")
    clock.advance(1800)
    assert deliver(heard, clock, 1)[0] == 202
    assert sweep(now=clock()) == 0
    clock.advance(1800)  # quiet for an hour; heard half an hour ago
    # As in the stack: the heartbeat tick asks, the alerts function sweeps.
    assembly.tick(now=clock())
    assert "sweep:1" in alerting.drain(clock())
    assert sweep(now=clock() + timedelta(seconds=300)) == 0
    alerting.deliver(clock())
    items = policies.list_notifications(root, policy["id"], {})["items"]
    assert [(i["kind"], i["trigger_id"]) for i in items] == [("no_event", quiet["id"])]


def test_a_channel_that_answers_500_does_not_fail_or_delay_the_run_and_its_notification_is_failed(
    aws, clock, root, alerting, flip, monkeypatch
):
    monkeypatch.setenv("CRONHOOK_ALLOW_PRIVATE_TARGETS", "1")
    reset_settings()
    with Receiver(lambda path, headers, body: 500) as hook:
        policy = _policy(
            root,
            clock,
            on=["failed", "recovered"],
            channels=[{"type": "webhook", "url": hook.url + "/down"}],
        )
        triggers.create_trigger(
            root, {"workflow": "flip", "schedule": {"interval_s": 60}}, now=clock()
        )
        assert fire_next(aws, clock, _runner(clock)) == ["failed"]
        # The run settled without a request to the channel: delivery is the worker's.
        assert hook.requests == []
        alerting.deliver(clock())
        assert len(hook.requests) == 3  # one message, three attempts
        flip["fail"] = False
        assert fire_next(aws, clock, _runner(clock)) == ["succeeded"]
        assert len(hook.requests) == 3
        alerting.deliver(clock())
        assert len(hook.requests) == 6
    items = policies.list_notifications(root, policy["id"], {})["items"]
    assert {(i["kind"], i["outcome"]) for i in items} == {
        ("failed", "failed"),
        ("recovered", "failed"),
    }
    assert all("answered 500" in (i["error"] or "") for i in items)


def test_a_budget_crossing_its_threshold_and_the_disable_that_follows_are_each_told_once(
    aws, clock, root, alerting, monkeypatch, tmp_path
):
    monkeypatch.setitem(
        REGISTRY, "spender", Workflow(name="spender", func=lambda fire: Result(cost_usd=0.45))
    )
    policy = _policy(root, clock, on=["budget", "disabled"], budget_percent=80)
    triggers.create_trigger(
        root,
        {"workflow": "spender", "schedule": {"interval_s": 60},
         "limits": {"max_usd": 1.0, "budget_period": "total"}},
        now=clock(),
    )  # fmt: skip
    assert fire_next(aws, clock, _runner(clock)) == ["succeeded"]  # 45 %: below 80
    alerting.deliver(clock())
    assert outbox(tmp_path) == []
    assert fire_next(aws, clock, _runner(clock)) == ["succeeded"]  # 90 %: crosses 80
    # The next run's estimate does not fit: refused, and the trigger disabled (budget).
    assert fire_next(aws, clock, _runner(clock)) == ["budget_exceeded"]
    alerting.deliver(clock())
    items = policies.list_notifications(root, policy["id"], {})["items"]
    assert sorted(i["kind"] for i in items) == ["budget", "disabled"]
    assert {i["outcome"] for i in items} == {"sent"}


def test_a_persons_pause_is_a_disabled_transition_with_its_note(
    aws, clock, root, alerting, tmp_path
):
    policy = _policy(root, clock, on=["disabled"])
    trigger_id = triggers.create_trigger(
        root, {"workflow": "echo", "schedule": {"interval_s": 60}, "title": "nightly"}, now=clock()
    )["id"]
    triggers.set_enabled(
        root, trigger_id, enabled=False, body={"note": "db migration"}, now=clock()
    )
    alerting.deliver(clock())
    [item] = policies.list_notifications(root, policy["id"], {})["items"]
    assert (item["kind"], item["trigger_id"], item["outcome"]) == ("disabled", trigger_id, "sent")
    assert (
        "was disabled" in subjects(tmp_path)[0] and "manual: db migration" in subjects(tmp_path)[0]
    )


def test_a_run_lost_by_a_dead_runner_is_a_failure_and_the_next_success_recovers_it(
    aws, clock, root, alerting
):
    from chalicelib.store import claims as claims_store
    from chalicelib.store import triggers as triggers_store
    from chalicelib.store.sqs import FireMessage

    policy = _policy(root, clock, on=["failed", "recovered"])
    trigger_id = triggers.create_trigger(
        root, {"workflow": "echo", "schedule": {"interval_s": 60}}, now=clock()
    )["id"]
    clock.advance(60)
    assembly.tick(now=clock())
    aws.purge_delays()
    [(fire, message)] = [
        (parsed, m)
        for m in aws.receive(visibility=0)
        if (parsed := FireMessage.parse(m["Body"])).scheduled_ms == ms(clock())
    ]
    # A runner claims (and starts) the slot, then its process dies.
    outcome, _ = claims_store.claim_slot_and_start(
        trigger_id,
        slot_ms=fire.scheduled_ms,
        sched=fire.sched,
        next_slot_ms=fire.scheduled_ms + 60_000,
        run_id=fire.run_id,
        lease_ms=ms(clock()) + 360_000,
        capacity=1,
        shard=triggers_store.shard_of(trigger_id, 4),
    )
    assert outcome == claims_store.ClaimResult.CLAIMED
    aws.delete([message])
    clock.advance(420)  # past the lease: the next claim reaps it (lost), then runs
    assembly.tick(now=clock())
    assert "succeeded" in aws.drain(_runner(clock))
    alerting.deliver(clock())
    items = policies.list_notifications(root, policy["id"], {})["items"]
    assert sorted((i["kind"], i["run_id"] == fire.run_id) for i in items) == [
        ("failed", True),
        ("recovered", False),
    ]
