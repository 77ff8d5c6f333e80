"""The slots a tick sends for a standing row (services/heartbeat/slots.standing_slots)."""

from __future__ import annotations

import json

from chalicelib.services.heartbeat.slots import MAX_STANDING_SLOTS, standing_slots
from chalicelib.store.triggers import STANDING_DUE, DueRow

T0 = 1_796_040_000_000  # 2026-11-30 12:00:00 UTC, a whole minute
MIN = 60_000


def _row(**sched) -> DueRow:
    return DueRow("trg_x", STANDING_DUE, None, json.dumps(sched))


def test_a_window_sends_the_slots_after_the_cursor_up_to_the_horizon():
    row = _row(i=60, an=T0)
    got = standing_slots(row, cursor=T0 + MIN, horizon_ms=T0 + 2 * MIN, now_ms=T0 + MIN - 500)
    assert got == [T0 + 2 * MIN]


def test_the_slot_on_the_cursor_was_sent_by_the_tick_before():
    row = _row(i=60, an=T0)
    got = standing_slots(row, cursor=T0 + 2 * MIN, horizon_ms=T0 + 3 * MIN, now_ms=T0 + 2 * MIN)
    assert got == [T0 + 3 * MIN]


def test_without_a_cursor_the_latest_slot_at_or_before_now_goes_too():
    row = _row(i=60, an=T0)
    got = standing_slots(row, cursor=None, horizon_ms=T0 + 3 * MIN, now_ms=T0 + 2 * MIN + 30_000)
    assert got == [T0 + 2 * MIN, T0 + 3 * MIN]


def test_after_a_gap_only_the_first_missed_slot_goes_not_every_one():
    row = _row(i=60, an=T0)
    now = T0 + 60 * MIN + 30_000
    got = standing_slots(row, cursor=T0 + MIN, horizon_ms=now + MIN, now_ms=now)
    assert got == [T0 + 2 * MIN, T0 + 61 * MIN]


def test_a_gap_shorter_than_a_period_with_no_slot_in_it_sends_only_what_comes():
    row = _row(i=900, an=T0)
    now = T0 + 2 * MIN
    got = standing_slots(row, cursor=T0 + MIN, horizon_ms=now + MIN, now_ms=now)
    assert got == []


def test_a_quarter_hour_cron_after_a_gap_sends_its_first_missed_slot():
    row = _row(c="*/15 * * * *", tz="UTC")
    now = T0 + 200 * MIN + 7_000  # 15:20:07
    got = standing_slots(row, cursor=T0, horizon_ms=now + MIN, now_ms=now)
    assert got == [T0 + 15 * MIN]


def test_a_quarter_hour_cron_without_a_cursor_sends_its_latest_slot():
    row = _row(c="*/15 * * * *", tz="UTC")
    now = T0 + 200 * MIN + 7_000  # 15:20:07
    got = standing_slots(row, cursor=None, horizon_ms=now + MIN, now_ms=now)
    assert got == [T0 + 195 * MIN]


def test_a_schedule_faster_than_the_lookahead_is_capped_per_row():
    row = _row(i=1, an=T0)
    got = standing_slots(row, cursor=T0, horizon_ms=T0 + 15 * MIN, now_ms=T0)
    assert len(got) == MAX_STANDING_SLOTS
    assert got[:2] == [T0 + 1000, T0 + 2000]


def test_a_row_without_a_schedule_sends_nothing():
    assert (
        standing_slots(DueRow("t", STANDING_DUE, None, None), cursor=T0, horizon_ms=T0, now_ms=T0)
        == []
    )
