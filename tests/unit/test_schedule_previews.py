"""Many fires at once: ``preview`` (the next N) and ``fires_between`` (a window, as backfill
enumerates it)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from chalicelib.domain.errors import ValidationError
from chalicelib.domain.schedule import ScheduleSpec, fires_between, preview, slots_diff
from chalicelib.domain.schedule.previews import SLOTS_DIFF_SCAN

NOW = datetime(2026, 6, 10, 12, 0, tzinfo=UTC)  # a Wednesday
START = datetime(2026, 1, 1, tzinfo=UTC)


def iso(instants: list[datetime]) -> list[str]:
    return [instant.isoformat() for instant in instants]


# --- preview --------------------------------------------------------------------------------


def test_preview_lists_the_next_fires_in_order():
    spec = ScheduleSpec(cron="0 */6 * * *")
    assert iso(preview(spec, start=NOW, count=3)) == [
        "2026-06-10T18:00:00+00:00",
        "2026-06-11T00:00:00+00:00",
        "2026-06-11T06:00:00+00:00",
    ]


@pytest.mark.parametrize("count", [1, 37, 100])
def test_preview_gives_exactly_count_fires_strictly_increasing(count):
    fires = preview(ScheduleSpec(cron="*/5 * * * *"), start=NOW, count=count)
    assert len(fires) == count
    assert fires[0] > NOW
    assert all(earlier < later for earlier, later in zip(fires, fires[1:], strict=False))


def test_preview_of_a_one_time_schedule_stops_after_it():
    spec = ScheduleSpec(at=NOW + timedelta(days=1))
    assert preview(spec, start=NOW, count=5) == [NOW + timedelta(days=1)]
    assert preview(spec, start=NOW + timedelta(days=2), count=5) == []


@pytest.mark.parametrize("count", [0, -1, 101, True, 2.0])
def test_preview_count_out_of_range_is_a_validation_error(count):
    with pytest.raises(ValidationError) as raised:
        preview(ScheduleSpec(cron="0 8 * * *"), start=NOW, count=count)
    assert (raised.value.field, raised.value.message) == (
        "count",
        "count must be between 1 and 100",
    )


# --- fires_between ----------------------------------------------------------------------


def test_window_is_half_open_a_slot_at_start_counts_and_one_at_end_does_not():
    spec = ScheduleSpec(cron="0 * * * *")
    fires = fires_between(spec, START, datetime(2026, 1, 1, 3, tzinfo=UTC), limit=10)
    assert iso(fires) == [
        "2026-01-01T00:00:00+00:00",
        "2026-01-01T01:00:00+00:00",
        "2026-01-01T02:00:00+00:00",
    ]


def test_window_stops_at_limit_so_a_caller_can_detect_too_many_slots():
    spec = ScheduleSpec(cron="* * * * *")
    fires = fires_between(spec, START, datetime(2026, 1, 2, tzinfo=UTC), limit=1001)
    assert len(fires) == 1001
    assert fires[-1].isoformat() == "2026-01-01T16:40:00+00:00"


def test_interval_window_keeps_the_anchor_phase():
    spec = ScheduleSpec(interval_s=3600, anchor_at=datetime(2025, 12, 31, 22, 30, tzinfo=UTC))
    fires = fires_between(spec, START, datetime(2026, 1, 1, 3, tzinfo=UTC), limit=10)
    assert iso(fires) == [
        "2026-01-01T00:30:00+00:00",
        "2026-01-01T01:30:00+00:00",
        "2026-01-01T02:30:00+00:00",
    ]


def test_window_applies_the_dst_policy_of_the_schedule():
    # Europe/Berlin falls back at 2026-10-25 01:00 UTC; 02:30 local happens twice.
    spec = ScheduleSpec(cron="30 2 * * *", timezone="Europe/Berlin", dst_repeated="both")
    start, end = datetime(2026, 10, 25, tzinfo=UTC), datetime(2026, 10, 26, tzinfo=UTC)
    assert iso(fires_between(spec, start, end, limit=10)) == [
        "2026-10-25T00:30:00+00:00",
        "2026-10-25T01:30:00+00:00",
    ]


def test_one_time_schedule_outside_the_window_gives_no_slot():
    spec = ScheduleSpec(at=datetime(2026, 2, 1, tzinfo=UTC))
    assert fires_between(spec, START, datetime(2026, 1, 31, tzinfo=UTC), limit=10) == []


def test_window_refuses_naive_bounds():
    with pytest.raises(ValueError):
        fires_between(ScheduleSpec(cron="0 * * * *"), datetime(2026, 1, 1), START, limit=1)


# --- slots_diff -----------------------------------------------------------------------------

DENSE_SPARSE = [
    (ScheduleSpec(interval_s=5, anchor_at=NOW), ScheduleSpec(interval_s=3600, anchor_at=NOW)),
    (ScheduleSpec(cron="* * * * *"), ScheduleSpec(cron="0 9 * * *")),
    (ScheduleSpec(cron="*/5 * * * *"), ScheduleSpec(business_day=1, time="09:00")),
]


@pytest.mark.parametrize(("dense", "sparse"), DENSE_SPARSE)
@pytest.mark.parametrize("dense_first", [True, False])
def test_a_diff_between_a_dense_and_a_sparse_schedule_is_cut_at_the_dense_ones_scan(
    dense, sparse, dense_first
):
    # PATCH ?dry_run=true over 30 days: one schedule has more than SLOTS_DIFF_SCAN slots,
    # the other far fewer; the sparse one is complete, the dense one ends the diff.
    old, new = (dense, sparse) if dense_first else (sparse, dense)
    end = NOW + timedelta(days=30)
    added, removed, cut = slots_diff(old, new, NOW, end)
    assert cut
    dense_slots = fires_between(dense, NOW + timedelta(microseconds=1), end, limit=SLOTS_DIFF_SCAN)
    horizon = dense_slots[-1]
    sparse_slots = fires_between(
        sparse, NOW + timedelta(microseconds=1), horizon + timedelta(microseconds=1), limit=5000
    )
    lost, gained = (dense_slots, sparse_slots) if dense_first else (sparse_slots, dense_slots)
    assert removed == [s for s in lost if s not in set(gained)]
    assert added == [s for s in gained if s not in set(lost)]
    assert max(added + removed) <= horizon
