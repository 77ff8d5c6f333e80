"""Run statuses, surfaces and the ``in_flight`` entries of a trigger (pure)."""

from __future__ import annotations

import pytest

from chalicelib.domain.ids import event_run_id, manual_run_id, schedule_run_id
from chalicelib.domain.runs import (
    RUN_SURFACES,
    SURFACE_CODES,
    read_in_flight,
    scheduled_slot_of_run,
)


@pytest.mark.parametrize(
    ("raw", "surface", "status", "lease", "slot", "scheduled"),
    [
        ({"l": 9, "s": 1, "k": "s", "t": 5}, "schedule", "running", 9, 5, 5),
        ({"l": 9, "s": 0, "k": "e"}, "event", "queued", 9, None, None),
        ({"l": 9, "k": "m", "t": 4}, "manual", "queued", 9, 4, None),
        ({"l": 9, "s": 1, "k": "b", "t": 3}, "backfill", "running", 9, 3, None),
        ({"t": 6}, "schedule", "queued", 0, 6, 6),  # no k: a scheduled slot; no l: lease 0
        ({"k": "?"}, "schedule", "queued", 0, None, None),  # unknown code reads as schedule
        ("not a map", "schedule", "queued", 0, None, None),
    ],
)
def test_an_in_flight_entry_reads_with_its_defaults(raw, surface, status, lease, slot, scheduled):
    (entry,) = read_in_flight({"trg_x.1": raw})
    assert (entry.surface, entry.status, entry.lease_ms) == (surface, status, lease)
    assert (entry.slot_ms, entry.scheduled_slot_ms) == (slot, scheduled)


def test_in_flight_entries_are_newest_first():
    entries = read_in_flight({"trg_x.0000000000001s": {}, "trg_x.0000000000003s": {}})
    assert [e.run_id for e in entries] == ["trg_x.0000000000003s", "trg_x.0000000000001s"]


@pytest.mark.parametrize(
    ("run_id", "slot"),
    [
        (schedule_run_id("trg_a", 1_764_504_000_000), 1_764_504_000_000),
        (manual_run_id("trg_a", 1_764_504_000_000), None),
        (event_run_id("trg_a", 1_764_504_000_000, "evt_0123456789"), None),
        ("trg_a.12s", None),
        ("", None),
        (None, None),
    ],
    # Stable ids: a manual run id has a random suffix, and pytest-xdist's workers must
    # collect the same names.
    ids=["schedule", "manual", "event", "short", "empty", "none"],
)
def test_only_a_scheduled_run_id_names_a_slot(run_id, slot):
    assert scheduled_slot_of_run(run_id) == slot


def test_every_surface_code_names_a_listed_surface():
    assert sorted(SURFACE_CODES.values()) == sorted(RUN_SURFACES)
