"""The what-if simulator (domain/simulate.py): the engine's own rules on a fake clock."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from chalicelib.domain.schedule import Calendar, ScheduleSpec
from chalicelib.domain.simulate import USD_PER_MILLION_FIRES, Outage, simulate


def at(day: int, hh: int, mm: int = 0) -> datetime:
    return datetime(2026, 12, day, hh, mm, tzinfo=UTC)


def outcomes(found) -> list[tuple[str, str]]:
    return [(s.slot.strftime("%d %H:%M"), s.outcome) for s in found.slots]


def test_the_cost_per_fire_is_the_benchmarks():
    results = json.loads(
        (Path(__file__).resolve().parents[2] / "bench" / "results.json").read_text()
    )
    assert results["fire_cost"]["batched"]["usd_per_million"] == USD_PER_MILLION_FIRES


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("latest", ["run", "run", "missed", "missed", "run"]),
        ("none", ["run", "missed", "missed", "missed", "run"]),
        ("all", ["run", "run", "run", "run", "run"]),
    ],
)
def test_an_outage_is_caught_up_as_each_mode_says(mode, expected):
    spec = ScheduleSpec(cron="0 * * * *", catchup_mode=mode)
    found = simulate(
        spec,
        trigger_id="trg_x",
        policy={},
        start=at(1, 12, 30),
        end=at(1, 17, 30),
        outages=[Outage(at(1, 13, 30), at(1, 16, 30))],
    )
    assert [o for _, o in outcomes(found)] == expected
    assert found.runs == expected.count("run")


def test_holidays_are_listed_and_moved_slots_run_on_the_next_business_day():
    spec = ScheduleSpec(
        cron="0 9 * * 1-5",
        timezone="Europe/Berlin",
        calendar=Calendar(holidays=("DE",), on_holiday="next_business_day"),
    )
    found = simulate(spec, trigger_id="trg_x", policy={}, start=at(24, 0), end=at(29, 0))
    assert outcomes(found) == [
        ("24 08:00", "run"),
        ("25 08:00", "moved"),
        ("28 08:00", "run"),
    ]
    assert found.slots[1].reason == "Christmas Day: moved"
    assert found.slots[1].fire_at == at(28, 8)


def test_overlap_skip_and_buffer_all_with_runs_longer_than_the_cadence():
    every_minute = ScheduleSpec(cron="* * * * *")
    args = {"trigger_id": "trg_x", "start": at(1, 12), "end": at(1, 12, 6), "run_s": 90}
    skipping = simulate(every_minute, policy={}, **args)
    assert [o for _, o in outcomes(skipping)] == ["run", "skipped"] * 3
    buffered = simulate(every_minute, policy={"o": "buffer_all"}, **args)
    assert [o for _, o in outcomes(buffered)] == ["run"] * 6
    # Each waits for the one before it: 90 s apart.
    starts = [s.fire_at for s in buffered.slots]
    assert starts == [at(1, 12, 1) + timedelta(seconds=90 * n) for n in range(6)]


def test_a_slot_caught_up_after_an_outage_reports_the_fire_at_its_run_started():
    # catchup all: 02:00, 03:00 and 04:00 fall in the outage; they run one after the other
    # from its end (04:10), each when the one before it ends (run_s 30), not at their slot.
    spec = ScheduleSpec(cron="0 * * * *", catchup_mode="all")
    day = datetime(2027, 1, 1, tzinfo=UTC)
    found = simulate(
        spec,
        trigger_id="trg_x",
        policy={},
        start=day,
        end=day + timedelta(hours=6),
        outages=[
            Outage(day + timedelta(hours=1, minutes=30), day + timedelta(hours=4, minutes=10))
        ],
    )
    assert [
        (s.slot.strftime("%H:%M"), s.outcome, s.fire_at.strftime("%H:%M:%S")) for s in found.slots
    ] == [
        ("01:00", "run", "01:00:00"),
        ("02:00", "run", "04:10:00"),
        ("03:00", "run", "04:10:30"),
        ("04:00", "run", "04:11:00"),
        ("05:00", "run", "05:00:00"),
        ("06:00", "run", "06:00:00"),
    ]


def test_a_slot_buffered_behind_a_long_run_reports_the_fire_at_it_started():
    every_ten = ScheduleSpec(cron="*/10 * * * *")
    found = simulate(
        every_ten,
        trigger_id="trg_x",
        policy={"o": "buffer_one"},
        start=at(1, 12),
        end=at(1, 12, 30),
        run_s=900,
    )
    # 12:20 waits for the 12:10 run to end (12:25); 12:30 for the 12:20 run (12:40).
    assert [(s.slot, s.outcome, s.fire_at) for s in found.slots] == [
        (at(1, 12, 10), "run", at(1, 12, 10)),
        (at(1, 12, 20), "run", at(1, 12, 25)),
        (at(1, 12, 30), "run", at(1, 12, 40)),
    ]


END_OF_TIME = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)


def test_a_slot_whose_jitter_carries_it_past_year_9999_ends_the_simulation():
    # 9999-12-31 23:59 plus a jitter of minutes would start in year 10000: no such slot.
    spec = ScheduleSpec(cron="59 23 * * *", jitter_s=3600)
    found = simulate(
        spec,
        trigger_id="trg_x",
        policy={},
        start=datetime(9999, 12, 30, tzinfo=UTC),
        end=END_OF_TIME,
    )
    assert [(s.slot.isoformat(), s.outcome) for s in found.slots] == [
        ("9999-12-30T23:59:00+00:00", "run")
    ]
    assert found.runs == 1


@pytest.mark.parametrize("policy", [{}, {"o": "buffer_one"}, {"o": "buffer_all"}])
def test_a_run_that_would_end_after_year_9999_holds_the_trigger_to_the_end(policy):
    every_minute = ScheduleSpec(cron="* * * * *")
    found = simulate(
        every_minute,
        trigger_id="trg_x",
        policy=policy,
        start=datetime(9999, 12, 31, 23, 56, tzinfo=UTC),
        end=END_OF_TIME,
        outages=[Outage(datetime(9999, 12, 31, 23, 58, 30, tzinfo=UTC), END_OF_TIME)],
        run_s=30,
    )
    assert [s.slot.strftime("%H:%M") for s in found.slots] == ["23:57", "23:58", "23:59"]
    # 23:59 falls in the outage: claimed at its end, its run would end in year 10000.
    assert found.slots[-1].outcome == "run"
    assert found.slots[-1].fire_at == END_OF_TIME


def test_one_off_skips_and_extras_and_jitter():
    spec = ScheduleSpec(
        cron="0 * * * *",
        skips=frozenset({at(1, 14)}),
        extras=(at(1, 14, 30),),
        jitter_s=600,
    )
    found = simulate(spec, trigger_id="trg_x", policy={}, start=at(1, 12, 30), end=at(1, 15, 30))
    assert outcomes(found) == [
        ("01 13:00", "run"),
        ("01 14:00", "skipped"),
        ("01 14:30", "extra"),
        ("01 15:00", "run"),
    ]
    jitters = [s.fire_at - s.slot for s in found.slots if s.fire_at is not None]
    assert all(timedelta(0) <= j < timedelta(minutes=10) for j in jitters)
    assert len(set(jitters)) > 1


def test_a_year_of_a_daily_cron_with_bavarian_holidays_counts_its_runs():
    spec = ScheduleSpec(
        cron="0 9 * * 1-5", timezone="Europe/Berlin", calendar=Calendar(holidays=("DE-BY",))
    )
    found = simulate(
        spec,
        trigger_id="trg_x",
        policy={},
        start=datetime(2026, 12, 31, 12, tzinfo=UTC),
        end=datetime(2027, 12, 31, 12, tzinfo=UTC),
    )
    # 2027 has 261 weekdays; Bavaria's 12 holidays include 11 on weekdays (New Year's Day
    # is a Friday; Christmas falls on a weekend).
    holidays = [s for s in found.slots if s.outcome == "holiday"]
    assert found.runs + len(holidays) == 261
    assert {s.slot.date() for s in holidays} >= {date(2027, 1, 1), date(2027, 1, 6)}
