"""Request validation: every problem is a 422 naming its field."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from chalicelib.domain.errors import PayloadTooLarge, ValidationError
from chalicelib.domain.spec import (
    KeyIn,
    PreviewIn,
    RotateSecretIn,
    TriggerIn,
    TriggerPatch,
    parse_model,
)


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


# -- strict JSON types: a boolean is never a number, a string never a number (and back) --

CRON_BODY = {"workflow": "echo", "schedule": {"cron": "0 8 * * 1"}}


def _with(path: str, value):
    """CRON_BODY with ``value`` at the dotted ``path`` (nested objects created as needed)."""
    body = {**CRON_BODY, "schedule": dict(CRON_BODY["schedule"])}
    *parents, leaf = path.split(".")
    target = body
    for name in parents:
        target[name] = dict(target.get(name) or {})
        target = target[name]
    target[leaf] = value
    return body


WRONG_TYPES = [
    ("concurrency", True),
    ("concurrency", False),
    ("concurrency", "2"),
    ("concurrency", 2.0),
    ("concurrency", 2.5),
    ("concurrency", None),
    ("limits.max_runs", True),
    ("limits.max_runs", "10"),
    ("limits.max_failures", True),
    ("limits.max_failures", "5"),
    ("limits.max_usd", True),
    ("limits.max_usd", "5"),
    ("limits.expires_at", 1_800_000_000),
    ("limits.expires_at", True),
    ("limits.budget_period", 1),
    ("schedule.interval_s", True),
    ("schedule.interval_s", "3600"),
    ("schedule.interval_s", 3600.0),
    ("schedule.at", 1_800_000_000),
    ("schedule.timezone", 1),
    ("schedule.cron", True),
    ("schedule.dst", "shift"),
    ("schedule.dst", True),
    ("schedule.dst.skipped", True),
    ("schedule.dst.repeated", 1),
    ("enabled", 1),
    ("enabled", 0),
    ("enabled", "true"),
    ("enabled", "false"),
    ("enabled", None),
    ("allow_destructive", 1),
    ("allow_destructive", "yes"),
    ("allow_destructive", "false"),
    ("tags", "client-7"),
    ("tags", {"a": "b"}),
    ("tags.0", 7),
    ("tags.0", True),
    ("title", 7),
    ("title", False),
    ("workflow", 1),
    ("serialize_key", 7),
    ("secret_scope", True),
    ("overlap", True),
    ("backfill", 0),
    ("state", "{}"),
    ("limits", "none"),
]


@pytest.mark.parametrize(("path", "value"), WRONG_TYPES)
def test_a_wrong_json_type_is_a_422_naming_the_field(path, value):
    body = _with(path, value)
    if path.startswith("tags."):
        body["tags"] = [value]
    with pytest.raises(ValidationError) as caught:
        parse_model(TriggerIn, body)
    assert caught.value.STATUS_CODE == 422
    assert caught.value.field == path


@pytest.mark.parametrize(
    ("path", "value"),
    # null means "clear" in a patch (the service decides which fields may be cleared)
    [
        (p, v)
        for p, v in WRONG_TYPES
        if p.split(".")[0] not in ("workflow", "backfill") and v is not None
    ],
)
def test_a_patch_is_as_strict_as_a_create(path, value):
    body = _with(path, value)
    del body["workflow"]
    if path.split(".")[0] != "schedule":
        del body["schedule"]
    if path.startswith("tags."):
        body["tags"] = [value]
    with pytest.raises(ValidationError) as caught:
        parse_model(TriggerPatch, body)
    assert caught.value.field == path


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("event.max_attempts", True),
        ("event.max_attempts", "3"),
        ("event.dedupe_window_s", "3600"),
        ("event.secret", 12345678),
        ("event.source", True),
        ("event.filter", "push"),
    ],
)
def test_event_fields_are_strict_too(path, value):
    body = {"workflow": "echo", "event": {"source": "github"}}
    body["event"][path.split(".")[1]] = value
    with pytest.raises(ValidationError) as caught:
        parse_model(TriggerIn, body)
    assert caught.value.field == path


@pytest.mark.parametrize(
    ("model", "body", "field"),
    [
        (PreviewIn, {"cron": "* * * * *", "count": "5"}, "count"),
        (PreviewIn, {"cron": "* * * * *", "count": True}, "count"),
        (PreviewIn, {"interval_s": "60"}, "interval_s"),
        (PreviewIn, {"cron": "* * * * *", "from": 1_800_000_000}, "from"),
        (KeyIn, {"role": True}, "role"),
        (KeyIn, {"role": "viewer", "tenant": 7}, "tenant"),
        (RotateSecretIn, {"grace_s": "60"}, "grace_s"),
        (RotateSecretIn, {"grace_s": False}, "grace_s"),
    ],
)
def test_the_other_request_bodies_are_strict(model, body, field):
    with pytest.raises(ValidationError) as caught:
        parse_model(model, body)
    assert caught.value.field == field


def test_json_conversions_that_remain_integers_as_floats_and_iso_instants():
    parsed = parse_model(
        TriggerIn,
        {
            "workflow": "echo",
            "schedule": {"at": "2026-12-01T10:00:00Z", "dst": {"skipped": "skip"}},
            "limits": {
                "max_usd": 5,
                "max_runs": 3,
                "expires_at": "2027-01-01T01:00:00+01:00",
                "max_failures": 2,
            },
            "concurrency": 3,
            "enabled": False,
            "allow_destructive": True,
            "tags": ["a", "b"],
        },
    )
    assert parsed.limits.max_usd == 5.0 and isinstance(parsed.limits.max_usd, float)
    assert parsed.limits.max_runs == 3
    assert parsed.limits.expires_at == datetime(2027, 1, 1, 0, 0, tzinfo=UTC)
    assert parsed.schedule.at == datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
    assert parsed.schedule.dst.skipped == "skip"
    assert (parsed.concurrency, parsed.enabled, parsed.allow_destructive) == (3, False, True)
    assert parsed.tags == ["a", "b"]
    preview = parse_model(
        PreviewIn, {"interval_s": 60, "from": "2026-12-01T10:00:00.250Z", "count": 2}
    )
    assert preview.from_ == datetime(2026, 12, 1, 10, 0, 0, 250000, tzinfo=UTC)
    assert parse_model(TriggerPatch, {"limits": {"max_usd": 0}}).limits.max_usd == 0.0


def test_a_float_with_a_fraction_is_still_refused_where_an_integer_is_expected():
    with pytest.raises(ValidationError) as caught:
        parse_model(TriggerIn, {**CRON_BODY, "limits": {"max_runs": 1.5}})
    assert caught.value.field == "limits.max_runs"


def test_free_form_state_and_payload_keep_any_json():
    parsed = parse_model(
        TriggerIn, {**CRON_BODY, "state": {"n": True, "s": "5"}, "payload": [1, "2", None]}
    )
    assert parsed.state == {"n": True, "s": "5"}
    assert parsed.payload == [1, "2", None]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"tags": ["\ud800"]}, "tags.0"),
        ({"state": {"a": {"b": "x\udc00y"}}}, "state.a.b"),
        ({"payload": ["ok", {"k": "\ud83d"}]}, "payload.1.k"),
    ],
)
def test_half_a_surrogate_pair_is_a_422_naming_where_it_is(body, field):
    # JSON can escape one (\ud800), text cannot hold it: it read "is not valid JSON".
    full = {"workflow": "echo", "schedule": {"interval_s": 60}, **body}
    with pytest.raises(ValidationError) as info:
        parse_model(TriggerIn, full)
    assert info.value.field == field
    assert "surrogate" in info.value.message
