"""One contract, two stores: the real one (DynamoDB on the moto server) and the in-memory twin.

Every test runs on both (``store`` is parametrized), so the suite fails the moment either
implementation of a fire's store functions diverges from the other: the claim and its
fences, start, defer, release, reap, settle (and a settle's idempotence after a lost
reply), the state's compare-and-set and its stateless stamp, the run record (and the
reaper's, written only while the run is in flight on the lease it read); and the
heartbeat's: the due index's reads (their order, bounds and shards, the standing rows),
its fenced writes (advance a slot, key a standing row, re-key, disable) and the shards'
enqueue cursors; and the run policies': the budget ledger (a reservation within and over a
budget, a redelivered one, the reconcile fenced on the very hold, the totals and the
periods newest first) and the serialize leases (acquire a free, held or expired key, the
queue and its original place, leave, the release and its hand-off to the oldest waiter).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from chalicelib.domain.records import RunRecord
from chalicelib.domain.rules import LEASE_LEFT_TO_NEXT_CLAIM_MS
from chalicelib.store import claims, cursors, ledger, locks, payloads, runs, state, triggers
from chalicelib.store.base import plain_map
from chalicelib.store.triggers import STANDING_DUE, TriggerModel
from tests.memory_store import MemoryStore

SLOT = 1_800_000_000_000
NEXT = SLOT + 60_000
LEASE = SLOT + 30_000
SCHED = '{"interval_s":60}'


def _real() -> Any:
    """The real store's functions, from the modules the twin stands in for."""
    names: dict[str, Any] = {}
    for module in (triggers, claims, state, runs, payloads, cursors, ledger, locks):
        names.update({name: getattr(module, name) for name in module.__all__})
    return SimpleNamespace(**names, put_trigger=lambda item: item.save())


@pytest.fixture(params=["dynamo", "memory"])  # "dynamo": the real store
def store(request: pytest.FixtureRequest) -> Any:
    """The store under contract: the real one on a fresh moto server, or the twin."""
    if request.param == "memory":
        return MemoryStore()
    request.getfixturevalue("aws")
    return _real()


def _seed(store: Any, trigger_id: str = "t1", **fields: Any) -> str:
    values = {
        "tenant": "local",
        "workflow": "echo",
        "kind": "schedule",
        "spec": '{"workflow":"echo"}',
        "sched": SCHED,
        "created_ms": SLOT - 1,
        "updated_ms": SLOT - 1,
        "next_fire_at": SLOT,
        "due_at": SLOT,
        "due_shard": "0",
        **fields,
    }
    store.put_trigger(TriggerModel(trigger_id, **values))
    return trigger_id


def _claim(store: Any, trigger_id: str = "t1", run_id: str = "r1", **over: Any) -> tuple:
    args = {
        "slot_ms": SLOT,
        "sched": SCHED,
        "next_slot_ms": NEXT,
        "run_id": run_id,
        "lease_ms": LEASE,
        "capacity": 1,
        "shard": "0",
        **over,
    }
    return store.claim_slot_and_start(trigger_id, **args)


def _view(item: TriggerModel | None) -> dict[str, Any]:
    """What the fire path reads off an item (the claim token ``o`` is random: left out)."""
    assert item is not None
    return {
        "in_flight": {
            run: {k: v for k, v in entry.items() if k != "o"}
            for run, entry in plain_map(item.in_flight).items()
        },
        "next_fire_at": item.next_fire_at,
        "next_slot": item.next_slot,
        "due_at": item.due_at,
        "due_shard": item.due_shard,
        "run_count": item.run_count,
        "consecutive_failures": item.consecutive_failures,
        "last_run": plain_map(item.last_run) or None,
        "stateless_version": item.stateless_version,
        "status": item.status,
    }


def _stored(store: Any, trigger_id: str = "t1") -> dict[str, Any]:
    return _view(store.get_trigger(trigger_id))


# -- the claim ----------------------------------------------------------------------------


def test_a_claim_takes_the_slot_starts_the_run_and_moves_to_the_next_slot(store: Any) -> None:
    _seed(store)
    outcome, item = _claim(store, started_ms=SLOT + 5)
    assert outcome == store.ClaimResult.CLAIMED
    expected = {"r1": {"l": LEASE, "s": 1, "k": "s", "t": SLOT, "a": SLOT + 5}}
    assert _view(item)["in_flight"] == expected
    assert _stored(store) == _view(item)
    assert (item.next_fire_at, item.due_at, item.due_shard) == (NEXT, NEXT, "0")
    assert store.in_flight_of(item)["r1"]["o"]  # the claim's token, for a lost reply


def test_a_claim_of_a_slot_already_claimed_fails_and_changes_nothing(store: Any) -> None:
    _seed(store)
    assert _claim(store, capacity=5)[0] == store.ClaimResult.CLAIMED
    before = _stored(store)
    # Another message of the same slot, another worker: the slot has moved on.
    assert _claim(store, run_id="r2", capacity=5) == (store.ClaimResult.LOST, None)
    # The very same message delivered twice.
    assert _claim(store, capacity=5) == (store.ClaimResult.LOST, None)
    assert _stored(store) == before


@pytest.mark.parametrize(
    ("seed", "claim"),
    [
        ({"sched": '{"interval_s":120}'}, {}),  # the schedule was edited
        ({"status": "disabled"}, {}),  # paused
        ({"in_flight": {"r0": {"l": LEASE, "s": 1, "k": "s"}}}, {}),  # no room left
        ({"next_fire_at": NEXT}, {}),  # another slot
        ({}, {"standing": True}),  # a standing claim of a keyed item: no next_slot
    ],
    ids=["sched-changed", "paused", "full", "other-slot", "wrong-form"],
)
def test_a_claim_is_fenced_out_by_each_of_its_conditions(
    store: Any, seed: dict, claim: dict
) -> None:
    _seed(store, **seed)
    before = _stored(store)
    assert _claim(store, **claim) == (store.ClaimResult.LOST, None)
    assert _stored(store) == before


def test_a_claim_of_a_trigger_that_is_gone_fails_and_creates_nothing(store: Any) -> None:
    assert _claim(store, trigger_id="gone") == (store.ClaimResult.LOST, None)
    assert store.get_trigger("gone") is None


def test_a_claim_that_stands_the_row_moves_only_its_pointer_from_then_on(store: Any) -> None:
    _seed(store)
    _claim(store, stands=True, shard="1")
    assert _stored(store) | {"in_flight": {}} == _stored(store) | {
        "in_flight": {},
        "next_fire_at": None,
        "next_slot": NEXT,
        "due_at": STANDING_DUE,
        "due_shard": "1",
    }
    store.settle_run("t1", run_id="r1", succeeded=True, last_run={"id": "r1"}, shard="1")
    outcome, item = _claim(
        store, run_id="r2", slot_ms=NEXT, next_slot_ms=NEXT + 60_000, standing=True, stands=True
    )
    assert outcome == store.ClaimResult.CLAIMED
    assert (item.next_slot, item.due_at, item.due_shard) == (NEXT + 60_000, STANDING_DUE, "1")


def test_a_lease_well_before_the_next_slot_keys_the_row_on_the_lease(store: Any) -> None:
    far = SLOT + 10 * LEASE_LEFT_TO_NEXT_CLAIM_MS
    _seed(store)
    _, item = _claim(store, next_slot_ms=far)
    assert (item.next_fire_at, item.due_at) == (far, LEASE)


def test_a_manual_claim_is_busy_when_full_and_keeps_an_earlier_due_at(store: Any) -> None:
    _seed(store, due_at=SLOT - 10)
    args = {"surface": "manual", "lease_ms": LEASE, "capacity": 1, "shard": "2"}
    outcome, item = store.claim_and_start("t1", run_id="m1", started=False, **args)
    assert outcome == store.ClaimResult.CLAIMED
    assert _view(item)["in_flight"] == {"m1": {"l": LEASE, "s": 0, "k": "m"}}
    assert (item.due_at, item.due_shard) == (SLOT - 10, "0")
    assert store.claim_and_start("t1", run_id="m2", **args) == (store.ClaimResult.BUSY, None)
    assert store.claim_and_start("gone", run_id="m3", **args) == (store.ClaimResult.BUSY, None)


# -- start, defer, release, reap ----------------------------------------------------------


def _unstarted(store: Any, run_id: str = "m1") -> None:
    _seed(store)
    store.claim_and_start(
        "t1", run_id=run_id, surface="manual", lease_ms=LEASE, capacity=2, shard="0", started=False
    )


def test_a_run_starts_once_a_duplicate_delivery_is_fenced_out(store: Any) -> None:
    _unstarted(store)
    item = store.start_run("t1", run_id="m1", lease_ms=LEASE + 1, started_ms=SLOT + 2)
    assert _view(item)["in_flight"]["m1"] == {"l": LEASE + 1, "s": 1, "k": "m", "a": SLOT + 2}
    assert store.start_run("t1", run_id="m1", lease_ms=LEASE + 9) is None
    assert store.start_run("t1", run_id="unknown", lease_ms=LEASE) is None
    assert store.start_run("gone", run_id="m1", lease_ms=LEASE) is None
    assert _stored(store)["in_flight"]["m1"]["l"] == LEASE + 1


def test_a_deferred_run_keeps_its_claim_unstarted_and_can_start_again(store: Any) -> None:
    _seed(store)
    _claim(store)
    assert store.defer_run("t1", run_id="r1", lease_ms=LEASE + 600_000)
    assert _stored(store)["in_flight"]["r1"] == {"l": LEASE + 600_000, "s": 0, "k": "s", "t": SLOT}
    assert not store.defer_run("t1", run_id="r1", lease_ms=LEASE)  # not started: not ours to defer
    assert store.start_run("t1", run_id="r1", lease_ms=LEASE) is not None
    assert store.defer_run("t1", run_id="r1", lease_ms=None)  # released outright
    assert _stored(store)["in_flight"] == {}
    assert not store.defer_run("t1", run_id="r1", lease_ms=None)


def test_a_claim_is_released_only_while_unstarted_and_keys_the_slot_again(store: Any) -> None:
    _unstarted(store)
    store.claim_and_start(
        "t1", run_id="m2", surface="manual", lease_ms=LEASE, capacity=2, shard="0"
    )
    assert not store.release_claim("t1", run_id="m2", slot_ms=SLOT)  # started
    assert store.release_claim("t1", run_id="m1", slot_ms=SLOT - 60_000, shard="3")
    view = _stored(store)
    assert list(view["in_flight"]) == ["m2"]
    assert (view["next_fire_at"], view["due_at"], view["due_shard"]) == (SLOT - 60_000,) * 2 + (
        "3",
    )
    assert not store.release_claim("t1", run_id="m1", slot_ms=None)


def test_a_reap_is_fenced_on_the_very_lease_it_read(store: Any) -> None:
    _seed(store, consecutive_failures=2, run_count=7)
    _claim(store)
    lost = {"id": "r1", "status": "lost"}
    assert not store.reap_run("t1", run_id="r1", lease_ms=LEASE + 1, last_run=lost)
    assert store.reap_run("t1", run_id="r1", lease_ms=LEASE, last_run=lost)
    view = _stored(store)
    assert (view["in_flight"], view["run_count"], view["consecutive_failures"]) == ({}, 8, 3)
    assert view["last_run"] == lost
    assert not store.reap_run("t1", run_id="r1", lease_ms=LEASE, last_run=lost)


# -- settle -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("succeeded", "failure_counts", "counts"),
    [(True, True, (8, 0)), (False, True, (8, 3)), (False, False, (8, 2)), (None, True, (7, 2))],
)
def test_a_settle_frees_the_claim_and_counts_the_run(
    store: Any, succeeded: bool | None, failure_counts: bool, counts: tuple
) -> None:
    _seed(store, consecutive_failures=2, run_count=7)
    _claim(store)
    last = {"id": "r1", "status": "x", "finished_at": SLOT + 9}
    item = store.settle_run(
        "t1",
        run_id="r1",
        succeeded=succeeded,
        last_run=last,
        shard="0",
        failure_counts=failure_counts,
    )
    assert _view(item) == _stored(store)
    assert (item.run_count, item.consecutive_failures) == counts
    assert _view(item)["in_flight"] == {} and _view(item)["last_run"] == last


def test_a_stale_settle_fails_and_changes_nothing(store: Any) -> None:
    _seed(store)
    _claim(store)
    lost = {"id": "r1", "status": "lost", "finished_at": SLOT + 1}
    assert store.reap_run("t1", run_id="r1", lease_ms=LEASE, last_run=lost)
    before = _stored(store)
    late = {"id": "r1", "status": "ok", "finished_at": SLOT + 50}
    assert store.settle_run("t1", run_id="r1", succeeded=True, last_run=late, shard="0") is None
    assert _stored(store) == before
    assert store.settle_run("gone", run_id="r1", succeeded=True, last_run=late, shard="0") is None


def test_a_settle_repeated_after_a_lost_reply_answers_the_item_and_counts_once(store: Any) -> None:
    _seed(store)
    _claim(store)
    last = {"id": "r1", "status": "ok", "finished_at": SLOT + 50}
    first = store.settle_run("t1", run_id="r1", succeeded=True, last_run=last, shard="0")
    again = store.settle_run("t1", run_id="r1", succeeded=True, last_run=last, shard="0")
    assert _view(again) == _view(first) and again.run_count == 1
    other = {**last, "finished_at": SLOT + 51}
    assert store.settle_run("t1", run_id="r1", succeeded=True, last_run=other, shard="0") is None


def test_a_settle_that_returns_the_slot_keys_the_trigger_on_it(store: Any) -> None:
    _seed(store)
    _claim(store, stands=True)
    item = store.settle_run(
        "t1",
        run_id="r1",
        succeeded=None,
        last_run={"id": "r1"},
        shard="4",
        next_fire_override_ms=SLOT,
    )
    view = _view(item)
    assert (view["next_fire_at"], view["due_at"], view["due_shard"], view["next_slot"]) == (
        SLOT,
        SLOT,
        "4",
        None,
    )


# -- state --------------------------------------------------------------------------------


def test_state_round_trips_and_a_stale_version_never_overwrites_it(store: Any) -> None:
    _seed(store)
    assert store.get_state("t1") == ({}, 0)
    assert store.write_state("t1", {"cursor": 1, "seen": ["a"]}, expected_version=0)
    assert store.get_state("t1") == ({"cursor": 1, "seen": ["a"]}, 1)
    assert not store.write_state("t1", {"cursor": 9}, expected_version=0)  # first, twice
    assert store.write_state("t1", {"cursor": 2}, expected_version=1)
    assert not store.write_state("t1", {"cursor": 9}, expected_version=1)  # stale
    assert not store.write_state("t1", {"cursor": 9}, expected_version=7)  # from the future
    assert store.get_state("t1") == ({"cursor": 2}, 2)
    assert not store.write_state("none", {"x": 1}, expected_version=1)
    assert store.write_state("gone", {"x": 1}, expected_version=0)  # a deleted trigger's run
    assert store.get_state("gone") == ({"x": 1}, 1)


def test_a_fire_that_finds_no_state_stamps_the_trigger_until_a_state_is_written(
    store: Any,
) -> None:
    _seed(store, version=3)
    assert store.state_of(store.get_trigger("t1")) == ({}, 0)
    stamped = store.get_trigger("t1")
    assert stamped.stateless_version == 3 and not store.has_state(stamped)
    assert store.state_of(stamped) == ({}, 0)
    assert store.write_state("t1", {"n": 1}, expected_version=0)
    item = store.get_trigger("t1")
    assert item.stateless_version is None and store.state_of(item) == ({"n": 1}, 1)


def test_the_stateless_stamp_is_refused_after_an_edit_or_a_state(store: Any) -> None:
    _seed(store, version=2)
    assert not store.mark_stateless("t1", version=1)  # the trigger was edited since
    assert not store.mark_stateless("gone", version=1)
    assert store.write_state("t1", {"n": 1}, expected_version=0)
    assert not store.mark_stateless("t1", version=2)
    assert store.get_trigger("t1").stateless_version is None


# -- the run record -----------------------------------------------------------------------


def _run(status: str, **fields: Any) -> RunRecord:
    values: dict[str, Any] = {
        "tenant": "local",
        "sort_key": f"{SLOT:013d}#r1",
        "surface": "schedule",
    }
    return RunRecord("t1", "r1", status=status, **values, **fields)


def test_a_run_record_round_trips_and_only_new_never_overwrites(store: Any) -> None:
    assert store.get_run("t1", "r1") is None
    assert store.put_run(_run("running", started_at=SLOT), only_new=True)
    assert not store.put_run(_run("lost"), only_new=True)
    assert store.get_run("t1", "r1").status == "running"
    assert store.put_run(_run("ok", started_at=SLOT, finished_at=SLOT + 7, output='{"a":1}'))
    got = store.get_run("t1", "r1")
    assert (got.status, got.started_at, got.finished_at, got.output) == (
        "ok",
        SLOT,
        SLOT + 7,
        '{"a":1}',
    )
    assert (got.attempt, got.cost_usd, got.error) == (1, 0, None)


def test_a_record_if_in_flight_is_written_while_the_run_holds_the_lease_read(
    store: Any,
) -> None:
    _seed(store)
    _claim(store)  # r1 in flight on LEASE
    assert store.put_run(_run("running", started_at=SLOT))
    lost = _run("lost", started_at=SLOT, finished_at=LEASE + 1, error="lost: lease expired")
    assert store.put_run_if_in_flight(lost, lease_ms=LEASE)
    assert store.get_run("t1", "r1") == lost
    assert list(_stored(store)["in_flight"]) == ["r1"]  # the record alone: no reap


@pytest.mark.parametrize("case", ["other-lease", "settled", "reaped", "no-entry", "no-trigger"])
def test_a_record_if_in_flight_is_not_written_once_the_run_is_off_the_lease_read(
    store: Any, case: str
) -> None:
    if case != "no-trigger":
        _seed(store)
    if case not in ("no-entry", "no-trigger"):
        _claim(store)
    finished = {"id": "r1", "status": "ok", "finished_at": SLOT + 50}
    if case == "settled":
        assert store.settle_run("t1", run_id="r1", succeeded=True, last_run=finished, shard="0")
    elif case == "reaped":
        assert store.reap_run("t1", run_id="r1", lease_ms=LEASE, last_run=finished)
    before = _run("ok", started_at=SLOT, finished_at=SLOT + 50)
    assert store.put_run(before)  # the run's own record, written after its settle
    trigger_before = store.get_trigger("t1")
    lease = LEASE + 1 if case == "other-lease" else LEASE
    lost = _run("lost", started_at=SLOT, finished_at=LEASE + 1, error="lost: lease expired")
    assert not store.put_run_if_in_flight(lost, lease_ms=lease)
    assert store.get_run("t1", "r1") == before
    assert store.get_trigger("t1") == trigger_before


def test_a_run_record_is_read_back_field_for_field_and_cannot_lack_a_required_one(
    store: Any,
) -> None:
    with pytest.raises(TypeError, match="tenant"):
        RunRecord("t1", "r2", sort_key="s", surface="schedule", status="ok")  # type: ignore[call-arg]
    assert store.get_run("t1", "r2") is None
    full = _run(
        "failed",
        workflow="echo",
        scheduled_for=SLOT,
        fire_at=SLOT + 3,
        started_at=SLOT + 4,
        finished_at=SLOT + 9,
        lateness_ms=4,
        error="RuntimeError: boom",
        cost_usd=0.25,
        event_id="evt_1",
        attempt=2,
        output='{"a":1}',
        rerun_of="t1.r0",
        state_written=True,
        expires=123,
    )
    assert store.put_run(full)
    assert store.get_run("t1", "r1") == full
    bare = _run("skipped")
    assert store.put_run(bare)
    assert store.get_run("t1", "r1") == bare  # every optional field back to its default


# -- the due index: the heartbeat's reads -------------------------------------------------


def _row(trigger_id: str, due_at: int, next_fire_at: int | None = None) -> triggers.DueRow:
    return triggers.DueRow(trigger_id, due_at, next_fire_at, SCHED)


def _standing(store: Any, trigger_id: str = "t1", **fields: Any) -> str:
    """A trigger in the standing form: its next slot in ``next_slot``, keyed at STANDING_DUE."""
    values = {"next_fire_at": None, "next_slot": SLOT, "due_at": STANDING_DUE, "due_shard": "1"}
    return _seed(store, trigger_id, **{**values, **fields})


def test_iter_due_reads_one_shard_earliest_first_until_inclusive_after_exclusive(
    store: Any,
) -> None:
    _seed(store, "a", next_fire_at=SLOT + 300, due_at=SLOT + 300)
    _seed(store, "b", next_fire_at=SLOT + 100, due_at=SLOT + 100)
    _seed(store, "c", next_fire_at=NEXT, due_at=SLOT + 200)  # keyed on a lease
    _seed(store, "d", next_fire_at=None, due_at=SLOT + 250)  # a lease and no slot
    _seed(store, "e", due_at=SLOT + 150, due_shard="1")  # another shard
    _seed(store, "f", due_at=None, due_shard=None)  # not in the index
    _seed(store, "g", due_at=SLOT + 50, due_shard=None)  # no shard: not in the index
    shard0 = [
        _row("b", SLOT + 100, SLOT + 100),
        _row("c", SLOT + 200, NEXT),
        _row("d", SLOT + 250),
        _row("a", SLOT + 300, SLOT + 300),
    ]
    assert list(store.iter_due("0", until_ms=SLOT + 1000)) == shard0
    assert list(store.iter_due("0", until_ms=SLOT + 250)) == shard0[:3]  # inclusive
    assert list(store.iter_due("0", until_ms=SLOT + 249)) == shard0[:2]
    assert list(store.iter_due("0", until_ms=SLOT + 1000, after_ms=SLOT + 200)) == shard0[2:]
    assert list(store.iter_due("0", until_ms=SLOT + 1000, after_ms=SLOT + 199)) == shard0[1:]
    assert list(store.iter_due("0", until_ms=SLOT + 250, after_ms=SLOT + 100)) == shard0[1:3]
    assert list(store.iter_due("0", until_ms=SLOT + 99)) == []
    assert list(store.iter_due("1", until_ms=SLOT + 1000)) == [_row("e", SLOT + 150, SLOT)]
    assert list(store.iter_due("7", until_ms=SLOT + 1000)) == []
    assert store.query_due("0", until_ms=SLOT + 1000, limit=2) == shard0[:2]
    assert store.query_due("0", until_ms=SLOT + 250) == shard0[:3]


def test_standing_rows_are_read_by_iter_standing_in_id_order_not_by_a_keyed_window(
    store: Any,
) -> None:
    _standing(store, "s2")
    _standing(store, "s1", next_slot=NEXT)
    _standing(store, "s3", due_shard="2")  # another shard
    _seed(store, "k", due_shard="1")  # keyed, in the same shard
    standing = [_row("s1", STANDING_DUE), _row("s2", STANDING_DUE)]
    assert list(store.iter_standing("1")) == standing
    assert list(store.iter_standing("2")) == [_row("s3", STANDING_DUE)]
    assert list(store.iter_standing("0")) == []
    # The keyed window of a tick starts after STANDING_DUE: the keyed rows only.
    keyed = list(store.iter_due("1", until_ms=SLOT, after_ms=STANDING_DUE))
    assert keyed == [_row("k", SLOT, SLOT)]
    # Unbounded below, iter_due reads them too, first (STANDING_DUE is before every instant).
    assert list(store.iter_due("1", until_ms=SLOT)) == [*standing, _row("k", SLOT, SLOT)]
    assert store.query_due("1", until_ms=SLOT - 1) == standing


# -- the due index: the heartbeat's writes ------------------------------------------------


def _keys(store: Any, trigger_id: str = "t1") -> tuple:
    view = _stored(store, trigger_id)
    return view["next_fire_at"], view["next_slot"], view["due_at"], view["due_shard"]


@pytest.mark.parametrize(
    ("standing", "next_slot_ms", "due_at", "expected"),
    [
        (False, NEXT, NEXT, (NEXT, None, NEXT, "2")),
        (False, NEXT, None, (NEXT, None, None, None)),
        (False, None, LEASE, (None, None, LEASE, "2")),
        (False, None, None, (None, None, None, None)),
        # Standing: only the pointer moves, the row keeps its key and shard...
        (True, NEXT, NEXT, (None, NEXT, STANDING_DUE, "1")),
        # ...unless it leaves the index, or the schedule has no next slot.
        (True, NEXT, None, (None, NEXT, None, None)),
        (True, None, LEASE, (None, None, LEASE, "2")),
        (True, None, None, (None, None, None, None)),
    ],
    ids=[
        "keyed-next",
        "keyed-next-unindexed",
        "keyed-last-leased",
        "keyed-last",
        "standing-next",
        "standing-next-unindexed",
        "standing-last-leased",
        "standing-last",
    ],
)
def test_advance_slot_moves_past_the_slot_in_each_form(
    store: Any, standing: bool, next_slot_ms: int | None, due_at: int | None, expected: tuple
) -> None:
    if standing:
        _standing(store)
    else:
        _seed(store)
    args = {"next_slot_ms": next_slot_ms, "due_at": due_at, "shard": "2", "standing": standing}
    assert store.advance_slot("t1", slot_ms=SLOT, **args)
    assert _keys(store) == expected
    assert not store.advance_slot("t1", slot_ms=SLOT, **args)  # fenced on the slot it moved
    assert _keys(store) == expected


def test_advance_slot_is_fenced_on_the_exact_pointer_of_its_form(store: Any) -> None:
    _seed(store, "k")
    _standing(store, "s")
    before = (_stored(store, "k"), _stored(store, "s"))
    args = {"next_slot_ms": NEXT, "due_at": NEXT, "shard": "2"}
    assert not store.advance_slot("k", slot_ms=SLOT + 1, **args)  # another slot
    assert not store.advance_slot("k", slot_ms=SLOT, standing=True, **args)  # no next_slot
    assert not store.advance_slot("s", slot_ms=SLOT + 1, standing=True, **args)
    assert not store.advance_slot("s", slot_ms=SLOT, **args)  # no next_fire_at
    assert (_stored(store, "k"), _stored(store, "s")) == before
    assert not store.advance_slot("gone", slot_ms=SLOT, **args)
    assert store.get_trigger("gone") is None


def test_key_standing_keys_the_row_on_its_slot_fenced_on_the_slot_and_the_standing_key(
    store: Any,
) -> None:
    _standing(store)
    _standing(store, "leased", due_at=LEASE)  # a pointer, but keyed on something else
    before = _stored(store, "leased")
    assert not store.key_standing("t1", slot_ms=NEXT, shard="2")
    assert not store.key_standing("leased", slot_ms=SLOT, shard="2")
    assert _stored(store, "leased") == before
    assert _keys(store) == (None, SLOT, STANDING_DUE, "1")
    assert store.key_standing("t1", slot_ms=SLOT, shard="2")
    assert _keys(store) == (SLOT, None, SLOT, "2")
    assert list(store.iter_due("2", until_ms=SLOT, after_ms=STANDING_DUE)) == [
        _row("t1", SLOT, SLOT)
    ]
    assert not store.key_standing("t1", slot_ms=SLOT, shard="3")  # keyed already
    assert _keys(store) == (SLOT, None, SLOT, "2")
    assert not store.key_standing("gone", slot_ms=SLOT, shard="2")
    assert store.get_trigger("gone") is None


def test_set_due_is_fenced_on_the_due_at_it_read_and_none_means_absent(store: Any) -> None:
    _seed(store)
    assert not store.set_due("t1", expected_due_at=SLOT + 1, due_at=LEASE, shard="3")
    assert not store.set_due("t1", expected_due_at=None, due_at=LEASE, shard="3")
    assert _keys(store) == (SLOT, None, SLOT, "0")
    assert store.set_due("t1", expected_due_at=SLOT, due_at=LEASE, shard="3")
    assert _keys(store) == (SLOT, None, LEASE, "3")
    assert store.set_due("t1", expected_due_at=LEASE, due_at=None, shard="3")
    assert _keys(store) == (SLOT, None, None, None)
    assert not store.set_due("t1", expected_due_at=LEASE, due_at=NEXT, shard="0")
    assert store.set_due("t1", expected_due_at=None, due_at=NEXT, shard="0")
    assert _keys(store) == (SLOT, None, NEXT, "0")


def test_set_due_of_a_trigger_that_is_gone_writes_nothing(store: Any) -> None:
    """A trigger deleted between the read and the re-key: no phantom row in the due index
    (an UpdateItem fenced only on an absent ``due_at`` would create a bare item that every
    tick read and sent again)."""
    assert not store.set_due("gone", expected_due_at=SLOT, due_at=LEASE, shard="0")
    assert not store.set_due("gone", expected_due_at=None, due_at=LEASE, shard="0")
    assert not store.set_due("gone", expected_due_at=None, due_at=None, shard="0")
    assert store.get_trigger("gone") is None
    assert list(store.iter_due("0", until_ms=LEASE)) == []


def test_disable_of_an_idle_trigger_takes_it_out_of_the_due_index(store: Any) -> None:
    _seed(store, version=3)
    item = store.disable_trigger("t1", reason="max_runs", now_ms=SLOT + 7)
    assert item is not None and _view(item) == _stored(store)
    assert (item.status, item.disabled_reason, item.disabled_ms, item.updated_ms) == (
        "disabled",
        "max_runs",
        SLOT + 7,
        SLOT + 7,
    )
    assert (item.version, item.next_fire_at, item.due_at, item.due_shard) == (4, SLOT, None, None)
    assert list(store.iter_due("0", until_ms=NEXT)) == []


def test_disable_with_a_run_in_flight_keeps_its_lease_in_the_due_index(store: Any) -> None:
    _seed(store, version=3)
    _claim(store)
    item = store.disable_trigger("t1", reason="failures", now_ms=SLOT + 7)
    assert item is not None and _view(item) == _stored(store)
    assert (item.status, item.disabled_reason, item.version) == ("disabled", "failures", 4)
    assert (item.due_at, item.due_shard, list(item.in_flight)) == (NEXT, "0", ["r1"])
    assert list(store.iter_due("0", until_ms=NEXT)) == [_row("t1", NEXT, NEXT)]


def test_disable_of_a_disabled_or_missing_trigger_answers_none_and_writes_nothing(
    store: Any,
) -> None:
    _seed(store, version=3)
    first = store.disable_trigger("t1", reason="max_runs", now_ms=SLOT + 7)
    assert first is not None
    assert store.disable_trigger("t1", reason="failures", now_ms=SLOT + 9) is None
    again = store.get_trigger("t1")
    assert (again.disabled_reason, again.updated_ms, again.version) == ("max_runs", SLOT + 7, 4)
    _seed(store, "paused", status="disabled", disabled_reason="user")
    assert store.disable_trigger("paused", reason="failures", now_ms=SLOT) is None
    assert store.get_trigger("paused").disabled_reason == "user"
    assert store.get_trigger("paused").due_at == SLOT  # not taken out: nothing written
    assert store.disable_trigger("gone", reason="failures", now_ms=SLOT) is None
    assert store.get_trigger("gone") is None


# -- the enqueue cursors ------------------------------------------------------------------


def test_a_cursor_is_written_first_fenced_on_absence_then_on_the_value_read(
    store: Any,
) -> None:
    assert store.get_cursor("0") is None
    assert not store.advance_cursor("0", expected=SLOT, cursor_ms=NEXT)  # there is none
    assert store.advance_cursor("0", expected=None, cursor_ms=SLOT)
    assert store.get_cursor("0") == SLOT
    assert not store.advance_cursor("0", expected=None, cursor_ms=NEXT)  # first, twice
    assert not store.advance_cursor("0", expected=SLOT - 1, cursor_ms=NEXT)  # stale
    assert store.get_cursor("0") == SLOT
    assert store.advance_cursor("0", expected=SLOT, cursor_ms=NEXT)
    assert store.advance_cursor("0", expected=NEXT, cursor_ms=SLOT + 1)  # back, too
    assert store.get_cursor("0") == SLOT + 1
    assert store.get_cursor("1") is None  # one cursor per shard
    assert store.advance_cursor("1", expected=None, cursor_ms=LEASE)
    assert (store.get_cursor("0"), store.get_cursor("1")) == (SLOT + 1, LEASE)


def test_a_forgotten_cursor_is_absent_again(store: Any) -> None:
    assert store.advance_cursor("0", expected=None, cursor_ms=SLOT)
    assert not store.advance_cursor("0", expected=NEXT, cursor_ms=None)
    assert store.advance_cursor("0", expected=SLOT, cursor_ms=None)
    assert store.get_cursor("0") is None
    assert not store.advance_cursor("0", expected=SLOT, cursor_ms=NEXT)
    assert store.advance_cursor("0", expected=None, cursor_ms=None)  # absent stays absent
    assert store.advance_cursor("0", expected=None, cursor_ms=NEXT)
    assert store.get_cursor("0") == NEXT


# -- the budget ledger --------------------------------------------------------------------

DAY = "day:2026-11-30"


def _reserve(store: Any, run_id: str, *, max_usd: float = 1.0, period: str = DAY) -> Any:
    return store.reserve("t1", period, run_id=run_id, max_usd=max_usd, expires=None)


def _reconcile(store: Any, run_id: str, estimate: float, actual: float, **kw: Any) -> Any:
    return store.reconcile("t1", DAY, run_id=run_id, estimate=estimate, actual_usd=actual, **kw)


def test_a_first_reservation_creates_the_period_and_holds_the_default_estimate(
    store: Any,
) -> None:
    assert store.newest_totals("t1") is None
    assert store.totals("t1", DAY) == ledger.LedgerTotals(0.0, 0.0)
    assert _reserve(store, "r1") == ledger.Reservation(True, DAY, 0.01)
    assert store.totals("t1", DAY) == ledger.LedgerTotals(0.0, 0.01)
    assert store.recent_holds("t1") == [(DAY, {"r1": 0.01})]


def test_a_reservation_holds_the_last_cost_until_the_budget_has_no_room(store: Any) -> None:
    _reserve(store, "r1")
    assert _reconcile(store, "r1", 0.01, 0.3) == ledger.LedgerTotals(0.3, 0.0)
    # The estimate is the last cost (0.3): room while committed <= 1 - 0.3.
    assert _reserve(store, "r2") == ledger.Reservation(True, DAY, 0.3)  # committed 0.6
    assert _reserve(store, "r3") == ledger.Reservation(True, DAY, 0.3)  # committed 0.9
    refused = ledger.Reservation(False, DAY, 0.3, spent_usd=0.3, reserved_usd=0.6)
    assert _reserve(store, "r4") == refused
    assert store.totals("t1", DAY) == ledger.LedgerTotals(0.3, 0.6)
    assert store.recent_holds("t1") == [(DAY, {"r2": 0.3, "r3": 0.3})]


def test_the_room_is_compared_exactly_in_decimals_up_to_the_last_cent(store: Any) -> None:
    _reserve(store, "r1")
    _reconcile(store, "r1", 0.01, 0.1)
    _reserve(store, "r2")  # holds the last cost, 0.1
    # 0.1 + 0.2 is exactly 0.3 in the table (0.30000000000000004 in floats).
    assert _reconcile(store, "r2", 0.1, 0.2) == ledger.LedgerTotals(0.3, 0.0)
    # committed 0.3 <= 0.5 - 0.2: exactly at the budget is still room, once.
    assert _reserve(store, "r3", max_usd=0.5) == ledger.Reservation(True, DAY, 0.2)
    assert _reserve(store, "r4", max_usd=0.5) == ledger.Reservation(
        False, DAY, 0.2, spent_usd=0.3, reserved_usd=0.2
    )


def test_a_reservation_refused_on_a_new_period_still_creates_its_empty_item(store: Any) -> None:
    assert _reserve(store, "r1", max_usd=0) == ledger.Reservation(False, DAY, 0.01, 0.0, 0.0)
    assert store.newest_totals("t1") == (DAY, ledger.LedgerTotals(0.0, 0.0))
    assert store.recent_holds("t1") == [(DAY, {})]


def test_a_redelivered_reservation_answers_its_own_hold_and_holds_nothing_more(
    store: Any,
) -> None:
    assert _reserve(store, "r1") == ledger.Reservation(True, DAY, 0.01)
    assert _reserve(store, "r1") == ledger.Reservation(True, DAY, 0.01)  # room, held already
    assert store.totals("t1", DAY) == ledger.LedgerTotals(0.0, 0.01)
    assert _reserve(store, "r1", max_usd=0.01) == ledger.Reservation(True, DAY, 0.01)
    _reserve(store, "r2")
    assert _reconcile(store, "r2", 0.01, 0.5) is not None  # the last cost is now 0.5
    # Over the budget now, and the estimate changed: the run's own hold is its answer.
    assert _reserve(store, "r1", max_usd=0.01) == ledger.Reservation(True, DAY, 0.01)
    assert _reserve(store, "r1") == ledger.Reservation(True, DAY, 0.01)
    assert store.totals("t1", DAY) == ledger.LedgerTotals(0.5, 0.01)
    assert store.recent_holds("t1") == [(DAY, {"r1": 0.01})]


def test_a_reconcile_swaps_the_hold_for_the_cost_once_and_only_on_the_very_hold(
    store: Any,
) -> None:
    _reserve(store, "r1")
    _reserve(store, "r2")
    before = store.totals("t1", DAY)
    assert _reconcile(store, "r1", 0.02, 0.4) is None  # not the estimate it holds
    assert _reconcile(store, "r9", 0.01, 0.4) is None  # no hold at all
    assert store.reconcile("t1", "day:2026-12-01", run_id="r1", estimate=0.01, actual_usd=1) is None
    assert store.reconcile("t9", DAY, run_id="r1", estimate=0.01, actual_usd=1) is None
    assert store.totals("t1", DAY) == before == ledger.LedgerTotals(0.0, 0.02)
    # Without recording the cost: the next estimate is still the default.
    assert _reconcile(store, "r1", 0.01, 0.4, record_cost=False) == ledger.LedgerTotals(0.4, 0.01)
    assert _reconcile(store, "r1", 0.01, 0.4) is None  # reconciled already
    assert _reserve(store, "r3") == ledger.Reservation(True, DAY, 0.01)
    # A cost that is not a number >= 0 is charged as 0 (and recorded as the last cost).
    assert _reconcile(store, "r2", 0.01, float("nan")) == ledger.LedgerTotals(0.4, 0.01)
    assert _reconcile(store, "r3", 0.01, 0.25) == ledger.LedgerTotals(0.65, 0.0)
    assert _reserve(store, "r4") == ledger.Reservation(True, DAY, 0.25)
    assert store.totals("t1", DAY) == ledger.LedgerTotals(0.65, 0.25)


def test_periods_are_read_newest_first_in_key_order_per_trigger(store: Any) -> None:
    for period, run in [("day:2026-11-30", "a"), ("day:2026-12-01", "b"), ("day:2026-11-29", "c")]:
        _reserve(store, run, period=period)
    store.reserve("t2", "day:2026-12-31", run_id="z", max_usd=1, expires=None)
    store.reserve("t1", "day:2026-12-01", run_id="b2", max_usd=1, expires=None)
    assert store.recent_holds("t1") == [
        ("day:2026-12-01", {"b": 0.01, "b2": 0.01}),
        ("day:2026-11-30", {"a": 0.01}),
        ("day:2026-11-29", {"c": 0.01}),
    ]
    assert [p for p, _ in store.recent_holds("t1", periods=2)] == [
        "day:2026-12-01",
        "day:2026-11-30",
    ]
    assert store.newest_totals("t1") == ("day:2026-12-01", ledger.LedgerTotals(0.0, 0.02))
    # The sort key's order, not time's: a "week:" key is newer than any "day:" key.
    _reserve(store, "w", period="week:2026-W01")
    assert store.newest_totals("t1") == ("week:2026-W01", ledger.LedgerTotals(0.0, 0.01))
    assert store.recent_holds("t9") == [] and store.newest_totals("t9") is None


# -- the serialize leases -----------------------------------------------------------------

KEY = "local#client-7"
NOW_MS = SLOT
LIVE = NOW_MS + 300_000


def _acquire(store: Any, run_id: str, *, lease: int = LIVE, now: int = NOW_MS) -> bool:
    return store.acquire(KEY, run_id=run_id, lease_until_ms=lease, now_ms=now)


def _waiter(trigger_id: str, since: int | None) -> dict:
    entry: dict = {"t": trigger_id, "k": "schedule", "at": SLOT}
    if since is not None:
        entry["w"] = since
    return entry


def test_a_free_key_is_acquired_and_a_held_one_refused_until_its_lease_ran_out(
    store: Any,
) -> None:
    assert store.holder(KEY) == locks.Holder(None, None, {})
    assert _acquire(store, "r1")
    assert store.holder(KEY) == locks.Holder("r1", LIVE, {})
    assert not _acquire(store, "r2", lease=LIVE + 1)
    assert not _acquire(store, "r2", now=LIVE)  # a lease ends after its last millisecond
    assert store.holder(KEY) == locks.Holder("r1", LIVE, {})
    # Ours already (handed to us): acquired again, on the lease given now.
    assert _acquire(store, "r1", lease=LIVE + 5)
    assert store.holder(KEY) == locks.Holder("r1", LIVE + 5, {})
    assert _acquire(store, "r2", lease=LIVE + 9, now=LIVE + 6)  # the holder died
    assert store.holder(KEY) == locks.Holder("r2", LIVE + 9, {})


def test_a_waiter_keeps_its_place_and_leaves_the_queue_when_it_acquires(store: Any) -> None:
    assert _acquire(store, "r1")
    store.wait(KEY, run_id="r2", entry=_waiter("t2", 5))
    store.wait(KEY, run_id="r2", entry=_waiter("t2", 9))  # redelivered: the first place stays
    store.wait(KEY, run_id="r3", entry=_waiter("t3", 7))
    assert store.holder(KEY) == locks.Holder(
        "r1", LIVE, {"r2": _waiter("t2", 5), "r3": _waiter("t3", 7)}
    )
    assert not _acquire(store, "r2")
    assert _acquire(store, "r2", now=LIVE + 1)
    assert store.holder(KEY) == locks.Holder("r2", LIVE, {"r3": _waiter("t3", 7)})


def test_a_wait_on_a_key_nobody_holds_queues_without_an_owner(store: Any) -> None:
    store.wait(KEY, run_id="r2", entry=_waiter("t2", 5))
    assert store.holder(KEY) == locks.Holder(None, None, {"r2": _waiter("t2", 5)})
    assert _acquire(store, "r3")
    assert store.holder(KEY) == locks.Holder("r3", LIVE, {"r2": _waiter("t2", 5)})


def test_leave_takes_a_run_out_of_the_queue_and_is_a_no_op_otherwise(store: Any) -> None:
    store.leave(KEY, run_id="r2")  # no key: nothing is created
    assert store.holder(KEY) == locks.Holder(None, None, {})
    assert _acquire(store, "r1")
    store.wait(KEY, run_id="r2", entry=_waiter("t2", 5))
    store.wait(KEY, run_id="r3", entry=_waiter("t3", 6))
    store.leave(KEY, run_id="r2")
    store.leave(KEY, run_id="r9")
    assert store.holder(KEY) == locks.Holder("r1", LIVE, {"r3": _waiter("t3", 6)})


def test_a_release_frees_the_key_only_for_its_owner(store: Any) -> None:
    assert store.release(KEY, run_id="r1", handoff_until_ms=LIVE) is None  # no key
    assert store.holder(KEY) == locks.Holder(None, None, {})
    assert _acquire(store, "r1")
    assert store.release(KEY, run_id="r2", handoff_until_ms=LIVE) is None  # not its key
    assert store.holder(KEY) == locks.Holder("r1", LIVE, {})
    assert store.release(KEY, run_id="r1", handoff_until_ms=LIVE + 1) is None
    assert store.holder(KEY) == locks.Holder(None, None, {})
    assert store.release(KEY, run_id="r1", handoff_until_ms=LIVE + 1) is None  # gone already
    assert _acquire(store, "r2", lease=LIVE + 2)
    assert store.holder(KEY) == locks.Holder("r2", LIVE + 2, {})


def test_a_release_hands_the_key_to_the_oldest_waiter_ties_in_run_id_order(store: Any) -> None:
    assert _acquire(store, "r1")
    for run_id, since in [("r5", 7), ("r4", 5), ("r3", 5)]:
        store.wait(KEY, run_id=run_id, entry=_waiter(f"t{run_id[1]}", since))
    handoff = LIVE + 120_000
    assert store.release(KEY, run_id="r1", handoff_until_ms=handoff) == ("r3", _waiter("t3", 5))
    assert store.holder(KEY) == locks.Holder(
        "r3", handoff, {"r4": _waiter("t4", 5), "r5": _waiter("t5", 7)}
    )
    assert not _acquire(store, "r4")  # the key is kept for the waiter it was handed to
    assert _acquire(store, "r3")
    # A waiter with no time counts as the oldest of all.
    store.wait(KEY, run_id="r9", entry=_waiter("t9", None))
    assert store.release(KEY, run_id="r3", handoff_until_ms=handoff) == ("r9", _waiter("t9", None))
    assert store.holder(KEY).owner == "r9"
