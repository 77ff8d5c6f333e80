"""Jitter (domain/schedule/jitter.py): bounded, stable per trigger and slot, in order."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from chalicelib.domain.schedule import ScheduleSpec, fire_at_ms, jitter_ms, preview

SLOT = 1_798_794_000_000  # 2027-01-01T09:00:00Z


@pytest.mark.parametrize("jitter_s", [1, 2, 30, 600, 3600])
def test_jitter_is_whole_seconds_below_jitter_s(jitter_s):
    delays = [jitter_ms(f"trg_{n}", SLOT, jitter_s, next_slot_ms=None) for n in range(300)]
    assert all(0 <= d < jitter_s * 1000 and d % 1000 == 0 for d in delays)
    if jitter_s >= 30:
        assert len(set(delays)) > 10, "not spread"


def test_jitter_is_stable_per_trigger_and_slot_and_differs_between_them():
    first = jitter_ms("trg_a", SLOT, 3600, next_slot_ms=None)
    assert jitter_ms("trg_a", SLOT, 3600, next_slot_ms=None) == first  # a retry keeps it
    others = {jitter_ms("trg_a", SLOT + k * 86_400_000, 3600, next_slot_ms=None) for k in range(20)}
    assert len(others) > 1
    assert {jitter_ms(f"trg_{k}", SLOT, 3600, next_slot_ms=None) for k in range(20)} != {first}


@pytest.mark.parametrize(
    ("gap_s", "bound_s"),
    [(60, 59), (61, 60), (2, 1), (1, 0), (7200, 3600)],
)
def test_jitter_ends_a_second_before_the_next_slot(gap_s, bound_s):
    delays = [
        jitter_ms(f"trg_{n}", SLOT, 3600, next_slot_ms=SLOT + gap_s * 1000) for n in range(300)
    ]
    assert max(delays) < max(bound_s, 1) * 1000
    assert all(SLOT + d <= SLOT + gap_s * 1000 - 1000 or d == 0 for d in delays)


def test_fire_at_is_the_slot_without_jitter_and_keeps_the_slots_order_with_it():
    plain = ScheduleSpec(cron="* * * * *")
    assert fire_at_ms("trg_x", SLOT, plain) == SLOT
    jittered = ScheduleSpec(cron="* * * * *", jitter_s=3600)
    slots = preview(jittered, start=datetime(2027, 1, 1, 9, tzinfo=UTC), count=50)
    fires = [fire_at_ms("trg_x", int(s.timestamp() * 1000), jittered) for s in slots]
    assert fires == sorted(fires) and len(set(fires)) == len(fires)
    assert all(0 <= f - s.timestamp() * 1000 < 59_000 for f, s in zip(fires, slots, strict=True))
    assert len({f - s.timestamp() * 1000 for f, s in zip(fires, slots, strict=True)}) > 5
