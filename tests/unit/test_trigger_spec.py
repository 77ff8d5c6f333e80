"""The stored trigger spec, typed, with its defaults in one place (pure)."""

from __future__ import annotations

import json

import pytest

from chalicelib.domain.spec import DstIn, EventIn, LimitsIn, ScheduleIn, TriggerIn, parse_model
from chalicelib.domain.trigger_spec import (
    DEFAULTS,
    DST_DEFAULTS,
    EVENT_DEFAULTS,
    LIMITS_DEFAULTS,
    REQUIRED,
    SCHEDULE_DEFAULTS,
    TriggerSpec,
    compact,
    expand,
    split_about,
    top_defaults,
)


@pytest.mark.parametrize(
    ("stored", "field", "value"),
    [
        ({}, "overlap", "skip"),
        ({}, "concurrency", 1),
        ({}, "backfill", "from_now"),
        ({}, "allow_destructive", False),
        ({}, "tags", ()),
        ({}, "limits", LIMITS_DEFAULTS),
        ({"limits": None}, "limits", LIMITS_DEFAULTS),
        ({"limits": {"max_usd": 5.0}}, "limits", {**LIMITS_DEFAULTS, "max_usd": 5.0}),
        ({}, "max_failures", 5),
        ({"limits": {"max_failures": 2}}, "max_failures", 2),
        ({"limits": {"max_failures": 0}}, "max_failures", 5),
        ({}, "budget", None),
        ({"limits": {"max_usd": 5}}, "budget", (5.0, "month")),
        ({"limits": {"max_usd": 1.5, "budget_period": "day"}}, "budget", (1.5, "day")),
        ({}, "max_attempts", 3),
        ({"event": {"source": "github"}}, "max_attempts", 3),
        ({"event": {"source": "github", "max_attempts": 7}}, "max_attempts", 7),
        ({"event": {"source": "github", "max_attempts": None}}, "max_attempts", 3),
        ({}, "dedupe_window_s", 7 * 86400),
        ({"event": {"source": "webhook", "dedupe_window_s": 60}}, "dedupe_window_s", 60),
        (
            {"event": {"source": "s3", "bucket": "b"}},
            "event",
            {**EVENT_DEFAULTS, "source": "s3", "bucket": "b"},
        ),
        ({}, "schedule", None),
        ({"schedule": {"interval_s": 60}}, "schedule", {**SCHEDULE_DEFAULTS, "interval_s": 60}),
        (
            {"schedule": {"cron": "0 9 * * *", "dst": {"skipped": "skip"}}},
            "schedule",
            {**SCHEDULE_DEFAULTS, "cron": "0 9 * * *", "dst": {**DST_DEFAULTS, "skipped": "skip"}},
        ),
        ({"about_ref": "abc"}, "about_ref", "abc"),
        ({}, "about_ref", None),
        ({"tags": None}, "tags", ()),
        ({"tags": ["a", "b"]}, "tags", ("a", "b")),
        ({"concurrency": 4}, "concurrency", 4),
        ({"concurrency": None}, "concurrency", 1),
        ({"concurrency": "bad"}, "concurrency", 1),
        ({"concurrency": 0}, "concurrency", 1),
        ({"overlap": "allow"}, "overlap", "allow"),
        ({"allow_destructive": 1}, "allow_destructive", True),
        ({"payload_ref": "abc"}, "payload_ref", "abc"),
        ({"payload_ref": ""}, "payload_ref", None),
        ({"event": {"source": "github"}}, "event_source", "github"),
        ({}, "event_source", None),
    ],
)
def test_a_stored_spec_reads_with_its_defaults(stored, field, value):
    assert getattr(TriggerSpec.from_dict(stored), field) == value


def test_unknown_keys_are_kept_aside():
    assert TriggerSpec.from_dict({"enabled": True, "title": "t"}).extra == {"enabled": True}


@pytest.mark.parametrize("text", [None, "", "{}"])
def test_an_empty_spec_is_all_defaults(text):
    spec = TriggerSpec.from_json(text)
    assert (spec.overlap, spec.concurrency, spec.backfill) == (
        DEFAULTS["overlap"],
        DEFAULTS["concurrency"],
        DEFAULTS["backfill"],
    )


def test_the_defaults_are_the_create_bodys_defaults():
    body = parse_model(TriggerIn, {"workflow": "echo", "schedule": {"interval_s": 60}})
    stored = body.model_dump(mode="json", exclude={"state"})
    spec = TriggerSpec.from_json(json.dumps(stored))
    assert spec.schedule == stored["schedule"] and spec.extra == {
        "workflow": "echo",
        "enabled": True,
    }
    for name, default in DEFAULTS.items():
        assert getattr(spec, name) == default == stored[name]


@pytest.mark.parametrize(
    ("title", "shown", "name"), [("Nightly", "echo", "Nightly"), (None, "echo", "echo")]
)
def test_display_name_is_the_title_else_the_target(title, shown, name):
    assert TriggerSpec(title=title).display_name(shown) == name


@pytest.mark.parametrize(("tags", "tag", "has"), [(("a",), "a", True), ((), "a", False)])
def test_has_tag(tags, tag, has):
    assert TriggerSpec(tags=tags).has_tag(tag) is has


# Bodies a client may send, each with something off its defaults (or exactly on them).
BODIES = [
    {"workflow": "echo", "schedule": {"interval_s": 60}},
    {"workflow": "echo", "schedule": {"cron": "0 9 * * 1-5", "timezone": "Europe/Paris"}},
    {"workflow": "echo", "schedule": {"cron": "0 2 * * *", "dst": {}}},
    {"workflow": "echo", "schedule": {"cron": "0 2 * * *", "dst": {"repeated": "both"}}},
    {"workflow": "echo", "schedule": {"at": "2030-01-01T09:00:00+01:00"}},
    {
        "workflow": "echo",
        "title": "Nightly",
        "tags": ["a", "b"],
        "schedule": {"interval_s": 300},
        "payload": {"n": 1, "deep": {"list": [1, 2, None]}},
        "backfill": "all",
        "serialize_key": "k",
        "secret_scope": "team/x",
        "limits": {"max_runs": 10, "max_usd": 5, "budget_period": "week", "max_failures": 2},
        "overlap": "buffer_one",
        "concurrency": 3,
        "allow_destructive": True,
        "enabled": False,
        "state": {"cursor": 1},
    },
    {"workflow": "echo", "schedule": {"interval_s": 60}, "limits": {"max_failures": 5}},
    {"workflow": "echo", "schedule": {"interval_s": 60}, "payload": 0, "title": ""},
    {"workflow": "echo", "event": {"source": "webhook", "secret": "s" * 16}},
    {"workflow": "echo", "event": {"source": "github", "max_attempts": 5, "filter": {"a": 1}}},
    {"workflow": "echo", "event": {"source": "eventbridge", "pattern": {"source": ["x"]}}},
    {"workflow": "echo", "event": {"source": "s3", "bucket": "my-bucket", "prefix": "in/"}},
    {"workflow": "echo", "event": {"source": "stripe", "dedupe_window_s": 3600}},
]


def _full(body: dict) -> dict:
    """What the stored spec was before defaults were left out (``spec_to_store``'s dump)."""
    full = parse_model(TriggerIn, body).model_dump(mode="json", exclude={"state", "enabled"})
    if full.get("event"):
        full["event"].pop("secret", None)
    return full


@pytest.mark.parametrize("body", BODIES)
def test_a_compact_spec_expands_to_what_the_request_model_dumps(body):
    full = _full(body)
    assert expand(compact(full)) == full
    assert list(expand(compact(full))) == list(full)  # the same order, too
    assert expand(full) == full  # an old item, defaults spelled out, reads the same


@pytest.mark.parametrize("body", BODIES)
def test_an_old_full_spec_and_a_compact_one_read_the_same(body):
    full = _full(body)
    old = {**full, "enabled": True}  # create used to store ``enabled`` too
    assert TriggerSpec.from_dict(compact(full)) == TriggerSpec.from_dict(
        {k: v for k, v in old.items() if k != "enabled"}
    )
    assert TriggerSpec.from_dict(old).extra == {"workflow": "echo", "enabled": True}


@pytest.mark.parametrize("body", BODIES)
def test_a_compact_spec_holds_no_default(body):
    stored = compact(_full(body))
    for name, default in DEFAULTS.items():
        assert stored.get(name, object()) != default or type(stored[name]) is not type(default)
    assert "enabled" not in stored and "state" not in stored
    assert stored.get("limits") != {} and stored.get("limits", {}).get("max_failures") != 5
    if stored.get("schedule"):
        assert "timezone" not in stored["schedule"] or stored["schedule"]["timezone"] != "UTC"
        assert None not in stored["schedule"].values()
    if stored.get("event"):
        assert "max_attempts" not in stored["event"] or stored["event"]["max_attempts"] != 3


def test_compact_keeps_what_is_not_a_default():
    full = _full({"workflow": "echo", "schedule": {"cron": "0 2 * * *", "dst": {}}})
    assert compact(full) == {"workflow": "echo", "schedule": {"cron": "0 2 * * *", "dst": {}}}
    # A value equal to a default in another JSON type is not that default.
    assert compact({"workflow": "w", "concurrency": 1.0, "allow_destructive": 0}) == {
        "workflow": "w",
        "concurrency": 1.0,
        "allow_destructive": 0,
    }
    assert compact({"workflow": "w", "payload": {"x": None}}) == {
        "workflow": "w",
        "payload": {"x": None},
    }


@pytest.mark.parametrize(
    ("model", "defaults", "not_stored"),
    [
        (TriggerIn, top_defaults(), {"state", "enabled"}),
        (ScheduleIn, SCHEDULE_DEFAULTS, set()),
        (DstIn, DST_DEFAULTS, set()),
        (EventIn, EVENT_DEFAULTS, {"secret"}),
        (LimitsIn, LIMITS_DEFAULTS, set()),
    ],
)
def test_the_domain_defaults_are_the_request_models_defaults(model, defaults, not_stored):
    """One place for the defaults: every field a request model stores is in the domain's
    table, with the same default (a new field needs its default there too)."""
    stored = {n: f for n, f in model.model_fields.items() if n not in not_stored}
    assert list(defaults) == list(stored)  # the same fields, in the same order
    for name, info in stored.items():
        if info.is_required():
            assert defaults[name] is REQUIRED, name
            continue
        default = info.get_default(call_default_factory=True)
        if hasattr(default, "model_dump"):
            default = default.model_dump(mode="json")
        assert default == defaults[name], name


@pytest.mark.parametrize(
    ("stored", "hot", "about"),
    [
        ({"workflow": "w"}, {"workflow": "w"}, {}),
        ({"workflow": "w", "title": "T"}, {"workflow": "w"}, {"title": "T"}),
        ({"tags": ["a"], "payload": 1}, {"payload": 1}, {"tags": ["a"]}),
    ],
)
def test_title_and_tags_are_the_about_part(stored, hot, about):
    assert split_about(stored) == (hot, about)
