"""The run path's decision rules (chalicelib/domain/rules.py), as tables."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from chalicelib.domain.epoch_ms import dt, ms, opt_dt, parse_iso
from chalicelib.domain.rules import (
    DEFAULT_MAX_ATTEMPTS,
    Overlap,
    capacity_of,
    due_at,
    event_will_retry,
    max_attempts_of,
    max_failures_of,
    overlap_decision,
    run_succeeded,
    stands,
    surface_of_entry,
)


@pytest.mark.parametrize(
    ("policy", "capacity"),
    [
        ({}, 1),
        ({"o": "skip"}, 1),
        ({"o": "buffer_one"}, 1),
        ({"o": "allow"}, 1),
        ({"o": "allow", "n": 3}, 3),
        ({"o": "skip", "n": 3}, 1),  # n counts only under allow
    ],
)
def test_capacity_is_n_only_under_overlap_allow(policy, capacity):
    assert capacity_of(policy) == capacity


@pytest.mark.parametrize(
    ("policy", "running", "decision"),
    [
        ({}, 0, Overlap.RETRY),  # the run seen settled meanwhile
        ({}, 1, Overlap.SKIP),  # skip is the default overlap policy
        ({"o": "skip"}, 1, Overlap.SKIP),
        ({"o": "buffer_one"}, 0, Overlap.RETRY),
        ({"o": "buffer_one"}, 1, Overlap.BUFFER),
        ({"o": "allow", "n": 2}, 1, Overlap.RETRY),
        ({"o": "allow", "n": 2}, 2, Overlap.BUFFER),
        ({"o": "allow", "n": 2}, 3, Overlap.BUFFER),
    ],
)
def test_a_slot_is_skipped_only_while_a_run_is_executing_at_capacity(policy, running, decision):
    assert overlap_decision(policy, running=running) is decision


MIN = 60_000


@pytest.mark.parametrize(
    ("leases", "next_slot", "due"),
    [
        ([], None, None),  # nothing to look at: out of the index
        ([], 5_000, 5_000),
        ([7_000], None, 7_000),  # disabled, a run still in flight: reap it when due
        ([9_000], 5_000, 5_000),
        # A lease ending well before the slot (more than 15 minutes): reaped on time.
        ([MIN, 20 * MIN], 20 * MIN, MIN),
        ([4 * MIN, MIN], 20 * MIN, MIN),
        # A lease ending less than 15 minutes before the slot is left to the slot's claim
        # (a 15-minute cron: one move of its row a fire, not two).
        ([7 * MIN], 15 * MIN, 15 * MIN),
        ([5 * MIN + 1], 20 * MIN, 20 * MIN),
        ([5 * MIN], 20 * MIN, 20 * MIN),
        ([5 * MIN - 1], 20 * MIN, 5 * MIN - 1),
        ([7_000, 3_000], 5_000, 5_000),
    ],
)
def test_the_due_key_is_the_next_slot_or_a_lease_well_before_it(leases, next_slot, due):
    assert due_at(leases, next_slot_ms=next_slot) == due


@pytest.mark.parametrize(
    ("status", "counts"),
    [
        ("succeeded", True),
        ("failed", False),
        ("lost", False),
        ("refused", None),
        ("budget_exceeded", None),
        ("skipped", None),
    ],
)
def test_what_a_run_status_counts_for(status, counts):
    assert run_succeeded(status) is counts


@pytest.mark.parametrize(
    ("spec", "attempts"),
    [
        (None, DEFAULT_MAX_ATTEMPTS),
        ({}, 3),
        ({"event": {}}, 3),
        ({"event": {"max_attempts": 0}}, 3),
        ({"event": {"max_attempts": None}}, 3),
        ({"event": {"max_attempts": 1}}, 1),
        ({"event": {"max_attempts": 7}}, 7),
    ],
)
def test_max_attempts_defaults_to_three(spec, attempts):
    assert max_attempts_of(spec) == attempts


@pytest.mark.parametrize(
    ("limits", "failures"),
    [
        (None, 5),
        ({}, 5),
        ({"max_failures": 0}, 5),
        ({"max_failures": 1}, 1),
        ({"max_failures": 9}, 9),
    ],
)
def test_max_failures_defaults_to_five(limits, failures):
    assert max_failures_of(limits) == failures


@pytest.mark.parametrize(
    ("attempt", "max_attempts", "again"),
    [(None, 3, True), (1, 3, True), (2, 3, True), (3, 3, False), (1, 1, False), (4, 3, False)],
)
def test_an_event_attempt_is_retried_until_its_last(attempt, max_attempts, again):
    assert event_will_retry(attempt, max_attempts=max_attempts) is again


@pytest.mark.parametrize(
    ("entry", "surface"),
    [
        ({"k": "s"}, "schedule"),
        ({"k": "e"}, "event"),
        ({"k": "m"}, "manual"),
        ({"k": "b"}, "backfill"),
        ({}, "schedule"),
        ({"k": "?"}, "schedule"),
    ],
)
def test_the_surface_of_an_in_flight_entry(entry, surface):
    assert surface_of_entry(entry) == surface


@pytest.mark.parametrize(
    ("sched", "standing"),
    [
        ({"i": 1}, True),
        ({"i": 60}, True),
        ({"i": 900}, True),
        ({"i": 901}, False),
        ({"i": 3600}, False),
        ({"c": "* * * * *"}, True),
        ({"c": "*/15 * * * *"}, True),
        ({"c": "0,15,30,45 * * * *", "tz": "Europe/Berlin"}, True),
        ({"c": "5,20,35,50 * * * *"}, True),
        ({"c": "0,10,20,30 * * * *"}, False),  # a 30-minute gap at the top of the hour
        ({"c": "*/20 * * * *"}, False),
        ({"c": "*/5 9-17 * * *"}, False),  # nights are slot-free
        ({"c": "* * * * 1-5"}, False),  # so are weekends
        ({"c": "* * 1 * *"}, False),
        ({"c": "* * L * *"}, False),
        ({"c": "* * * 1-6 *"}, False),
        ({"c": "@hourly"}, False),
        ({"a": 1796115600000}, False),
        ({"c": "not a cron"}, False),
    ],
    ids=lambda v: str(v) if not isinstance(v, dict) else ",".join(f"{k}={x}" for k, x in v.items()),
)
def test_a_schedule_stands_in_the_due_index_when_it_fires_at_least_every_quarter_hour(
    sched, standing
):
    import json

    assert stands(json.dumps(sched)) is standing


def test_a_schedule_that_is_not_json_does_not_stand():
    assert stands("{") is False


def test_epoch_milliseconds_round_trip():
    at = datetime(2026, 12, 1, 9, 0, 0, 123000, tzinfo=UTC)
    assert ms(at) == 1796115600123
    assert dt(ms(at)) == at
    assert opt_dt(None) is None and opt_dt(ms(at)) == at
    assert parse_iso("2026-12-01T09:00:00.123Z") == at
    assert parse_iso(None) is None
