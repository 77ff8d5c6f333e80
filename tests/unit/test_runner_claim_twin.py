"""The runner's claim (``services/runner/claim.py``) on the in-memory store twin: no AWS at all.

The twin (``tests/memory_store.py``) answers as the real store does; the contract suite
(``tests/functional/test_store_contract.py``) holds it to that. Here it stands in for
the store's fire-path modules in the claim and the reaper, so the claim's decisions run in milliseconds.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from chalicelib.domain.codec import encode_schedule
from chalicelib.domain.epoch_ms import ms
from chalicelib.domain.schedule import ScheduleSpec
from chalicelib.services.heartbeat import reaper
from chalicelib.services.pipeline import Pipeline
from chalicelib.services.runner import claim
from chalicelib.store.sqs import FireMessage
from chalicelib.store.triggers import TriggerModel
from tests.memory_store import MemoryStore

NOW = datetime(2026, 11, 30, 12, 0, 5, tzinfo=UTC)
SLOT = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
SCHED = encode_schedule(ScheduleSpec(interval_s=60, anchor_at=SLOT - timedelta(hours=1)))
LEASE = ms(NOW) + 300_000


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> MemoryStore:
    twin = MemoryStore()
    twin.install(monkeypatch, claim, reaper)
    twin.put_trigger(
        TriggerModel(
            "t1",
            tenant="local",
            workflow="echo",
            kind="schedule",
            spec='{"workflow":"echo"}',
            sched=SCHED,
            created_ms=ms(SLOT) - 1,
            updated_ms=ms(SLOT) - 1,
            next_fire_at=ms(SLOT),
            due_at=ms(SLOT),
            due_shard="0",
        )
    )
    return twin


def _message(run_id: str = "t1.r1", **over: object) -> FireMessage:
    fields: dict = {"scheduled_ms": ms(SLOT), "sched": SCHED, "tenant": "local", **over}
    return FireMessage(run_id, "t1", "schedule", **fields)


def _claim(message: FireMessage) -> object:
    return claim.claim_scheduled(message, lease_ms=LEASE, now=NOW, pipeline=Pipeline())


def test_a_due_slot_is_claimed_started_and_moved_on(store: MemoryStore) -> None:
    outcome = _claim(_message())
    assert isinstance(outcome, tuple)
    item, message = outcome
    entry = store.in_flight_of(store.get_trigger("t1"))["t1.r1"]
    assert (entry["s"], entry["t"], entry["a"]) == (1, ms(SLOT), ms(NOW))
    assert store.next_slot_of(item) == ms(SLOT) + 60_000 and message.run_id == "t1.r1"


def test_the_same_message_delivered_twice_runs_once(store: MemoryStore) -> None:
    assert isinstance(_claim(_message()), tuple)
    assert _claim(_message()) == "dropped"
    assert list(store.in_flight_of(store.get_trigger("t1"))) == ["t1.r1"]


def test_a_message_of_a_deleted_trigger_is_dropped(store: MemoryStore) -> None:
    gone = FireMessage("gone.r1", "gone", "schedule", scheduled_ms=ms(SLOT), sched=SCHED)
    assert _claim(gone) == "dropped"
    assert store.get_trigger("gone") is None


def test_a_claim_deferred_before_it_started_is_started_by_its_message(
    store: MemoryStore,
) -> None:
    assert isinstance(_claim(_message()), tuple)
    assert store.defer_run("t1", run_id="t1.r1", lease_ms=LEASE + 60_000)
    assert isinstance(_claim(_message()), tuple)
    assert store.in_flight_of(store.get_trigger("t1"))["t1.r1"]["s"] == 1


def test_a_lease_that_ran_out_is_reaped_at_the_claim_and_recorded_lost(
    store: MemoryStore,
) -> None:
    item = store.get_trigger("t1")
    expired = {"l": ms(NOW) - 1, "s": 1, "k": "s", "t": ms(SLOT) - 60_000}
    assert item is not None
    store.put_trigger(replace(item, in_flight={"t1.r0": expired}))
    outcome = _claim(_message())
    assert isinstance(outcome, tuple)
    assert list(store.in_flight_of(store.get_trigger("t1"))) == ["t1.r1"]
    lost = store.get_run("t1", "t1.r0")
    assert lost is not None and lost.status == "lost"
