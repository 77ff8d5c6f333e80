"""A run that started and then died is ``lost`` with its ``started_at`` (issue 26, item 10).

A run in flight has no record of its own: it is an entry of its trigger's ``in_flight``
map until it settles. The entry now keeps when the runner started it (``a``), so the
run is listed ``running`` with its ``started_at`` while it runs, and the ``lost`` record
the reaper writes when its runner died says when it started (it used to say null, as if
it had never run).
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from chalicelib import assembly
from chalicelib.domain.epoch_ms import ms
from chalicelib.services import triggers
from chalicelib.services.runner import core as runner_core
from chalicelib.store.sqs import FireMessage
from chalicelib.workflows import REGISTRY, Fire, Result, Workflow
from tests.scenarios import create_scheduled, runs_of


class RunnerDied(BaseException):
    """The runner's process ending mid-run (nothing after it runs: no settle)."""


def _iso(instant) -> str:
    return instant.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@pytest.fixture
def dies(monkeypatch, root):
    """Workflow ``dies``: its first run reads itself (as a viewer would), then its runner
    dies before it settles; later runs succeed."""
    seen: list[dict] = []

    def run(fire: Fire) -> Result:
        if not seen:
            seen.append(triggers.get_run_view(root, fire.fire_id))
        return Result()

    real_settle = runner_core.settle

    def settle_unless_dead(ctx, *args, **kwargs):
        if seen and ctx.message.run_id == seen[0]["id"]:
            raise RunnerDied()  # the process ends between the workflow and its settle
        return real_settle(ctx, *args, **kwargs)

    monkeypatch.setitem(REGISTRY, "dies", Workflow(name="dies", func=run))
    monkeypatch.setattr(runner_core, "settle", settle_unless_dead)
    return seen


def test_a_run_whose_runner_died_is_recorded_lost_with_when_it_started(aws, clock, root, dies):
    trigger_id = create_scheduled(root, clock, workflow="dies", overlap="skip")
    clock.advance(60)
    assembly.tick(now=clock())
    aws.purge_delays()
    (message,) = [
        m
        for m in aws.receive(visibility=0)
        if FireMessage.parse(m["Body"]).scheduled_ms == ms(clock())
    ]
    fire = FireMessage.parse(message["Body"])
    started = clock()
    with pytest.raises(RunnerDied):
        assembly.build_runner(clock=clock).handle(fire)
    aws.delete([message])

    (running,) = dies
    assert (running["status"], running["started_at"]) == ("running", _iso(started))

    # Past its lease, the next tick's claim reaps it: recorded lost, started when it did.
    clock.advance(3600)
    assembly.tick(now=clock())
    aws.drain(assembly.build_runner(clock=clock))
    lost = [r for r in runs_of(trigger_id) if r.status == "lost"]
    assert [r.run_id for r in lost] == [fire.run_id]
    assert lost[0].started_at == ms(started)
    view = triggers.get_run_view(root, fire.run_id)
    assert (view["status"], view["started_at"]) == ("lost", _iso(started))
    assert ms(started) < lost[0].finished_at


def test_a_claim_reaped_before_it_started_stays_without_started_at(aws, clock, root):
    """A manual fire claimed but never started (its message lost): lost, never started."""
    trigger_id = create_scheduled(root, clock, schedule={"interval_s": 3600})
    answer = triggers.fire_now(root, trigger_id, now=clock())
    aws.purge_delays()
    aws.delete(aws.receive(visibility=0))  # the message never reaches a runner
    clock.advance(timedelta(hours=2).total_seconds())
    assembly.tick(now=clock())
    aws.drain(assembly.build_runner(clock=clock))
    (lost,) = [r for r in runs_of(trigger_id) if r.run_id == answer["run_id"]]
    assert lost.status == "lost" and lost.started_at is None
