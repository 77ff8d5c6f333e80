"""Budgets through the runner on the moto server: reserve, reconcile, the crossing run, refusal."""

from __future__ import annotations

import threading
from functools import partial

from chalicelib import assembly
from chalicelib.services import triggers
from chalicelib.services.runner import RunContext
from chalicelib.store import ledger
from chalicelib.store import state as state_store
from chalicelib.store.sqs import FireMessage
from chalicelib.workflows import Result, workflow
from tests.scenarios import create_scheduled, fire_next

GATE = threading.Event()


@workflow("test-gated-metered")
def gated_metered(fire):
    """Costs 0.5; once its state says so, waits at the gate (to hold runs in flight)."""
    if (fire.state or {}).get("gate"):
        GATE.wait(timeout=20)
    return Result(state={"gate": True}, cost_usd=0.5)


_create = partial(create_scheduled, workflow="echo")


def _set_state(trigger_id, state):
    _, version = state_store.get_state(trigger_id)
    assert state_store.write_state(trigger_id, state, expected_version=version)


def _runs(root, trigger_id):
    return triggers.list_trigger_runs(root, trigger_id, {})["items"]


def test_the_run_that_crosses_the_budget_stands_and_the_trigger_stops_after_it(aws, clock, root):
    trigger_id = _create(
        root,
        clock,
        state={"cost_usd": 0.3},
        limits={"max_usd": 1, "budget_period": "day"},
    )
    runner = assembly.build_runner(clock=clock)
    assert fire_next(aws, clock, runner) == ["succeeded"]
    # The estimate is now the last cost (0.3): 0.3 spent + 0.3 <= 1, so the next run may
    # start, and it turns out to cost 0.9.
    _set_state(trigger_id, {"cost_usd": 0.9})
    assert fire_next(aws, clock, runner) == ["succeeded"]

    view = triggers.get_trigger_view(root, trigger_id)
    assert (view["status"], view["disabled_reason"]) == ("disabled", "budget")
    assert [r["cost_usd"] for r in _runs(root, trigger_id)] == [0.9, 0.3]
    totals = ledger.totals(trigger_id, "day:2026-11-30")
    assert (totals.spent_usd, totals.reserved_usd) == (1.2, 0.0)
    clock.advance(60)
    assert assembly.tick(now=clock()).due == 0


def test_a_run_that_cannot_reserve_is_refused_and_disables_the_trigger(aws, clock, root):
    trigger_id = _create(
        root,
        clock,
        state={"cost_usd": 0.4},
        limits={"max_usd": 1, "budget_period": "day"},
    )
    runner = assembly.build_runner(clock=clock)
    assert fire_next(aws, clock, runner) == ["succeeded"]  # 0.4 spent
    assert fire_next(aws, clock, runner) == ["succeeded"]  # 0.8 spent
    # 0.8 + an estimated 0.4 would overspend: the run does not start.
    assert fire_next(aws, clock, runner) == ["budget_exceeded"]

    view = triggers.get_trigger_view(root, trigger_id)
    assert (view["status"], view["disabled_reason"]) == ("disabled", "budget")
    assert view["state"]["count"] == 2  # the refused run never ran
    refused = _runs(root, trigger_id)[0]
    assert refused["status"] == "budget_exceeded"
    assert "budget of $1 per day is used up" in refused["error"]
    assert view["consecutive_failures"] == 0  # a refusal is not a failure
    totals = ledger.totals(trigger_id, "day:2026-11-30")
    assert (totals.spent_usd, totals.reserved_usd) == (0.8, 0.0)

    # Enabled again within the same day: still no room.
    triggers.set_enabled(root, trigger_id, enabled=True, now=clock())
    assert fire_next(aws, clock, runner) == ["budget_exceeded"]
    # The next day is a new period (the trigger's timezone: UTC for an interval).
    clock.advance(24 * 3600)
    triggers.set_enabled(root, trigger_id, enabled=True, now=clock())
    assert fire_next(aws, clock, runner) == ["succeeded"]
    assert ledger.totals(trigger_id, "day:2026-12-01").spent_usd == 0.4


def test_a_cron_trigger_budgets_by_its_own_timezone_day(aws, clock, root):
    # 23:30 UTC on Nov 30 is 00:30 on Dec 1 in Berlin: the spend lands on Berlin's Dec 1.
    trigger_id = _create(
        root,
        clock,
        schedule={"cron": "30 0 * * *", "timezone": "Europe/Berlin"},
        state={"cost_usd": 0.25},
        limits={"max_usd": 10, "budget_period": "day"},
    )
    clock.advance(11.5 * 3600)
    assembly.tick(now=clock())
    assert aws.drain(assembly.build_runner(clock=clock)) == ["succeeded"]
    assert ledger.totals(trigger_id, "day:2026-12-01").spent_usd == 0.25
    assert ledger.totals(trigger_id, "day:2026-11-30").spent_usd == 0.0


def test_two_concurrent_runs_cannot_overspend_together(aws, clock, root):
    GATE.set()
    trigger_id = _create(
        root,
        clock,
        workflow="test-gated-metered",
        concurrency=2,
        limits={"max_usd": 1, "budget_period": "total"},
    )
    runner = assembly.build_runner(clock=clock)
    assert fire_next(aws, clock, runner) == ["succeeded"]  # 0.5 spent; estimate now 0.5
    GATE.clear()
    # Two runs in flight at once; each alone fits (0.5 + 0.5 <= 1), both would not.
    triggers.fire_now(root, trigger_id, now=clock())
    triggers.fire_now(root, trigger_id, now=clock())
    messages = aws.receive()
    assert len(messages) == 2
    statuses: list[str] = []
    barrier = threading.Barrier(2)

    def run(message):
        barrier.wait()
        statuses.append(runner.handle(FireMessage.parse(message["Body"])))

    threads = [threading.Thread(target=run, args=(m,)) for m in messages]
    for t in threads:
        t.start()
    # The run that got the reservation waits at the gate; the other must be refused
    # while it is still in flight (if both had reserved, both would be waiting here).
    for _ in range(200):
        if statuses:
            break
        threads[0].join(timeout=0.05)
    assert statuses == ["budget_exceeded"]
    GATE.set()
    for t in threads:
        t.join(timeout=20)
    aws.delete(messages)
    assert sorted(statuses) == ["budget_exceeded", "succeeded"]
    totals = ledger.totals(trigger_id, "total")
    assert (totals.spent_usd, totals.reserved_usd) == (1.0, 0.0)
    view = triggers.get_trigger_view(root, trigger_id)
    assert view["disabled_reason"] == "budget"


def test_a_run_lost_with_a_reservation_is_charged_it_and_releases_it(aws, clock, root):
    # Hourly: the row is keyed on the dead run's lease, so the heartbeat reaps it (a
    # standing schedule's next claim would: test_standing_rows.py).
    trigger_id = _create(
        root, clock, schedule={"interval_s": 3600}, limits={"max_usd": 1, "budget_period": "day"}
    )
    clock.advance(3600)
    assembly.tick(now=clock())
    [message] = aws.receive()
    fire = FireMessage.parse(message["Body"])
    # The runner starts the run and reserves, then dies before it settles.
    from chalicelib.services.guardrails import budget_guard
    from chalicelib.services.runner.claim import claim_slot

    item = claim_slot(fire, lease_ms=0, now=clock(), pipeline=assembly.build_pipeline())
    ctx = RunContext(
        item=item,
        spec={"limits": {"max_usd": 1, "budget_period": "day"}},
        message=fire,
        now=clock(),
    )
    assert budget_guard(ctx) is None
    assert ledger.totals(trigger_id, "day:2026-11-30").reserved_usd == 0.01
    clock.advance(120)
    assert assembly.tick(now=clock()).reaped == 1
    totals = ledger.totals(trigger_id, "day:2026-11-30")
    assert (totals.spent_usd, totals.reserved_usd) == (0.01, 0.0)
