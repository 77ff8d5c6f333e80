"""The due rule and the due-index projection of a schedule (pure)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from chalicelib.domain.due import (
    from_ms,
    last_claimed_slot_ms,
    sched_json,
    to_ms,
)
from chalicelib.domain.rules import due_at, due_with_slot
from chalicelib.domain.schedule import ScheduleSpec


@pytest.mark.parametrize(
    ("next_slot", "leases", "expected"),
    [
        (1_000, [], 1_000),  # only the slot
        # A lease that ends well before the slot keeps the run reapable on time (a
        # weekly cron); one that ends just before it is the slot's claim's to reap.
        (3_600_000, [420_000], 420_000),
        (900_000, [420_000], 900_000),
        (1_000, [500], 1_000),
        (1_000, [1_500, 2_000], 1_000),  # leases after the slot: the slot comes first
        (None, [700, 300], 300),  # paused with runs in flight: the earliest lease
        (None, [], None),  # nothing to look at: out of the due index
    ],
)
def test_due_at_is_the_slot_or_a_lease_well_before_it(next_slot, leases, expected):
    assert due_at(leases, next_slot_ms=next_slot) == expected


@pytest.mark.parametrize(("slot", "leases"), [(10, []), (10, [3]), (10, [30, 40])])
def test_due_with_slot_agrees_with_the_rule(slot, leases):
    assert due_with_slot(leases, next_slot_ms=slot) == due_at(leases, next_slot_ms=slot)


@pytest.mark.parametrize(
    ("in_flight", "last_run", "expected"),
    [
        ([], None, None),
        ([5, 9], None, 9),
        ([], 12, 12),
        ([5, 9], 7, 9),
        ([3], 8, 8),
    ],
)
def test_last_claimed_slot_is_the_latest_of_in_flight_and_the_last_run(
    in_flight, last_run, expected
):
    assert last_claimed_slot_ms(in_flight, last_run) == expected


@pytest.mark.parametrize(
    "at",
    [
        datetime(2026, 11, 30, 12, 0, tzinfo=UTC),
        datetime(2026, 11, 30, 12, 0, 0, 123000, tzinfo=UTC),
        datetime(1970, 1, 1, tzinfo=UTC),
    ],
)
def test_ms_round_trips(at):
    assert from_ms(to_ms(at)) == at


@pytest.mark.parametrize(
    ("overlap", "concurrency", "tenant", "extra"),
    [
        ("skip", 1, None, {}),  # defaults are left out
        ("allow", 1, None, {"o": "allow"}),
        ("skip", 4, None, {"n": 4}),
        ("buffer_one", 2, "acme", {"o": "buffer_one", "n": 2, "tn": "acme"}),
    ],
)
def test_sched_json_carries_the_overlap_policy_and_tenant_beside_the_schedule(
    overlap, concurrency, tenant, extra
):
    spec = ScheduleSpec(cron="*/5 * * * *")
    data = json.loads(sched_json(spec, overlap=overlap, concurrency=concurrency, tenant=tenant))
    assert data == {"c": "*/5 * * * *", **extra}
