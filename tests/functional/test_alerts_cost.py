"""Alerts cost nothing on a fire that makes no transition: the runner's AWS calls per
fire are the same with alerts configured (a queue, a tenant-wide policy) as without them;
a failing fire adds exactly one call (the transition's SendMessageBatch)."""

from __future__ import annotations

from collections import Counter

from bench.calls import CallLog
from chalicelib import assembly
from chalicelib.services import triggers
from chalicelib.services.alerts import policies
from chalicelib.settings import reset_settings
from chalicelib.store.aws import client
from chalicelib.workflows import REGISTRY, Fire, Result, Workflow

FIRES = 3


def _runner_calls(aws, clock) -> tuple[int, Counter]:
    """The runner's AWS calls of one minute's fires (the tick's apart), and their kinds."""
    clock.advance(60)
    assembly.tick(now=clock())
    aws.purge_delays(clock())
    with CallLog() as log:
        statuses = aws.drain(assembly.build_runner(clock=clock))
    calls = [c for c in log.since() if not (c.operation == "ReceiveMessage" and not c.items_read)]
    assert len([s for s in statuses if s != "dropped"]) == FIRES, statuses
    return len(calls), Counter(f"{c.service}:{c.operation}" for c in calls)


def test_a_fire_without_a_transition_makes_no_extra_call_and_a_failing_one_makes_one(
    aws, clock, root, monkeypatch, tmp_path
):
    mode = {"fail": False}

    def run(fire: Fire) -> Result:
        if mode["fail"]:
            raise RuntimeError("down")
        return Result(output={"ok": True})

    monkeypatch.setitem(REGISTRY, "toggle", Workflow(name="toggle", func=run))
    for _ in range(FIRES):
        triggers.create_trigger(
            root, {"workflow": "toggle", "schedule": {"interval_s": 60}}, now=clock()
        )
    for _ in range(2):  # warm: clients built, rows standing
        _runner_calls(aws, clock)
    before, before_kinds = _runner_calls(aws, clock)
    mode["fail"] = True
    failing_before, failing_before_kinds = _runner_calls(aws, clock)
    mode["fail"] = False
    _runner_calls(aws, clock)  # the streak ends (no alerts yet: nothing is queued)

    url = client("sqs").create_queue(QueueName="cronhook-alerts")["QueueUrl"]
    monkeypatch.setenv("CRONHOOK_ALERTS_QUEUE_URL", url)
    monkeypatch.setenv("CRONHOOK_DATA_DIR", str(tmp_path))
    reset_settings()
    policies.create_alert(
        root,
        {"name": "all", "on": ["failed", "recovered", "disabled", "late"],
         "channels": [{"type": "email", "to": ["ops@example.com"]}]},
        now=clock(),
    )  # fmt: skip
    after, after_kinds = _runner_calls(aws, clock)
    assert (after, after_kinds) == (before, before_kinds)

    mode["fail"] = True
    failing, failing_kinds = _runner_calls(aws, clock)
    # One transition message per failed fire, nothing else.
    assert failing_kinds - failing_before_kinds == Counter({"sqs:SendMessageBatch": FIRES})
    assert failing == failing_before + FIRES
    print(
        f"\nrunner AWS calls per fire: a fire without a transition {before / FIRES:.2f} "
        f"before alerts, {after / FIRES:.2f} with alerts; a failing fire "
        f"{failing_before / FIRES:.2f} before, {failing / FIRES:.2f} with alerts"
    )
