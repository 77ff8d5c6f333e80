"""Triggers as code, the pure decisions: a key's form, what a document changes, the PATCH
that makes the change; and reading CloudFormation's string properties back as the body's
types."""

from __future__ import annotations

import pytest

from chalicelib.domain.errors import ValidationError
from chalicelib.domain.trigger_keys import (
    changed_top_fields,
    check_key,
    comparable,
    field_changes,
    normalized,
    update_body,
)
from chalicelib.services.trigger_resource import coerce_body


@pytest.mark.parametrize(
    ("key", "valid"),
    [
        ("weekly-report", True),
        ("a", True),
        ("client7.reports_v2", True),
        ("trg_abcdefghijklmnop", True),
        ("x" * 128, True),
        ("x" * 129, False),
        ("Weekly", False),
        ("-leading-dash", False),
        ("has/slash", False),
        ("has space", False),
        ("", False),
        (None, False),
        (7, False),
    ],
)
def test_a_key_is_one_lowercase_path_segment(key, valid):
    if valid:
        assert check_key(key) == key
    else:
        with pytest.raises(ValidationError) as caught:
            check_key(key)
        assert caught.value.field == "key"


def _cmp(spec: dict, enabled: bool = True) -> dict:
    return comparable(spec, workflow=spec["workflow"], enabled=enabled)


def test_defaults_left_out_and_spelled_out_compare_equal():
    short = {"workflow": "echo", "schedule": {"cron": "0 8 * * 1"}}
    spelled = {
        "workflow": "echo",
        "schedule": {"cron": "0 8 * * 1", "timezone": "UTC", "interval_s": None},
        "overlap": "skip",
        "concurrency": 1,
        "limits": {"max_failures": 5, "budget_period": "month"},
        "tags": [],
    }
    assert field_changes(_cmp(short), _cmp(spelled)) == {}


def test_state_and_backfill_are_never_compared_and_enabled_is():
    a = {"workflow": "echo", "schedule": {"interval_s": 60}, "state": {"n": 1}}
    b = {**a, "state": {"n": 9}, "backfill": "all"}
    assert field_changes(_cmp(a), _cmp(b)) == {}
    assert field_changes(_cmp(a), _cmp(a, enabled=False)) == {
        "enabled": {"from": True, "to": False}
    }


@pytest.mark.parametrize(
    ("old", "new", "changes"),
    [
        ({"cron": "0 8 * * 1"}, {"cron": "0 9 * * 1"}, {"schedule.cron": ("0 8 * * 1", "0 9 * * 1")}),
        (
            {"cron": "0 8 * * 1"},
            {"interval_s": 3600},
            {"schedule.cron": ("0 8 * * 1", None), "schedule.interval_s": (None, 3600)},
        ),
        (
            {"cron": "0 8 * * 1", "dst": {"skipped": "skip"}},
            {"cron": "0 8 * * 1"},
            {"schedule.dst": ({"skipped": "skip", "repeated": "once"}, None)},
        ),
    ],
)  # fmt: skip
def test_each_changed_leaf_is_named_by_its_dotted_path(old, new, changes):
    before = _cmp({"workflow": "echo", "schedule": old})
    after = _cmp({"workflow": "echo", "schedule": new})
    got = field_changes(before, after)
    assert {k: (v["from"], v["to"]) for k, v in got.items()} == changes
    assert changed_top_fields(before, after) == ["schedule"]


def test_a_number_is_not_a_boolean_when_compared():
    before = _cmp({"workflow": "echo", "schedule": {"interval_s": 60}, "payload": 1})
    after = _cmp({"workflow": "echo", "schedule": {"interval_s": 60}, "payload": True})
    assert field_changes(before, after) == {"payload": {"from": 1, "to": True}}


def test_the_update_body_sends_whole_changed_fields_and_only_them():
    before = _cmp({"workflow": "echo", "title": "a", "schedule": {"cron": "0 8 * * 1"}})
    after = _cmp(
        {
            "workflow": "echo",
            "title": "a",
            "schedule": {"cron": "0 9 * * 1", "timezone": "Asia/Tokyo"},
        }
    )
    assert update_body(before, after) == {
        "schedule": {
            "cron": "0 9 * * 1",
            "timezone": "Asia/Tokyo",
            "interval_s": None,
            "at": None,
            "dst": None,
            "business_day": None,
            "time": None,
            "calendar": None,
            "jitter_s": None,
            "catchup": None,
            "skips": None,
            "extras": None,
        }
    }
    assert update_body(before, before) == {}


def test_an_event_update_sends_only_what_a_patch_may_change():
    before = _cmp({"workflow": "echo", "event": {"source": "github", "filter": {"branch": "a"}}})
    after = _cmp({"workflow": "echo", "event": {"source": "github", "filter": {"branch": "b"}}})
    assert update_body(before, after) == {"event": {"filter": {"branch": "b"}}}


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ({"schedule": {"cron": "0 8 * * 1"}}, {"event": {"source": "webhook"}}, "schedule"),
        ({"event": {"source": "webhook"}}, {"schedule": {"cron": "0 8 * * 1"}}, "schedule"),
        ({"event": {"source": "github"}}, {"event": {"source": "webhook"}}, "event.source"),
        (
            {"event": {"source": "s3", "bucket": "a-bucket"}},
            {"event": {"source": "s3", "bucket": "b-bucket"}},
            "event.bucket",
        ),
    ],
)
def test_what_cannot_change_in_place_is_refused_naming_the_field(old, new, field):
    with pytest.raises(ValidationError) as caught:
        update_body(_cmp({"workflow": "echo", **old}), _cmp({"workflow": "echo", **new}))
    assert caught.value.field == field


def test_cloudformation_strings_are_read_back_as_the_bodys_types():
    body = coerce_body(
        {
            "workflow": "echo",
            "title": "42",  # a string field keeps its text, digits or not
            "tags": ["1", "two"],
            "schedule": {"interval_s": "3600"},
            "concurrency": "3",
            "enabled": "false",
            "allow_destructive": "true",
            "limits": {"max_usd": "2.5", "max_runs": "10", "max_failures": "4"},
            "event": None,
            "state": {"count": "0"},  # free-form: as sent
            "payload": "7",
        }
    )
    assert body["title"] == "42" and body["tags"] == ["1", "two"]
    assert body["schedule"] == {"interval_s": 3600}
    assert body["concurrency"] == 3 and body["enabled"] is False
    assert body["allow_destructive"] is True
    assert body["limits"] == {"max_usd": 2.5, "max_runs": 10, "max_failures": 4}
    assert body["state"] == {"count": "0"} and body["payload"] == "7"


def test_a_string_that_is_not_the_fields_type_is_left_for_the_model_to_refuse():
    assert coerce_body({"concurrency": "many", "enabled": "yes"}) == {
        "concurrency": "many",
        "enabled": "yes",
    }


def test_a_cron_without_a_dst_policy_reads_as_the_default_policy():
    bare = _cmp({"workflow": "echo", "schedule": {"cron": "0 8 * * 1"}})
    spelled = _cmp(
        {"workflow": "echo", "schedule": {"cron": "0 8 * * 1", "dst": {"skipped": "shift"}}}
    )
    other = _cmp(
        {"workflow": "echo", "schedule": {"cron": "0 8 * * 1", "dst": {"skipped": "skip"}}}
    )
    assert changed_top_fields(bare, spelled) == []
    assert changed_top_fields(bare, other) == ["schedule"]
    # An interval has no DST policy: nothing is filled in, nothing to send back.
    interval = {"workflow": "echo", "schedule": {"interval_s": 60}}
    assert normalized(interval) == interval
