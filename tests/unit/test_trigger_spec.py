"""The stored trigger spec, typed, with its defaults in one place (pure)."""

from __future__ import annotations

import json

import pytest

from chalicelib.domain.spec import TriggerIn, parse_model
from chalicelib.domain.trigger_spec import DEFAULTS, TriggerSpec


@pytest.mark.parametrize(
    ("stored", "field", "value"),
    [
        ({}, "overlap", "skip"),
        ({}, "concurrency", 1),
        ({}, "backfill", "from_now"),
        ({}, "allow_destructive", False),
        ({}, "tags", ()),
        ({}, "limits", None),
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
