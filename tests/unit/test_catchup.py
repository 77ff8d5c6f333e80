"""Catch-up after downtime and ``overlap: buffer_all`` (domain/catchup.py): a table per mode."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from chalicelib.domain.catchup import MAX_RECORDS, MAX_WAITING, plan_slot
from chalicelib.domain.schedule import ScheduleSpec

SLOT = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
HOURLY = "0 * * * *"


def spec(mode: str = "latest", window_s: int = 86400, cron: str = HOURLY) -> ScheduleSpec:
    return ScheduleSpec(cron=cron, catchup_mode=mode, catchup_window_s=window_s)  # type: ignore[arg-type]


def hours(n: float) -> timedelta:
    return timedelta(hours=n)


@pytest.mark.parametrize("mode", ["latest", "all", "none"])
def test_a_slot_claimed_on_time_runs_and_the_next_slot_follows_now(mode):
    plan = plan_slot(spec(mode), SLOT, now=SLOT + timedelta(seconds=119))
    assert (plan.run, plan.passed) == (True, ())
    # The next slot is searched after now (all: after this slot, so none is passed).
    expected = SLOT if mode == "all" else SLOT + timedelta(seconds=119)
    assert plan.next_after == expected


def test_latest_merges_a_slot_passed_by_a_claim_that_was_only_a_little_late():
    # A message sent again within MISSED_AFTER_S is no downtime: the slot it passes merges
    # into its run (one record per slot, tests/reliability/test_restart.py), none missed.
    every_minute = spec(cron="* * * * *")
    plan = plan_slot(every_minute, SLOT, now=SLOT + timedelta(seconds=90))
    assert (plan.run, plan.passed) == (True, ())
    assert plan.next_after == SLOT + timedelta(seconds=90)
    late = plan_slot(every_minute, SLOT, now=SLOT + timedelta(seconds=150))
    assert late.run and [p.minute for p in late.passed] == [1, 2]
    assert late.passed_status == "missed"


def test_a_slot_buffered_behind_a_running_fire_merges_the_slots_it_waited_through():
    # overlap: buffer_one: the slots that came while it waited collapsed into it.
    every_minute = spec(cron="* * * * *")
    plan = plan_slot(every_minute, SLOT, now=SLOT + timedelta(minutes=5), merge=True)
    assert (plan.run, plan.passed) == (True, ())
    assert plan.next_after == SLOT + timedelta(minutes=5)


@pytest.mark.parametrize(
    ("mode", "run", "status", "passed", "next_after", "waits"),
    [
        # Down from 09:00 to 12:30: 10:00, 11:00 and 12:00 were missed too.
        ("latest", True, None, [10, 11, 12], 12.5, False),
        ("none", False, "missed", [10, 11, 12], 12.5, False),
        # all: this one runs now, the next (10:00) stays due and runs after it.
        ("all", True, None, [], 9, True),
    ],
)
def test_after_downtime_each_mode_runs_what_it_says_and_records_the_rest_missed(
    mode, run, status, passed, next_after, waits
):
    plan = plan_slot(spec(mode), SLOT, now=SLOT + hours(3.5))
    assert plan.run is run and plan.status == status
    assert [p.hour for p in plan.passed] == passed
    assert plan.passed_status == "missed"
    assert plan.next_after == SLOT.replace(hour=0) + hours(next_after)
    assert plan.waits_its_turn is waits


def test_catchup_all_records_the_slots_older_than_its_window_missed_and_resumes_inside_it():
    # Down 09:00 to 14:30 with a 2-hour window: 09:00-12:00 are missed; 13:00 and 14:00 run.
    plan = plan_slot(spec("all", window_s=7200), SLOT, now=SLOT + hours(5.5))
    assert (plan.run, plan.status) == (False, "missed")
    assert [p.hour for p in plan.passed] == [10, 11, 12]
    # The next slot searched from just before the window's start (12:30): 13:00.
    assert SLOT + hours(3) < plan.next_after < SLOT + hours(3.5)
    inside = plan_slot(spec("all", window_s=7200), SLOT + hours(4), now=SLOT + hours(5.5))
    assert (inside.run, inside.next_after, inside.waits_its_turn) == (True, SLOT + hours(4), True)


def test_a_long_downtime_records_at_most_max_records_and_counts_the_rest():
    plan = plan_slot(spec("none", cron="* * * * *"), SLOT, now=SLOT + hours(5))
    assert len(plan.passed) == MAX_RECORDS
    assert plan.passed_more == 5 * 60 - MAX_RECORDS
    assert plan.passed[0] == SLOT + timedelta(minutes=1)


@pytest.mark.parametrize(
    ("behind_minutes", "run", "passed"),
    [
        (0, True, 0),
        (MAX_WAITING, True, 0),  # exactly MAX_WAITING slots after this one: it waits its turn
        (MAX_WAITING + 5, False, 5),  # the oldest beyond MAX_WAITING are skipped
    ],
)
def test_buffer_all_runs_every_slot_in_turn_with_at_most_max_waiting(behind_minutes, run, passed):
    every_minute = spec(cron="* * * * *")
    now = SLOT + timedelta(minutes=behind_minutes, seconds=30)
    plan = plan_slot(every_minute, SLOT, now=now, buffer_all=True)
    assert plan.run is run
    if run:
        assert (plan.next_after, plan.waits_its_turn) == (SLOT, True)
    else:
        assert plan.status == plan.passed_status == "skipped"
        # This slot and the 5 after it are skipped: 100 wait (09:06 to 10:45).
        assert len(plan.passed) == passed
        assert plan.next_after == SLOT + timedelta(minutes=passed + 1) - timedelta(microseconds=1)


def test_catchup_across_a_dst_change_counts_wall_clock_slots():
    # Berlin springs forward at 2027-03-28 01:00Z: the hour 02:00 local does not exist.
    berlin = ScheduleSpec(cron="0 * * * *", timezone="Europe/Berlin", catchup_mode="none")
    slot = datetime(2027, 3, 27, 23, tzinfo=UTC)  # 00:00 local
    plan = plan_slot(berlin, slot, now=datetime(2027, 3, 28, 3, 30, tzinfo=UTC))
    assert [p.isoformat() for p in plan.passed] == [
        "2027-03-28T00:00:00+00:00",  # 01:00 CET
        "2027-03-28T01:00:00+00:00",  # 03:00 CEST (02:00 never happened)
        "2027-03-28T02:00:00+00:00",
        "2027-03-28T03:00:00+00:00",
    ]


def test_a_one_off_skip_of_a_dst_shifted_slot_is_recorded_and_an_extra_in_the_repeated_hour_fires():
    from chalicelib.domain.schedule import preview_steps

    # 2026-03-29: 02:30 does not exist in Berlin; the fire shifts to 03:00 CEST (01:00Z).
    shifted = datetime(2026, 3, 29, 1, tzinfo=UTC)
    # 2026-10-25: 02:30 happens twice; an extra at the first one (00:30Z).
    repeated = datetime(2026, 10, 25, 0, 30, tzinfo=UTC)
    berlin = ScheduleSpec(
        cron="30 2 * * *",
        timezone="Europe/Berlin",
        skips=frozenset({shifted}),
        extras=(datetime(2026, 10, 25, 1, 30, tzinfo=UTC),),
    )
    fires, dst, marks = preview_steps(berlin, start=datetime(2026, 3, 28, 12, tzinfo=UTC), count=1)
    assert fires == [datetime(2026, 3, 30, 0, 30, tzinfo=UTC)]
    assert [(m.at, m.change) for m in marks] == [(shifted, "skipped")]
    plan = plan_slot(berlin, shifted, now=shifted)
    assert (plan.run, plan.status, plan.one_off) == (False, "skipped", True)
    # The repeated hour: "once" fires 00:30Z; the extra adds the second 02:30 (01:30Z).
    fires, _, marks = preview_steps(berlin, start=datetime(2026, 10, 24, 12, tzinfo=UTC), count=2)
    assert fires == [repeated, datetime(2026, 10, 25, 1, 30, tzinfo=UTC)]
    assert [m.change for m in marks] == ["extra"]
