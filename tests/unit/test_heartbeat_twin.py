"""The heartbeat (``services/heartbeat/``) on the in-memory store twin: no AWS at all.

The twin (``tests/memory_store.py``) answers as the real store does; the contract suite
(``tests/functional/test_store_contract.py``) holds it to that. Here it stands in for the
store modules of the reaper, the shard reader, its sends and its slots, so the
heartbeat's decisions on what the store holds run in milliseconds: the reaping of a lease
that ran out (and the disable a lost run can bring), the re-keying of a row
(``refresh_due``), and a shard's window where it needs no queue (a tick that only reaps,
one out of time, one whose window another tick took). A path that sends a fire needs SQS
and is left to the functional suite. Any call to AWS fails the test (``no_aws``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chalicelib.domain.codec import encode_schedule
from chalicelib.domain.epoch_ms import ms
from chalicelib.domain.schedule import ScheduleSpec
from chalicelib.observability import metric_counts, reset_metric_counts
from chalicelib.services.heartbeat import reaper, send, shards, slots
from chalicelib.services.heartbeat.reaper import LOST_ERROR, reap_expired, refresh_due
from chalicelib.services.heartbeat.report import TickReport
from chalicelib.services.pipeline import Pipeline
from chalicelib.services.runs import new_run_record
from chalicelib.settings import reset_settings
from chalicelib.store.triggers import STANDING_DUE, TriggerModel, shard_of
from tests.memory_store import MemoryStore, without_queues

SLOT = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
NOW = SLOT + timedelta(minutes=5)
NOW_MS = ms(NOW)
HOURLY = encode_schedule(ScheduleSpec(interval_s=3600, anchor_at=SLOT - timedelta(hours=1)))
NEXT_MS = ms(SLOT + timedelta(hours=1))  # the hourly schedule's next slot
EXPIRED = NOW_MS - 1  # a lease that ran out
LIVE = NOW_MS + 60_000
SHARDS = 4
LOOKAHEAD_S = 90
HORIZON_MS = NOW_MS + LOOKAHEAD_S * 1000
SHARD = shard_of("t1", SHARDS)


@pytest.fixture
def twin(monkeypatch: pytest.MonkeyPatch, no_aws: list[str]) -> Iterator[MemoryStore]:
    """The twin in place of the heartbeat's store modules; settings with no queue at all."""
    without_queues(monkeypatch)
    monkeypatch.setenv("CRONHOOK_DUE_SHARDS", str(SHARDS))
    monkeypatch.setenv("CRONHOOK_HEARTBEAT_S", "60")
    monkeypatch.setenv("CRONHOOK_LOOKAHEAD_S", str(LOOKAHEAD_S))
    reset_settings()
    store = MemoryStore()
    store.install(monkeypatch, reaper, shards, send, slots)
    yield store
    reset_settings()


def _put(twin: MemoryStore, trigger_id: str = "t1", **fields: Any) -> None:
    values = {
        "tenant": "local",
        "workflow": "echo",
        "kind": "schedule",
        "spec": '{"workflow":"echo"}',
        "sched": HOURLY,
        "created_ms": ms(SLOT) - 1,
        "updated_ms": ms(SLOT) - 1,
        "next_fire_at": NEXT_MS,
        "due_at": NEXT_MS,
        "due_shard": shard_of(trigger_id, SHARDS),
        **fields,
    }
    twin.put_trigger(TriggerModel(trigger_id, **values))


def _entry(lease: int, *, started: bool = True, **more: Any) -> dict:
    entry = {"l": lease, "s": 1 if started else 0, "k": "s", "t": ms(SLOT), **more}
    if started:
        entry.setdefault("a", ms(SLOT) + 2)
    return entry


def _get(twin: MemoryStore, trigger_id: str = "t1") -> Any:
    item = twin.get_trigger(trigger_id)
    assert item is not None
    return item


def _in_shard(shard: str, prefix: str, *, other: bool = False) -> str:
    """A trigger id in ``shard`` (``other``: in another one)."""
    ids = (f"{prefix}{n}" for n in range(100))
    return next(t for t in ids if (shard_of(t, SHARDS) == shard) != other)


def _reap(twin: MemoryStore, trigger_id: str = "t1", **kwargs: Any) -> int:
    return reap_expired(_get(twin, trigger_id), now=NOW, pipeline=Pipeline(), **kwargs)


# -- the reaper ---------------------------------------------------------------------------


def test_an_expired_lease_is_reaped_recorded_lost_and_the_row_keyed_on_its_next_slot(
    twin: MemoryStore,
) -> None:
    _put(twin, in_flight={"t1.r0": _entry(EXPIRED)}, due_at=EXPIRED, run_count=3)
    assert _reap(twin) == 1
    item = _get(twin)
    assert (item.in_flight, item.run_count, item.consecutive_failures) == ({}, 4, 1)
    assert item.last_run == {
        "id": "t1.r0",
        "status": "lost",
        "finished_at": NOW_MS,
        "error": LOST_ERROR,
    }
    assert item.status == "active"  # one failure of five; the schedule goes on
    run = twin.get_run("t1", "t1.r0")
    assert run is not None
    assert (run.status, run.error, run.surface) == ("lost", LOST_ERROR, "schedule")
    assert (run.scheduled_for, run.started_at, run.finished_at) == (
        ms(SLOT),
        ms(SLOT) + 2,  # the entry kept when it started
        NOW_MS,
    )
    assert (item.due_at, item.due_shard) == (EXPIRED, SHARD)  # the reap leaves the key
    refresh_due(item, now=NOW)
    assert (_get(twin).due_at, _get(twin).due_shard) == (NEXT_MS, SHARD)
    assert _reap(twin) == 0  # nothing left to reap


def test_a_live_lease_is_reaped_only_when_told_to_and_the_sparing_run_never(
    twin: MemoryStore,
) -> None:
    flights = {"t1.r0": _entry(LIVE), "t1.r1": _entry(EXPIRED), "t1.r2": _entry(LIVE)}
    _put(twin, in_flight=flights, due_at=EXPIRED)
    assert _reap(twin) == 1
    assert sorted(_get(twin).in_flight) == ["t1.r0", "t1.r2"]
    assert _reap(twin, reap_all=True, sparing="t1.r2", error="restart") == 1
    item = _get(twin)
    assert list(item.in_flight) == ["t1.r2"]
    assert (item.last_run["id"], item.last_run["error"]) == ("t1.r0", "restart")
    assert twin.get_run("t1", "t1.r2") is None


def test_a_reap_from_a_stale_read_is_fenced_out_by_a_settle_and_counts_nothing(
    twin: MemoryStore,
) -> None:
    _put(twin, in_flight={"t1.r0": _entry(EXPIRED)}, due_at=EXPIRED)
    stale = _get(twin)
    last = {"id": "t1.r0", "status": "ok", "finished_at": NOW_MS - 5}
    settled = twin.settle_run("t1", run_id="t1.r0", succeeded=True, last_run=last, shard=SHARD)
    assert settled is not None
    assert reap_expired(stale, now=NOW, pipeline=Pipeline()) == 0
    item = _get(twin)
    assert (item.run_count, item.consecutive_failures, item.last_run) == (1, 0, last)


def test_a_run_that_settles_and_is_recorded_after_the_reapers_read_stays_succeeded(
    twin: MemoryStore,
) -> None:
    # Seen: the reaper read an expired lease (the runner slow, not dead); the runner then
    # settled and recorded the run succeeded; the reaper recorded it lost over that record
    # and its reap was fenced out: last_run ok, the run shown lost forever.
    _put(twin, in_flight={"t1.r0": _entry(EXPIRED)}, due_at=EXPIRED, run_count=3)
    stale = _get(twin)  # the reaper's read
    last = {"id": "t1.r0", "status": "succeeded", "finished_at": NOW_MS - 5}
    assert twin.settle_run("t1", run_id="t1.r0", succeeded=True, last_run=last, shard=SHARD)
    ran = new_run_record(stale, run_id="t1.r0", surface="schedule", scheduled_ms=ms(SLOT), now=NOW)
    ran = replace(ran, status="succeeded", started_at=ms(SLOT) + 2, finished_at=NOW_MS - 5)
    assert twin.put_run(ran)  # the runner's record, written after its settle
    reset_metric_counts()
    assert reap_expired(stale, now=NOW, pipeline=Pipeline()) == 0
    assert twin.get_run("t1", "t1.r0") == ran
    item = _get(twin)
    assert (item.in_flight, item.run_count, item.consecutive_failures, item.last_run) == (
        {},
        4,
        0,
        last,
    )
    assert metric_counts("Runs") == {}  # no run counted lost


def test_a_one_time_trigger_whose_run_was_lost_is_disabled_and_leaves_the_due_index(
    twin: MemoryStore,
) -> None:
    _put(
        twin,
        kind="at",
        sched=None,
        next_fire_at=None,
        due_at=EXPIRED,
        version=2,
        in_flight={"t1.r0": _entry(EXPIRED)},
    )
    assert _reap(twin) == 1
    item = _get(twin)
    assert (item.status, item.disabled_reason, item.disabled_ms, item.version) == (
        "disabled",
        "max_runs",
        NOW_MS,
        3,
    )
    assert (item.due_at, item.due_shard, item.in_flight) == (None, None, {})
    assert list(twin.iter_due(SHARD, until_ms=HORIZON_MS)) == []
    refresh_due(item, now=NOW)  # nothing to key: no write
    assert _get(twin) == item


def test_the_last_failure_allowed_disables_a_schedule_and_ends_its_slots(
    twin: MemoryStore,
) -> None:
    _put(twin, consecutive_failures=4, due_at=EXPIRED, in_flight={"t1.r0": _entry(EXPIRED)})
    assert _reap(twin) == 1
    item = _get(twin)
    assert (item.status, item.disabled_reason, item.consecutive_failures) == (
        "disabled",
        "failures",
        5,
    )
    assert (item.next_fire_at, item.due_at, item.due_shard) == (NEXT_MS, None, None)


def test_a_lost_claim_that_never_started_is_not_a_failure_of_the_workflow(
    twin: MemoryStore,
) -> None:
    _put(
        twin,
        consecutive_failures=4,
        due_at=EXPIRED,
        in_flight={"t1.r0": _entry(EXPIRED, started=False)},
    )
    assert _reap(twin) == 1
    item = _get(twin)
    assert (item.status, item.consecutive_failures, item.run_count) == ("active", 4, 1)
    run = twin.get_run("t1", "t1.r0")
    assert run is not None and (run.status, run.started_at) == ("lost", None)


def test_a_one_time_trigger_whose_claim_was_lost_before_it_started_is_disabled_not_stuck(
    twin: MemoryStore,
) -> None:
    """Its one slot is gone (recorded lost); left active it would never fire again."""
    _put(
        twin,
        kind="at",
        sched=None,
        next_fire_at=None,
        due_at=EXPIRED,
        in_flight={"t1.r0": _entry(EXPIRED, started=False)},
    )
    assert _reap(twin) == 1
    item = _get(twin)
    assert (item.status, item.disabled_reason, item.consecutive_failures) == (
        "disabled",
        "max_runs",
        0,
    )
    assert (item.due_at, item.in_flight) == (None, {})
    run = twin.get_run("t1", "t1.r0")
    assert run is not None and run.status == "lost"


# -- refresh_due --------------------------------------------------------------------------

EARLY_LEASE = NEXT_MS - 20 * 60_000  # ends well before the next slot: it keys the row
LATE_LEASE = NEXT_MS - 60_000  # the next slot's claim reaps it


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"in_flight": {"r": _entry(EARLY_LEASE)}}, EARLY_LEASE),
        ({"in_flight": {"r": _entry(LATE_LEASE)}}, NEXT_MS),
        ({"due_at": EARLY_LEASE}, NEXT_MS),  # the lease is gone: back to the slot
        ({"status": "disabled", "in_flight": {"r": _entry(LATE_LEASE)}}, LATE_LEASE),
        ({"status": "disabled"}, None),
        ({"next_fire_at": None, "in_flight": {"a": _entry(LIVE), "b": _entry(EXPIRED)}}, EXPIRED),
        ({"next_fire_at": None, "next_slot": NEXT_MS, "due_at": EARLY_LEASE}, STANDING_DUE),
    ],
    ids=[
        "early-lease",
        "late-lease",
        "lease-gone",
        "disabled-leased",
        "disabled-idle",
        "no-slot-earliest-lease",
        "standing",
    ],
)
def test_refresh_due_keys_the_row_on_its_earliest_concern(
    twin: MemoryStore, fields: dict, expected: int | None
) -> None:
    _put(twin, **{"due_at": 1, "due_shard": "9", **fields})
    refresh_due(_get(twin), now=NOW)
    item = _get(twin)
    assert item.due_at == expected
    assert item.due_shard == (None if expected is None else SHARD)


def test_refresh_due_writes_nothing_when_the_key_is_right_or_the_read_is_stale(
    twin: MemoryStore,
) -> None:
    _put(twin, due_shard="9")  # keyed right, in a former shard: not moved for that
    refresh_due(_get(twin), now=NOW)
    assert (_get(twin).due_at, _get(twin).due_shard) == (NEXT_MS, "9")
    _put(twin, "t2", due_at=EARLY_LEASE)
    stale = _get(twin, "t2")
    assert twin.set_due("t2", expected_due_at=EARLY_LEASE, due_at=LIVE, shard="3")
    refresh_due(stale, now=NOW)  # fenced on the due_at it read
    assert (_get(twin, "t2").due_at, _get(twin, "t2").due_shard) == (LIVE, "3")
    refresh_due(None, now=NOW)  # a trigger that is gone


# -- a shard's window, where it sends nothing ---------------------------------------------


def _tick(*, deadline: float | None = None) -> TickReport:
    report = TickReport(now_ms=NOW_MS, started=time.perf_counter())
    read = shards.tick_shard(
        int(SHARD),
        now=NOW,
        deadline=time.perf_counter() + 30 if deadline is None else deadline,
        pipeline=Pipeline(),
        report=report,
    )
    assert read
    return report


def test_a_first_tick_takes_the_window_and_reaps_a_row_due_by_its_lease(
    twin: MemoryStore,
) -> None:
    _put(twin, due_at=EXPIRED, in_flight={"t1.r0": _entry(EXPIRED)})
    report = _tick()
    assert (report.rows_read, report.reaped, report.due, report.enqueued) == (1, 1, 0, 0)
    assert (report.errors, report.handed_over) == (0, 0)
    assert twin.get_cursor(SHARD) == HORIZON_MS
    item = _get(twin)
    assert (item.in_flight, item.due_at, item.due_shard) == ({}, NEXT_MS, SHARD)
    assert twin.get_run("t1", "t1.r0").status == "lost"  # type: ignore[union-attr]


def test_a_tick_whose_window_was_taken_still_reaps_the_leases_behind_the_cursor(
    twin: MemoryStore,
) -> None:
    _put(twin, due_at=EXPIRED, in_flight={"t1.r0": _entry(EXPIRED)})
    assert twin.advance_cursor(SHARD, expected=None, cursor_ms=HORIZON_MS + 5)
    report = _tick()
    assert (report.rows_read, report.reaped) == (1, 1)
    assert twin.get_cursor(SHARD) == HORIZON_MS + 5  # not moved: nothing new to read
    assert _get(twin).due_at == NEXT_MS


def test_a_tick_out_of_time_hands_its_window_back_and_touches_no_row(
    twin: MemoryStore,
) -> None:
    _put(twin, due_at=EXPIRED, in_flight={"t1.r0": _entry(EXPIRED)})
    before = _get(twin)
    report = _tick(deadline=time.perf_counter() - 1)
    assert (report.rows_read, report.reaped, report.handed_over) == (0, 0, 1)
    assert twin.get_cursor(SHARD) is None  # back where it was: the next tick reads it all
    assert _get(twin) == before
    cursor = NOW_MS - 60_000
    old = _in_shard(SHARD, "old")
    _put(twin, old, next_fire_at=cursor - 1, due_at=cursor - 1)  # behind the cursor
    assert twin.advance_cursor(SHARD, expected=None, cursor_ms=cursor)
    report = _tick(deadline=time.perf_counter() - 1)
    assert (report.rows_read, report.handed_over) == (0, 2)  # the new rows and the old
    assert twin.get_cursor(SHARD) == cursor
    assert _get(twin) == before


def test_a_tick_reads_only_its_own_shard(twin: MemoryStore) -> None:
    other = _in_shard(SHARD, "x", other=True)
    _put(twin, other, due_at=EXPIRED, in_flight={f"{other}.r0": _entry(EXPIRED)})
    report = _tick()
    assert (report.rows_read, report.reaped) == (0, 0)
    assert list(_get(twin, other).in_flight) == [f"{other}.r0"]


# -- a slot inside a window already sent --------------------------------------------------


def test_a_slot_is_sent_by_its_writer_only_inside_a_window_already_taken(
    twin: MemoryStore,
) -> None:
    _put(twin)
    item = _get(twin)
    assert not slots.enqueue_if_sent_window(item, now=NOW)  # no tick took a window yet
    assert twin.advance_cursor(SHARD, expected=None, cursor_ms=NEXT_MS - 1)
    assert not slots.enqueue_if_sent_window(item, now=NOW)  # the next tick's to send
    _put(twin, "paused", status="disabled")
    assert not slots.enqueue_if_sent_window(_get(twin, "paused"), now=NOW)
