"""PATCH decisions: version check, merge, status, anchor, next slot, audit diff (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from chalicelib.domain.due import to_ms
from chalicelib.domain.errors import Conflict, ValidationError
from chalicelib.domain.schedule import ScheduleSpec
from chalicelib.domain.spec import ScheduleIn, TriggerPatch, parse_model
from chalicelib.domain.trigger_patch import (
    diff,
    interval_anchor,
    merge_schedule,
    merged_spec,
    next_slot,
    status_after,
    version_conflict,
)

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
OLD = {
    "workflow": "echo",
    "title": "old",
    "tags": ["a"],
    "schedule": {"cron": "0 * * * *", "timezone": "Europe/Berlin"},
    "limits": {"max_failures": 5},
    "overlap": "skip",
    "enabled": True,
}
EVENT_OLD = {"workflow": "echo", "event": {"source": "github", "filter": {"github_event": "push"}}}


def merge(body, old=OLD, kind="cron"):
    data = parse_model(TriggerPatch, body)
    return merged_spec(
        old,
        data,
        set(data.model_fields_set) - {"version"},
        kind=kind,
        trigger_id="trg_x",
        workflow="http:https://h.example/x?token=s",
        shown_workflow="http:https://h.example/x?token=***",
    )


@pytest.mark.parametrize(
    ("sent", "current", "word"),
    [(None, 3, None), (3, 3, None), (2, 3, "stale"), (4, 3, "does not exist yet")],
)
def test_version_conflict(sent, current, word):
    conflict = version_conflict(sent, current)
    if word is None:
        assert conflict is None
    else:
        assert isinstance(conflict, Conflict) and word in conflict.message
        assert conflict.field == "version"


@pytest.mark.parametrize(
    ("old", "patch", "expected"),
    [
        # a new cron keeps the old cron's timezone and DST policy
        (
            {"cron": "0 * * * *", "timezone": "Europe/Berlin", "dst": {"skipped": "skip"}},
            {"cron": "*/5 * * * *"},
            {"cron": "*/5 * * * *", "timezone": "Europe/Berlin", "dst": {"skipped": "skip"}},
        ),
        # a new kind drops the old kind's fields
        (
            {"cron": "0 * * * *", "timezone": "Europe/Berlin"},
            {"interval_s": 60},
            {"interval_s": 60},
        ),
        # only the timezone: the cadence stays
        (
            {"cron": "0 * * * *"},
            {"timezone": "Asia/Tokyo"},
            {"cron": "0 * * * *", "timezone": "Asia/Tokyo"},
        ),
    ],
)
def test_merge_schedule(old, patch, expected):
    merged = merge_schedule(old, ScheduleIn.model_validate(patch))
    assert {k: v for k, v in merged.items() if k != "dst"} == {
        k: v for k, v in expected.items() if k != "dst"
    }
    if "dst" in expected:
        assert merged["dst"]["skipped"] == expected["dst"]["skipped"]


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"cron": "0 * * * *", "interval_s": 60}, "schedule"),
        ({"cron": None}, "schedule.cron"),
    ],
)
def test_merge_schedule_refuses(patch, field):
    with pytest.raises(ValidationError) as caught:
        merge_schedule({"cron": "0 * * * *"}, ScheduleIn.model_validate(patch))
    assert caught.value.field == field


@pytest.mark.parametrize(
    ("body", "key", "value"),
    [
        ({"title": "new"}, "title", "new"),
        ({"title": None}, "title", None),
        ({"tags": None}, "tags", []),
        ({"limits": None}, "limits", {}),
        ({"limits": {"max_usd": 2}}, "limits", {"max_failures": 5, "max_usd": 2.0}),
        # the view's masked target sent back is the stored target
        (
            {"workflow": "http:https://h.example/x?token=***"},
            "workflow",
            "http:https://h.example/x?token=s",
        ),
        ({"workflow": "other"}, "workflow", "other"),
    ],
)
def test_merged_spec_takes_what_was_sent(body, key, value):
    merged = merge(body)
    got = merged[key]
    if key == "limits" and value:
        got = {k: v for k, v in got.items() if k in value}
    assert got == value
    assert "enabled" not in merged


@pytest.mark.parametrize(
    ("body", "old", "kind", "field"),
    [
        ({"overlap": None}, OLD, "cron", "overlap"),
        ({"schedule": None}, OLD, "cron", "schedule"),
        ({"state": None}, OLD, "cron", "state"),
        ({"enabled": None}, OLD, "cron", "enabled"),
        ({"schedule": {"interval_s": 60}}, EVENT_OLD, "event", "schedule"),
        ({"event": {"filter": {}}}, OLD, "cron", "event"),
        ({"event": None}, EVENT_OLD, "event", "event"),
        ({"event": {"source": "stripe"}}, EVENT_OLD, "event", "event.source"),
        ({"event": {"secret": "s" * 32}}, EVENT_OLD, "event", "event.secret"),
    ],
)
def test_merged_spec_refusals_name_their_field(body, old, kind, field):
    with pytest.raises(ValidationError) as caught:
        merge(body, old=old, kind=kind)
    assert caught.value.field == field


def test_an_event_patch_merges_into_the_stored_event():
    merged = merge({"event": {"filter": {"github_event": "release"}}}, old=EVENT_OLD, kind="event")
    assert merged["event"] == {"source": "github", "filter": {"github_event": "release"}}


@pytest.mark.parametrize(
    ("current", "body", "expected"),
    [
        ("active", {}, "active"),
        ("active", {"enabled": False}, "disabled"),
        ("disabled", {"enabled": True}, "active"),
        ("disabled", {"enabled": False}, "disabled"),
        ("active", {"enabled": True}, "active"),
    ],
)
def test_status_after(current, body, expected):
    data = parse_model(TriggerPatch, body)
    assert status_after(current, set(data.model_fields_set), data.enabled) == expected


ANCHOR = NOW - timedelta(seconds=45)


@pytest.mark.parametrize(
    ("old", "new", "last_slot", "expected"),
    [
        (ScheduleSpec(interval_s=60, anchor_at=ANCHOR), {"interval_s": 60}, None, ANCHOR),
        (ScheduleSpec(interval_s=60, anchor_at=ANCHOR), {"interval_s": 120}, to_ms(ANCHOR), ANCHOR),
        (ScheduleSpec(interval_s=60, anchor_at=ANCHOR), {"interval_s": 120}, None, NOW),
        (ScheduleSpec(cron="* * * * *"), {"interval_s": 120}, None, NOW),
        (None, {"interval_s": 120}, None, NOW),
        (ScheduleSpec(interval_s=60, anchor_at=ANCHOR), {"cron": "* * * * *"}, None, NOW),
    ],
)
def test_interval_anchor(old, new, last_slot, expected):
    assert (
        interval_anchor(old, ScheduleIn.model_validate(new), last_slot_ms=last_slot, now=NOW)
        == expected
    )


@pytest.mark.parametrize(
    ("spec", "last_slot", "expected"),
    [
        (ScheduleSpec(cron="* * * * *"), None, NOW + timedelta(minutes=1)),
        # a slot claimed ahead of now (in flight) is never fired again
        (
            ScheduleSpec(cron="* * * * *"),
            to_ms(NOW + timedelta(minutes=3)),
            NOW + timedelta(minutes=4),
        ),
        (
            ScheduleSpec(cron="* * * * *"),
            to_ms(NOW - timedelta(minutes=3)),
            NOW + timedelta(minutes=1),
        ),
    ],
)
def test_next_slot_is_after_now_and_after_the_last_claimed_slot(spec, last_slot, expected):
    assert next_slot(spec, last_slot_ms=last_slot, now=NOW, cadence_changed=True) == expected


@pytest.mark.parametrize(
    ("at", "last_slot", "changed"),
    [
        (NOW - timedelta(hours=1), None, True),
        (NOW - timedelta(hours=1), None, False),
        # an instant after now, but not after the slot already claimed
        (NOW + timedelta(hours=1), to_ms(NOW + timedelta(hours=1)), True),
    ],
)
def test_next_slot_refuses_an_instant_that_is_not_ahead(at, last_slot, changed):
    with pytest.raises(ValidationError) as caught:
        next_slot(ScheduleSpec(at=at), last_slot_ms=last_slot, now=NOW, cadence_changed=changed)
    assert caught.value.field == "schedule.at"


@pytest.mark.parametrize(
    ("before", "after", "flags", "expected"),
    [
        ({"title": "a"}, {"title": "a"}, (False, False), {}),
        ({"title": "a"}, {"title": "b"}, (False, False), {"title": {"from": "a", "to": "b"}}),
        ({"id": 1}, {"id": 2}, (False, False), {}),  # not an audited field
        ({}, {}, (True, True), {"state": {"changed": True}, "payload": {"changed": True}}),
    ],
)
def test_diff(before, after, flags, expected):
    assert diff(before, after, state_changed=flags[0], payload_changed=flags[1]) == expected
