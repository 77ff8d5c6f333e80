"""The run policies ``budget`` and ``serialize`` (``services/guardrails/``) on the store twin.

The twin (``tests/memory_store.py``) answers as the real store does; the contract suite
(``tests/functional/test_store_contract.py``) holds it to that for the budget ledger and
the serialize leases too. Here it stands in for the policies' store modules, so their
decisions run in milliseconds: the reservation and its refusal, the reconcile after a
settle (a run with no result, a repeated hook, the run that crosses the budget and
disables the trigger), the charge of a lost run's hold, the period on the trigger's own
clock; the serialize lease taken, waited for (and the wait's delay), taken over once
expired, handed to a waiter, left by a run that will not come back, released. The
release that hands the key to a waiter re-sends that waiter's message (SQS): that path is
left to the functional suite (``tests/functional/test_guardrails_serialize.py``). Any
call to AWS fails the test (``no_aws``); with no alerts queue configured, the policies'
transitions are recorded here (``transitions``) and not sent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chalicelib.domain.alerts import Transition
from chalicelib.domain.epoch_ms import ms
from chalicelib.observability import metric_counts, reset_metric_counts
from chalicelib.services.alerts import detect
from chalicelib.services.guardrails import budget, serialize
from chalicelib.services.guardrails.budget import BudgetPolicy
from chalicelib.services.guardrails.serialize import MAX_POLL_S, SerializePolicy
from chalicelib.services.pipeline import Pipeline, Refusal, RunContext
from chalicelib.settings import reset_settings
from chalicelib.store.ledger import LedgerTotals
from chalicelib.store.locks import Holder
from chalicelib.store.sqs import FireMessage
from chalicelib.store.triggers import TriggerModel
from chalicelib.workflows import Result
from tests.memory_store import MemoryStore, without_queues

SLOT = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
NOW = SLOT + timedelta(seconds=2)
NOW_MS = ms(NOW)
DAY = "day:2026-11-30"
BUDGET = {"limits": {"max_usd": 1, "budget_period": "day"}}
KEY = "local#client-7"
SERIAL = {"serialize_key": "client-7"}
LEASE = NOW_MS + (300 + 60) * 1000  # the runner's timeout (300 s) and a minute


@pytest.fixture
def twin(monkeypatch: pytest.MonkeyPatch, no_aws: list[str]) -> Iterator[MemoryStore]:
    """The twin in place of the policies' store modules; settings with no queue at all."""
    without_queues(monkeypatch)
    monkeypatch.setenv("CRONHOOK_RUNNER_TIMEOUT_S", "300")
    reset_settings()
    reset_metric_counts()
    store = MemoryStore()
    store.install(monkeypatch, budget, serialize)
    _put(store, "t1", BUDGET)
    yield store
    reset_settings()
    reset_metric_counts()


@pytest.fixture
def transitions(monkeypatch: pytest.MonkeyPatch) -> list[Transition]:
    """The lifecycle transitions the policies queue (then queued as usual: to no queue)."""
    seen: list[Transition] = []
    queue = detect.queue_transitions

    def note(found: list[Transition]) -> None:
        seen.extend(found)
        queue(found)

    monkeypatch.setattr(detect, "queue_transitions", note)
    return seen


def _put(twin: MemoryStore, trigger_id: str, doc: dict, **fields: Any) -> None:
    """Store a trigger whose spec is ``doc`` (``spec=``: the stored text itself)."""
    values = {
        "tenant": "local",
        "workflow": "echo",
        "kind": "schedule",
        "spec": json.dumps({"workflow": "echo", **doc}),
        "sched": '{"interval_s":60}',
        "created_ms": ms(SLOT) - 1,
        "updated_ms": ms(SLOT) - 1,
        "next_fire_at": ms(SLOT) + 60_000,
        "due_at": ms(SLOT) + 60_000,
        "due_shard": "0",
        **fields,
    }
    twin.put_trigger(TriggerModel(trigger_id, **values))


def _ctx(
    twin: MemoryStore, run_id: str, *, trigger_id: str = "t1", now: datetime = NOW
) -> RunContext:
    """A run of the trigger as stored, its spec as stored (what the runner hands a policy)."""
    item = twin.get_trigger(trigger_id)
    assert item is not None
    message = FireMessage(
        f"{trigger_id}.{run_id}", trigger_id, "schedule", scheduled_ms=ms(SLOT), tenant=item.tenant
    )
    return RunContext(item=item, spec=json.loads(item.spec), message=message, now=now)


def _run(twin: MemoryStore, run_id: str, cost: float | None, **kw: Any) -> RunContext:
    """A run through the budget: checked, then settled with ``cost`` (None: no result)."""
    ctx = _ctx(twin, run_id, **kw)
    assert BudgetPolicy().check(ctx) is None
    ctx.result = None if cost is None else Result(cost_usd=cost)
    BudgetPolicy().after_settle(ctx)
    return ctx


# -- budget ---------------------------------------------------------------------------------


def test_a_trigger_without_a_budget_holds_nothing(twin: MemoryStore) -> None:
    _put(twin, "t2", {})
    ctx = _ctx(twin, "r1", trigger_id="t2")
    assert BudgetPolicy().check(ctx) is None
    ctx.result = Result(cost_usd=5)
    BudgetPolicy().after_settle(ctx)
    assert ctx.notes == {} and twin.newest_totals("t2") is None


def test_the_first_run_of_a_period_holds_the_default_estimate(twin: MemoryStore) -> None:
    ctx = _ctx(twin, "r1")
    assert BudgetPolicy().check(ctx) is None
    assert ctx.notes["budget"] == (DAY, 0.01, 1.0)
    assert twin.totals("t1", DAY) == LedgerTotals(0.0, 0.01)
    assert twin.recent_holds("t1") == [(DAY, {"t1.r1": 0.01})]


def test_a_settled_run_is_charged_its_cost_and_the_next_one_holds_that_cost(
    twin: MemoryStore, transitions: list[Transition]
) -> None:
    _run(twin, "r1", 0.3)
    assert twin.totals("t1", DAY) == LedgerTotals(0.3, 0.0)
    assert [(t.kind, t.percent_before, t.percent_after) for t in transitions] == [
        ("budget", 0.0, 30.0)
    ]
    ctx = _ctx(twin, "r2")
    assert BudgetPolicy().check(ctx) is None
    assert ctx.notes["budget"] == (DAY, 0.3, 1.0)
    assert twin.get_trigger("t1").status == "active"


def test_a_run_with_no_room_left_is_refused_with_what_was_spent_and_held(
    twin: MemoryStore,
) -> None:
    _run(twin, "r1", 0.4)
    _run(twin, "r2", 0.4)
    ctx = _ctx(twin, "r3")
    assert BudgetPolicy().check(ctx) == Refusal(
        "budget_exceeded",
        "budget of $1 per day is used up (spent $0.8, reserved $0, this run needs about $0.4)",
        reason="budget",
    )
    assert ctx.notes == {}
    assert twin.recent_holds("t1") == [(DAY, {})]
    assert metric_counts("BudgetRefusals") == {(): 1}
    BudgetPolicy().after_settle(ctx)  # the refused run is settled: nothing to give back
    assert twin.totals("t1", DAY) == LedgerTotals(0.8, 0.0)


def test_the_run_that_crosses_the_budget_stands_and_disables_the_trigger(
    twin: MemoryStore, transitions: list[Transition]
) -> None:
    _run(twin, "r1", 0.3)
    ctx = _run(twin, "r2", 0.9, now=NOW + timedelta(minutes=1))  # held 0.3, cost 0.9
    assert twin.totals("t1", DAY) == LedgerTotals(1.2, 0.0)
    item = twin.get_trigger("t1")
    assert (item.status, item.disabled_reason, item.disabled_ms) == (
        "disabled",
        "budget",
        ms(ctx.now),
    )
    assert metric_counts("Disables") == {(("reason", "budget"),): 1}
    assert [(t.kind, t.run_id, t.reason) for t in transitions[1:]] == [
        ("budget", "t1.r2", "spent $1.2 of $1"),
        ("disabled", "t1.r2", "budget"),
    ]


def test_the_disable_of_a_trigger_disabled_already_is_not_counted_again(
    twin: MemoryStore,
) -> None:
    _run(twin, "r1", 0.5)
    twin.disable_trigger("t1", reason="paused", now_ms=NOW_MS)
    _run(twin, "r2", 0.7)  # crosses the budget while paused
    assert twin.get_trigger("t1").disabled_reason == "paused"
    assert metric_counts("Disables") == {}


def test_a_run_with_no_result_gives_its_hold_back_and_keeps_the_last_cost(
    twin: MemoryStore,
) -> None:
    _run(twin, "r1", 0.3)
    _run(twin, "r2", None)
    assert twin.totals("t1", DAY) == LedgerTotals(0.3, 0.0)
    ctx = _ctx(twin, "r3")
    assert BudgetPolicy().check(ctx) is None
    assert ctx.notes["budget"] == (DAY, 0.3, 1.0)


def test_an_after_settle_tried_again_charges_the_run_once(twin: MemoryStore) -> None:
    ctx = _run(twin, "r1", 0.3)
    BudgetPolicy().after_settle(ctx)
    Pipeline([BudgetPolicy()]).after_settle(ctx)
    assert twin.totals("t1", DAY) == LedgerTotals(0.3, 0.0)


def test_a_lost_run_is_charged_its_hold_in_the_period_that_holds_it(twin: MemoryStore) -> None:
    _run(twin, "r1", 0.3)
    assert BudgetPolicy().check(_ctx(twin, "r2")) is None  # holds 0.3; then lost
    item = twin.get_trigger("t1")
    later = NOW + timedelta(days=1)  # reaped in the next period: charged in its own
    BudgetPolicy().after_lost(item=item, run_id="t1.r2", entry={}, now=later)
    assert twin.totals("t1", DAY) == LedgerTotals(0.6, 0.0)
    BudgetPolicy().after_lost(item=item, run_id="t1.r2", entry={}, now=later)  # swept again
    BudgetPolicy().after_lost(item=item, run_id="t1.r9", entry={}, now=later)  # held nothing
    assert twin.totals("t1", DAY) == LedgerTotals(0.6, 0.0)
    ctx = _ctx(twin, "r3")
    assert BudgetPolicy().check(ctx) is None
    assert ctx.notes["budget"] == (DAY, 0.3, 1.0)  # a lost run's charge is not its cost


@pytest.mark.parametrize("spec", ["{}", "{not json"], ids=["no-budget", "unreadable"])
def test_a_lost_run_of_a_trigger_without_a_readable_budget_is_not_charged(
    twin: MemoryStore, spec: str
) -> None:
    twin.reserve("t2", DAY, run_id="t2.r1", max_usd=1, expires=None)
    _put(twin, "t2", {}, spec=spec)
    BudgetPolicy().after_lost(item=twin.get_trigger("t2"), run_id="t2.r1", entry={}, now=NOW)
    assert twin.recent_holds("t2") == [(DAY, {"t2.r1": 0.01})]


@pytest.mark.parametrize(
    ("kind", "spec", "period"),
    [
        ("cron", {"schedule": {"timezone": "Pacific/Auckland"}}, "day:2026-12-01"),
        ("cron", {"schedule": {"timezone": "America/Los_Angeles"}}, "day:2026-11-30"),
        ("schedule", {"schedule": {"timezone": "Pacific/Auckland"}}, "day:2026-11-30"),
    ],
    ids=["cron-ahead", "cron-behind", "not-cron-utc"],
)
def test_the_period_is_the_day_on_a_cron_trigger_s_own_clock(
    twin: MemoryStore, kind: str, spec: dict, period: str
) -> None:
    _put(twin, "t2", {**BUDGET, **spec}, kind=kind)
    late = SLOT + timedelta(hours=11, minutes=30)  # 23:30 UTC
    ctx = _ctx(twin, "r1", trigger_id="t2", now=late)
    assert BudgetPolicy().check(ctx) is None
    assert twin.recent_holds("t2") == [(period, {"t2.r1": 0.01})]


@pytest.mark.parametrize(
    ("name", "period"), [("week", "week:2026-W49"), ("month", "month:2026-11"), ("total", "total")]
)
def test_each_budget_period_has_its_ledger_key(twin: MemoryStore, name: str, period: str) -> None:
    _put(twin, "t2", {"limits": {"max_usd": 2, "budget_period": name}})
    ctx = _ctx(twin, "r1", trigger_id="t2")
    assert BudgetPolicy().check(ctx) is None
    assert ctx.notes["budget"] == (period, 0.01, 2.0)


# -- serialize --------------------------------------------------------------------------------


def _serial(twin: MemoryStore, *trigger_ids: str, tenant: str = "local") -> None:
    for trigger_id in trigger_ids:
        _put(twin, trigger_id, SERIAL, tenant=tenant)


def _waiter(trigger_id: str, *, since: int = NOW_MS) -> dict:
    return {"t": trigger_id, "k": "schedule", "w": since, "at": ms(SLOT)}


def test_a_trigger_without_a_serialize_key_takes_no_lease(twin: MemoryStore) -> None:
    ctx = _ctx(twin, "r1")
    assert SerializePolicy().check(ctx) is None
    SerializePolicy().after_settle(ctx)
    assert ctx.notes == {}
    assert twin.holder(KEY) == Holder(None, None, {})


def test_a_free_key_is_taken_for_the_runner_s_timeout_and_a_minute(twin: MemoryStore) -> None:
    _serial(twin, "s1")
    ctx = _ctx(twin, "r1", trigger_id="s1")
    assert SerializePolicy().check(ctx) is None
    assert ctx.notes["lock"] == KEY
    assert twin.holder(KEY) == Holder("s1.r1", LEASE, {})


@pytest.mark.parametrize(
    ("lease_left_ms", "delay_s"),
    [(400_000, MAX_POLL_S), (30_000, 31), (500, 1), (0, 1)],
    ids=["long", "seconds", "under-a-second", "ends-now"],
)
def test_a_held_key_defers_the_run_into_the_queue_until_the_lease_can_end(
    twin: MemoryStore, lease_left_ms: int, delay_s: int
) -> None:
    _serial(twin, "s1", "s2")
    assert twin.acquire(KEY, run_id="s1.r1", lease_until_ms=NOW_MS + lease_left_ms, now_ms=0)
    ctx = _ctx(twin, "r1", trigger_id="s2")
    assert SerializePolicy().check(ctx) == Refusal(
        "skipped",
        "serialize_key 'client-7' is held by another run; waiting",
        defer=True,
        delay_s=delay_s,
    )
    assert twin.holder(KEY) == Holder("s1.r1", NOW_MS + lease_left_ms, {"s2.r1": _waiter("s2")})
    assert metric_counts("SerializeWaits") == {(("surface", "schedule"),): 1}


def test_a_waiter_polling_again_keeps_its_place_and_takes_an_expired_lease(
    twin: MemoryStore,
) -> None:
    _serial(twin, "s1", "s2")
    assert SerializePolicy().check(_ctx(twin, "r1", trigger_id="s1")) is None
    assert SerializePolicy().check(_ctx(twin, "r1", trigger_id="s2")).defer
    later = NOW + timedelta(seconds=60)
    assert SerializePolicy().check(_ctx(twin, "r1", trigger_id="s2", now=later)).defer
    assert twin.holder(KEY).waiters == {"s2.r1": _waiter("s2")}  # the first place
    expired = NOW + timedelta(seconds=361)  # the holder died: its lease ran out
    ctx = _ctx(twin, "r1", trigger_id="s2", now=expired)
    assert SerializePolicy().check(ctx) is None and ctx.notes["lock"] == KEY
    assert twin.holder(KEY) == Holder("s2.r1", ms(expired) + 360_000, {})


def test_a_run_handed_the_key_takes_it_on_its_next_delivery(twin: MemoryStore) -> None:
    _serial(twin, "s1", "s2", "s3")
    assert SerializePolicy().check(_ctx(twin, "r1", trigger_id="s1")) is None
    assert SerializePolicy().check(_ctx(twin, "r1", trigger_id="s2")).defer
    # The holder's release hands the key on (and re-sends s2's message: SQS, not here).
    handoff = NOW_MS + 120_000
    assert twin.release(KEY, run_id="s1.r1", handoff_until_ms=handoff) == ("s2.r1", _waiter("s2"))
    assert SerializePolicy().check(_ctx(twin, "r1", trigger_id="s3")).defer  # no queue jumping
    ctx = _ctx(twin, "r1", trigger_id="s2", now=NOW + timedelta(seconds=1))
    assert SerializePolicy().check(ctx) is None
    assert twin.holder(KEY) == Holder("s2.r1", LEASE + 1000, {"s3.r1": _waiter("s3")})


def test_a_key_released_between_the_try_and_the_queue_is_taken_on_the_second_try(
    twin: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    _serial(twin, "s1", "s2")
    assert SerializePolicy().check(_ctx(twin, "r1", trigger_id="s1")) is None
    join = twin.wait

    def released_first(key: str, *, run_id: str, entry: dict) -> None:
        # The holder settles after our first try and before we join: it sees no waiter.
        assert twin.release(key, run_id="s1.r1", handoff_until_ms=0) is None
        join(key, run_id=run_id, entry=entry)

    monkeypatch.setattr(twin, "wait", released_first)
    ctx = _ctx(twin, "r1", trigger_id="s2")
    assert SerializePolicy().check(ctx) is None and ctx.notes["lock"] == KEY
    assert twin.holder(KEY) == Holder("s2.r1", LEASE, {})


def test_the_owner_s_settle_frees_the_key_when_nobody_waits(twin: MemoryStore) -> None:
    _serial(twin, "s1", "s2")
    ctx = _ctx(twin, "r1", trigger_id="s1")
    assert SerializePolicy().check(ctx) is None
    SerializePolicy().after_settle(ctx)
    assert twin.holder(KEY) == Holder(None, None, {})
    SerializePolicy().after_settle(ctx)  # tried again: not its key any more, nothing happens
    assert SerializePolicy().check(_ctx(twin, "r1", trigger_id="s2")) is None


def test_a_settle_after_the_lease_was_overtaken_leaves_the_new_owner_alone(
    twin: MemoryStore,
) -> None:
    _serial(twin, "s1", "s2")
    slow = _ctx(twin, "r1", trigger_id="s1")
    assert SerializePolicy().check(slow) is None
    expired = NOW + timedelta(seconds=361)
    assert SerializePolicy().check(_ctx(twin, "r1", trigger_id="s2", now=expired)) is None
    slow.finished_at = expired
    SerializePolicy().after_settle(slow)
    assert twin.holder(KEY) == Holder("s2.r1", ms(expired) + 360_000, {})


def test_a_waiter_that_ends_without_its_turn_leaves_the_queue_and_a_deferred_one_stays(
    twin: MemoryStore,
) -> None:
    _serial(twin, "s1", "s2", "s3")
    assert SerializePolicy().check(_ctx(twin, "r1", trigger_id="s1")) is None
    deferred = _ctx(twin, "r1", trigger_id="s2")
    refused = _ctx(twin, "r1", trigger_id="s3")
    for ctx in (deferred, refused):
        assert SerializePolicy().check(ctx).defer
    deferred.deferred = True  # waiting for the key: it comes back
    SerializePolicy().after_settle(deferred)
    SerializePolicy().after_settle(refused)  # e.g. its trigger disabled meanwhile
    assert twin.holder(KEY) == Holder("s1.r1", LEASE, {"s2.r1": _waiter("s2")})


def test_the_same_key_of_another_tenant_is_another_lease(twin: MemoryStore) -> None:
    _serial(twin, "s1")
    _serial(twin, "o1", tenant="other")
    assert SerializePolicy().check(_ctx(twin, "r1", trigger_id="s1")) is None
    ctx = _ctx(twin, "r1", trigger_id="o1")
    assert SerializePolicy().check(ctx) is None and ctx.notes["lock"] == "other#client-7"
    assert twin.holder("other#client-7").owner == "o1.r1"
    assert twin.holder(KEY).owner == "s1.r1"


def test_a_run_deferred_by_the_key_never_holds_budget(twin: MemoryStore) -> None:
    _put(twin, "s1", {**SERIAL, **BUDGET})
    _put(twin, "s2", {**SERIAL, **BUDGET})
    pipeline = Pipeline([SerializePolicy(), BudgetPolicy()])
    first, second = _ctx(twin, "r1", trigger_id="s1"), _ctx(twin, "r1", trigger_id="s2")
    assert pipeline.check(first) is None
    assert pipeline.check(second).defer
    assert twin.recent_holds("s1") == [(DAY, {"s1.r1": 0.01})]
    assert twin.newest_totals("s2") is None
    pipeline.after_settle(second)  # ended without its turn: leaves the queue, holds nothing
    first.result = Result(cost_usd=0.2)
    pipeline.after_settle(first)  # the hold is charged, then the key is given up
    assert twin.totals("s1", DAY) == LedgerTotals(0.2, 0.0)
    assert twin.holder(KEY) == Holder(None, None, {})
    assert twin.newest_totals("s2") is None
