"""Request validation: every problem is a 422 naming its field."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from chalicelib.domain.errors import PayloadTooLarge, ValidationError
from chalicelib.domain.schedule import ScheduleSpec
from chalicelib.domain.spec import TriggerIn, decode_schedule, encode_schedule, parse_model


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "workflow"),
        ({"workflow": ""}, "workflow"),
        ({"workflow": "echo", "colour": "red"}, "colour"),
        ({"workflow": "echo", "schedule": {"interval_s": "often"}}, "schedule.interval_s"),
        ({"workflow": "echo", "schedule": {"at": "2026-12-01T10:00:00"}}, "schedule.at"),
        (
            {"workflow": "echo", "schedule": {"cron": "* * * * *", "dst": {"skipped": "never"}}},
            "schedule.dst.skipped",
        ),
        ({"workflow": "echo", "limits": {"max_usd": float("nan")}}, "limits.max_usd"),
        ({"workflow": "echo", "limits": {"max_failures": 0}}, "limits.max_failures"),
        ({"workflow": "echo", "overlap": "sometimes"}, "overlap"),
        ({"workflow": "echo", "concurrency": 0}, "concurrency"),
        ({"workflow": "echo", "tags": ["x" * 65]}, "tags.0"),
        ({"workflow": "echo", "event": {"source": "carrier-pigeon"}}, "event.source"),
        ({"workflow": "echo", "state": []}, "state"),
    ],
)
def test_invalid_trigger_bodies_name_the_field_at_fault(body, field):
    with pytest.raises(ValidationError) as caught:
        parse_model(TriggerIn, body)
    assert caught.value.field == field
    assert caught.value.STATUS_CODE == 422


def test_a_body_that_is_not_an_object_is_refused():
    with pytest.raises(ValidationError):
        parse_model(TriggerIn, ["echo"])


def test_state_over_64_kb_is_too_large():
    with pytest.raises(PayloadTooLarge) as caught:
        parse_model(TriggerIn, {"workflow": "echo", "state": {"blob": "x" * 70_000}})
    assert caught.value.field == "state"


@pytest.mark.parametrize(
    "spec",
    [
        ScheduleSpec(
            cron="0 8 * * 1", timezone="Europe/Berlin", dst_skipped="skip", dst_repeated="both"
        ),
        ScheduleSpec(
            interval_s=900, anchor_at=datetime(2026, 11, 30, 12, 0, 0, 123000, tzinfo=UTC)
        ),
        ScheduleSpec(at=datetime(2026, 12, 1, 9, 0, tzinfo=UTC)),
    ],
)
def test_the_compact_schedule_encoding_round_trips(spec):
    assert decode_schedule(encode_schedule(spec)) == spec
    assert len(encode_schedule(spec)) < 120
