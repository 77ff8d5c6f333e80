"""Schedules through the API (the app in process): previews with DST marks, near the ends of
time, EventBridge expressions pasted, zone names, and the refusals, each naming its field.

The clock is the test's: T0 is Monday 2026-11-30 12:00 UTC.
"""

from __future__ import annotations

from datetime import datetime

import pytest

import app as app_module
from devstack.gateway import contract_client as Client
from tests.functional.api_client import Api


@pytest.fixture
def api(aws, clock, monkeypatch):
    monkeypatch.setattr("chalicelib.routes.resource.now_utc", clock)
    with Client(app_module.app, stage_name="test") as client:
        yield Api(client)


def preview(api, body: dict) -> dict:
    answer = api.call("POST", "/v1/schedules/preview", body)
    assert answer.status == 200, answer.body
    return answer.body


@pytest.mark.parametrize(
    ("body", "fires", "dst"),
    [
        (
            {"cron": "30 2 * * *", "timezone": "Europe/Berlin", "from": "2026-03-28T12:00:00Z"},
            ["2026-03-29T01:00:00.000Z", "2026-03-30T00:30:00.000Z"],
            [{"at": "2026-03-29T01:00:00.000Z", "change": "shifted", "policy": "shift"}],
        ),
        (
            {
                "cron": "30 2 * * *",
                "timezone": "Europe/Berlin",
                "dst": {"skipped": "skip"},
                "from": "2026-03-28T12:00:00Z",
            },
            ["2026-03-30T00:30:00.000Z", "2026-03-31T00:30:00.000Z"],
            [{"at": "2026-03-29T01:00:00.000Z", "change": "skipped", "policy": "skip"}],
        ),
        (
            {
                "cron": "30 2 * * *",
                "timezone": "Europe/Berlin",
                "dst": {"repeated": "both"},
                "from": "2026-10-24T12:00:00Z",
            },
            ["2026-10-25T00:30:00.000Z", "2026-10-25T01:30:00.000Z"],
            [
                {"at": "2026-10-25T00:30:00.000Z", "change": "repeated", "policy": "both"},
                {"at": "2026-10-25T01:30:00.000Z", "change": "repeated", "policy": "both"},
            ],
        ),
        (
            {"cron": "0 8 * * *", "timezone": "Europe/Berlin", "from": "2026-12-01T00:00:00Z"},
            ["2026-12-01T07:00:00.000Z", "2026-12-02T07:00:00.000Z"],
            [],
        ),
    ],
)
def test_body_preview_marks_each_fire_a_dst_change_decided(api, body, fires, dst):
    answer = preview(api, {**body, "count": len(fires)})
    assert (answer["fires"], answer["dst"]) == (fires, dst)


def test_trigger_preview_marks_the_autumn_repeat_with_the_triggers_policy(api, clock):
    clock.at = datetime.fromisoformat("2026-10-24T12:00:00+00:00")
    trigger = api.create_trigger(
        {"workflow": "echo", "schedule": {"cron": "30 2 * * *", "timezone": "Europe/Berlin"}}
    )
    answer = api.call("GET", f"/v1/triggers/{trigger['id']}/preview?count=2")
    assert answer.status == 200, answer.body
    assert answer.body == {
        "fires": ["2026-10-25T00:30:00.000Z", "2026-10-26T01:30:00.000Z"],
        "dst": [{"at": "2026-10-25T00:30:00.000Z", "change": "repeated", "policy": "once"}],
        "calendar": [],
    }


@pytest.mark.parametrize(
    ("body", "fires"),
    [
        ({"cron": "* * * * *", "from": "9999-12-31T23:59:00Z", "count": 3}, []),
        (
            {"cron": "* * * * *", "from": "9999-12-31T23:57:00Z", "count": 3},
            ["9999-12-31T23:58:00.000Z", "9999-12-31T23:59:00.000Z"],
        ),
        (
            {"interval_s": 86400, "from": "9999-12-29T00:00:00Z", "count": 5},
            ["9999-12-30T00:00:00.000Z", "9999-12-31T00:00:00.000Z"],
        ),
        ({"cron": "0 0 29 2 *", "from": "9996-03-01T00:00:00Z", "count": 3}, []),
        (
            {
                "cron": "0 * * * *",
                "timezone": "Pacific/Kiritimati",
                "from": "9999-12-31T08:30:00Z",
                "count": 3,
            },
            ["9999-12-31T09:00:00.000Z"],
        ),
        (
            {"cron": "0 1 * * *", "from": "0001-01-01T00:00:00Z", "count": 2},
            ["0001-01-01T01:00:00.000Z", "0001-01-02T01:00:00.000Z"],
        ),
        (
            {"interval_s": 3600, "from": "0001-01-01T00:00:00Z", "count": 1},
            ["0001-01-01T01:00:00.000Z"],
        ),
    ],
)
def test_previews_near_the_ends_of_time_are_shorter_with_four_digit_years(api, body, fires):
    assert preview(api, body)["fires"] == fires


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"cron": "0 1 * * *", "from": "0001-01-01T00:00:00+01:00"}, "from"),
        ({"at": "0001-01-01T00:30:00+01:00"}, "at"),
        ({"cron": "0 8 * * *", "timezone": ""}, "timezone"),
        ({"interval_s": 3600, "timezone": "Europe/Berlin"}, "timezone"),
        ({"interval_s": 3600, "dst": {"skipped": "skip"}}, "dst"),
        ({"cron": "cron(0 8 ? * MON-FRI 2027)"}, "cron"),
    ],
)
def test_body_preview_refusals_name_the_top_level_field(api, body, field):
    answer = api.call("POST", "/v1/schedules/preview", body)
    assert answer.status == 422, answer.body
    assert answer.error["field"] == field


# --- creating triggers ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schedule", "kind", "shown", "next_fire_at"),
    [
        (
            {"cron": "cron(0 8 ? * MON-FRI *)", "timezone": "Europe/Berlin"},
            "cron",
            {"cron": "0 8 * * MON-FRI", "timezone": "Europe/Berlin"},
            "2026-12-01T07:00:00.000Z",
        ),
        (
            {"cron": "cron(0 9 ? * 2#1 *)"},  # EventBridge's 2 is Monday: the first Monday
            "cron",
            {"cron": "0 9 * * 1#1", "timezone": "UTC"},
            "2026-12-07T09:00:00.000Z",
        ),
        ({"cron": "rate(5 minutes)"}, "interval", {"interval_s": 300}, "2026-11-30T12:05:00.000Z"),
        (
            {"cron": "at(2027-01-01T09:00:00)", "timezone": "Europe/Berlin"},
            "at",
            {"at": "2027-01-01T08:00:00Z", "timezone": "Europe/Berlin"},
            "2027-01-01T08:00:00.000Z",
        ),
        (
            {"cron": "0 8 * * *", "timezone": "europe/berlin"},
            "cron",
            {"cron": "0 8 * * *", "timezone": "Europe/Berlin"},
            "2026-12-01T07:00:00.000Z",
        ),
        (
            {"cron": "0 0 */2 * 1", "timezone": "utc"},  # Mondays on odd days: 12-07 is the next
            "cron",
            {"cron": "0 0 */2 * 1", "timezone": "UTC"},
            "2026-12-07T00:00:00.000Z",
        ),
    ],
)
def test_pasted_expressions_and_zone_names_come_back_in_cronhooks_form(
    api, schedule, kind, shown, next_fire_at
):
    trigger = api.create_trigger({"workflow": "echo", "schedule": schedule})
    assert trigger["kind"] == kind
    assert {k: v for k, v in trigger["schedule"].items() if v is not None} == {
        **{"timezone": "UTC"},
        **shown,
    }
    assert trigger["next_fire_at"] == next_fire_at


def test_a_pasted_rate_patched_onto_a_cron_trigger_makes_it_an_interval(api):
    trigger = api.create_trigger({"workflow": "echo", "schedule": {"cron": "0 8 * * *"}})
    answer = api.call(
        "PATCH",
        f"/v1/triggers/{trigger['id']}",
        {"version": trigger["version"], "schedule": {"cron": "rate(2 hours)"}},
    )
    assert answer.status == 200, answer.body
    assert (answer.body["kind"], answer.body["schedule"]["interval_s"]) == ("interval", 7200)
    assert answer.body["schedule"]["cron"] is None


@pytest.mark.parametrize(
    ("schedule", "field", "words"),
    [
        ({"cron": "0 8 * * *", "timezone": ""}, "schedule.timezone", "IANA timezone"),
        ({"interval_s": 3600, "timezone": "Europe/Berlin"}, "schedule.timezone", "interval"),
        ({"interval_s": 3600, "dst": {"repeated": "both"}}, "schedule.dst", "interval"),
        ({"cron": "rate(5 minutes)", "timezone": "Europe/Berlin"}, "schedule.timezone", "interval"),
        ({"cron": "cron(0 8 ? * MON-FRI 2027)"}, "schedule.cron", "year"),
        ({"cron": "cron(0 8 ? * 9 *)"}, "schedule.cron", "day-of-week"),
        ({"cron": "rate(30 seconds)"}, "schedule.cron", "rate("),
        ({"cron": "rate(1 minute)", "interval_s": 60}, "schedule.cron", "one of"),
        ({"cron": "0 0 L/2 * *"}, "schedule.cron", "day-of-month"),
    ],
)
def test_schedules_cronhook_cannot_honour_are_a_422_naming_the_field(api, schedule, field, words):
    answer = api.call("POST", "/v1/triggers", {"workflow": "echo", "schedule": schedule})
    assert answer.status == 422, answer.body
    assert answer.error["field"] == field
    assert words in answer.error["message"]


@pytest.mark.parametrize(
    ("field", "deep"),
    [
        ("payload", "[" * 5000 + "]" * 5000),
        ("state", '{"a":' * 5000 + "1" + "}" * 5000),
        ("payload", "[" * 65 + "]" * 65),  # parses, but deeper than 64 levels
    ],
)
def test_a_body_nested_too_deep_is_a_422_naming_the_field(api, field, deep):
    raw = '{"workflow": "echo", "schedule": {"cron": "0 8 * * *"}, "' + field + '": ' + deep + "}"
    answer = api.call("POST", "/v1/triggers", raw=raw)
    assert answer.status == 422, answer.body
    assert answer.error["field"] == field
    assert api.call("GET", "/v1/triggers").body["items"] == []
