"""Which finished runs a trigger keeps a record of (``domain/history``), as a table."""

from __future__ import annotations

import typing

import pytest

from chalicelib.domain.history import DEFAULT_HISTORY, HISTORY_MODES, records_run, slot_ran
from chalicelib.domain.runs import RUN_STATUSES, RUN_SURFACES
from chalicelib.domain.spec import TriggerIn, TriggerPatch
from chalicelib.domain.trigger_spec import DEFAULTS, TriggerSpec

FINISHED = [s for s in RUN_STATUSES if s not in ("queued", "running")]


@pytest.mark.parametrize(
    ("history", "status", "surface", "recorded"),
    [
        ("failures", "succeeded", "schedule", False),
        ("failures", "succeeded", "event", False),
        ("failures", "failed", "schedule", True),
        ("failures", "skipped", "schedule", True),
        ("failures", "lost", "schedule", True),
        ("failures", "refused", "event", True),
        ("failures", "budget_exceeded", "schedule", True),
        ("failures", "succeeded", "manual", True),
        ("failures", "succeeded", "backfill", True),
        ("full", "succeeded", "schedule", True),
        ("full", "failed", "event", True),
        (None, "succeeded", "schedule", True),
        ("something-else", "succeeded", "schedule", True),
    ],
)
def test_records_run_by_mode_status_and_surface(history, status, surface, recorded):
    assert records_run(history, status=status, surface=surface) is recorded


@pytest.mark.parametrize("surface", RUN_SURFACES)
@pytest.mark.parametrize("status", FINISHED)
def test_full_history_records_every_finished_run(status, surface):
    assert records_run("full", status=status, surface=surface)


@pytest.mark.parametrize("status", [s for s in FINISHED if s != "succeeded"])
def test_failures_history_records_every_run_that_did_not_succeed(status):
    for surface in RUN_SURFACES:
        assert records_run("failures", status=status, surface=surface)


def test_the_default_is_full_everywhere_it_is_spelled():
    assert DEFAULT_HISTORY == "full" == DEFAULTS["history"] == TriggerSpec().history
    assert TriggerIn.model_fields["history"].default == DEFAULT_HISTORY


def test_the_request_models_accept_exactly_the_modes():
    assert typing.get_args(TriggerIn.model_fields["history"].annotation) == HISTORY_MODES
    patch_modes = typing.get_args(TriggerPatch.model_fields["history"].annotation)
    assert typing.get_args(patch_modes[0]) == HISTORY_MODES


def test_a_stored_spec_without_history_reads_as_full_and_with_it_as_stored():
    assert TriggerSpec.from_dict({}).history == "full"
    assert TriggerSpec.from_dict({"history": "failures"}).history == "failures"
    assert "history" not in TriggerSpec.from_dict({"history": "failures"}).extra


def test_the_cli_sends_history_on_create_and_update():
    from cronhook_cli import build_create_body, build_update_body

    body = build_create_body({"workflow": "echo", "every": 60, "history": "failures"})
    assert body == {"workflow": "echo", "schedule": {"interval_s": 60}, "history": "failures"}
    assert build_update_body({"history": "full"}) == {"history": "full"}


CREATED = 1_000_000


@pytest.mark.parametrize(
    ("history", "status", "slot_ms", "ran"),
    [
        ("full", "succeeded", CREATED + 60_000, True),
        ("full", "failed", CREATED + 60_000, True),
        ("full", "skipped", CREATED + 60_000, False),
        ("full", None, CREATED + 60_000, False),  # no record: it never ran
        ("failures", None, CREATED + 60_000, True),  # no record: maybe a success
        ("failures", None, CREATED, False),  # the creation instant is never a fire
        ("failures", None, CREATED - 60_000, False),  # before the trigger existed
        ("failures", "skipped", CREATED + 60_000, False),
        ("failures", "lost", CREATED + 60_000, True),
        (None, None, CREATED + 60_000, False),
    ],
)
def test_slot_ran_for_a_backfill(history, status, slot_ms, ran):
    assert slot_ran(history, recorded_status=status, slot_ms=slot_ms, created_ms=CREATED) is ran
