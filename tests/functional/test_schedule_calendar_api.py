"""Calendars, business days and lists of crons through the API (the app in process).

The clock is the test's: T0 is Monday 2026-11-30 12:00 UTC.
"""

from __future__ import annotations

import pytest

import app as app_module
from devstack.gateway import contract_client as Client
from tests.functional.api_client import Api


@pytest.fixture
def api(aws, clock, monkeypatch):
    monkeypatch.setattr("chalicelib.routes.resource.now_utc", clock)
    with Client(app_module.app, stage_name="test") as client:
        yield Api(client)


def test_body_preview_marks_holidays_moved_to_the_next_business_day(api):
    answer = api.call(
        "POST",
        "/v1/schedules/preview",
        {
            "cron": "0 9 * * 5",
            "timezone": "Europe/Berlin",
            "calendar": {"holidays": "DE-BY", "on_holiday": "next_business_day"},
            "from": "2026-12-20T00:00:00Z",
            "count": 2,
        },
    )
    assert answer.status == 200, answer.body
    assert answer.body["fires"] == ["2026-12-28T08:00:00.000Z", "2027-01-04T08:00:00.000Z"]
    assert answer.body["calendar"] == [
        {
            "at": "2026-12-25T08:00:00.000Z",
            "change": "moved",
            "name": "Christmas Day",
            "moved_to": "2026-12-28T08:00:00.000Z",
        },
        {
            "at": "2027-01-01T08:00:00.000Z",
            "change": "moved",
            "name": "New Year's Day",
            "moved_to": "2027-01-04T08:00:00.000Z",
        },
    ]
    assert "DE-BY holidays moved to the next business day" in answer.body["cadence"]


def test_a_business_day_trigger_is_created_described_and_previewed(api):
    trigger = api.create_trigger(
        {
            "workflow": "echo",
            "schedule": {
                "business_day": 3,
                "time": "09:00",
                "timezone": "Europe/Berlin",
                "calendar": {"holidays": ["DE-BY"]},
            },
        }
    )
    assert trigger["kind"] == "business_day"
    assert trigger["cadence"].startswith("At 09:00 on the 3rd business day of the month")
    assert trigger["next_fire_at"] == "2026-12-03T08:00:00.000Z"
    answer = api.call("GET", f"/v1/triggers/{trigger['id']}/preview?count=2")
    assert answer.status == 200, answer.body
    # January 2027: the 1st (Fri) and the 6th (Wed, Epiphany in Bavaria) are holidays.
    assert answer.body["fires"] == ["2026-12-03T08:00:00.000Z", "2027-01-07T08:00:00.000Z"]


def test_a_list_of_crons_comes_back_as_given_and_fires_its_union(api):
    trigger = api.create_trigger(
        {"workflow": "echo", "schedule": {"cron": ["0 13 * * *", "0 12 * * 1"]}}
    )
    assert trigger["schedule"]["cron"] == ["0 13 * * *", "0 12 * * 1"]
    assert trigger["next_fire_at"] == "2026-11-30T13:00:00.000Z"
    answer = api.call("GET", f"/v1/triggers/{trigger['id']}/preview?count=3")
    assert answer.body["fires"] == [
        "2026-11-30T13:00:00.000Z",
        "2026-12-01T13:00:00.000Z",
        "2026-12-02T13:00:00.000Z",
    ]


def test_patching_the_calendar_keeps_the_cron_and_moves_the_next_slot(api):
    trigger = api.create_trigger(
        {"workflow": "echo", "schedule": {"cron": "0 9 25 12 *", "timezone": "Europe/Berlin"}}
    )
    assert trigger["next_fire_at"] == "2026-12-25T08:00:00.000Z"
    answer = api.call(
        "PATCH",
        f"/v1/triggers/{trigger['id']}",
        {"schedule": {"calendar": {"holidays": "DE", "on_holiday": "previous_business_day"}}},
    )
    assert answer.status == 200, answer.body
    assert answer.body["schedule"]["cron"] == "0 9 25 12 *"
    assert answer.body["next_fire_at"] == "2026-12-24T08:00:00.000Z"


@pytest.mark.parametrize(
    ("schedule", "field"),
    [
        ({"cron": "0 9 * * *", "calendar": {"holidays": "XX"}}, "schedule.calendar.holidays"),
        ({"cron": "0 9 * * *", "calendar": {"holidays": "DE-ZZ"}}, "schedule.calendar.holidays"),
        (
            {"cron": "0 9 * * *", "calendar": {"exclude_dates": ["2026-13-01"]}},
            "schedule.calendar.exclude_dates.0",
        ),
        (
            {"cron": "0 9 * * *", "calendar": {"business_days": [0, 1]}},
            "schedule.calendar.business_days.0",
        ),
        (
            {"cron": "0 9 * * *", "calendar": {"business_days": [1, 1]}},
            "schedule.calendar.business_days",
        ),
        (
            {"cron": "0 9 * * *", "calendar": {"on_holiday": "later"}},
            "schedule.calendar.on_holiday",
        ),
        ({"interval_s": 600, "calendar": {"holidays": "DE"}}, "schedule.calendar"),
        ({"business_day": 2}, "schedule.time"),
        ({"business_day": 2, "time": "25:00"}, "schedule.time"),
        ({"business_day": 30, "time": "09:00"}, "schedule.business_day"),
        ({"cron": ["0 9 * * *", "rate(5 minutes)"]}, "schedule.cron.1"),
        ({"cron": ["0 9 * * *", "99 * * * *"]}, "schedule.cron.1"),
        ({"cron": ["99 * * * *", "0 9 * * *"]}, "schedule.cron.0"),
        ({"cron": []}, "schedule.cron"),
        ({"cron": [5]}, "schedule.cron"),
        ({"cron": "0 9 * * *", "jitter_s": 4000}, "schedule.jitter_s"),
    ],
)
def test_bad_time_fields_are_a_422_naming_the_field(api, schedule, field):
    answer = api.call("POST", "/v1/triggers", {"workflow": "echo", "schedule": schedule})
    assert answer.status == 422, answer.body
    assert answer.body["error"]["field"] == field


def test_simulate_answers_each_slot_with_its_outcome_and_the_cost(api):
    answer = api.call(
        "POST",
        "/v1/schedules/simulate",
        {
            "trigger": {
                "workflow": "echo",
                "schedule": {
                    "cron": "0 9 * * 1-5",
                    "timezone": "Europe/Berlin",
                    "calendar": {"holidays": "DE", "on_holiday": "next_business_day"},
                },
            },
            "from": "2026-12-24T00:00:00Z",
            "to": "2026-12-29T00:00:00Z",
        },
    )
    assert answer.status == 200, answer.body
    assert [(s["slot"], s["outcome"]) for s in answer.body["slots"]] == [
        ("2026-12-24T08:00:00.000Z", "run"),
        ("2026-12-25T08:00:00.000Z", "moved"),
        ("2026-12-28T08:00:00.000Z", "run"),
    ]
    assert answer.body["runs"] == 2 and answer.body["estimated_usd"] > 0


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"from": "2026-12-02T00:00:00Z", "to": "2026-12-01T00:00:00Z"}, "to"),
        ({"from": "2026-01-01T00:00:00Z", "to": "2027-06-01T00:00:00Z"}, "to"),
        (
            {
                "from": "2026-12-01T00:00:00Z",
                "to": "2026-12-02T00:00:00Z",
                "trigger_id": "trg_x",
            },
            "trigger",
        ),
        (
            {
                "from": "2026-12-01T00:00:00Z",
                "to": "2026-12-02T00:00:00Z",
                "outages": [{"from": "2026-12-01T02:00:00Z", "to": "2026-12-01T01:00:00Z"}],
            },
            "outages.0.to",
        ),
    ],
)
def test_a_bad_simulation_is_a_422_naming_the_field(api, body, field):
    trigger = {"workflow": "echo", "schedule": {"cron": "0 9 * * *"}}
    answer = api.call("POST", "/v1/schedules/simulate", {"trigger": trigger, **body})
    assert (answer.status, answer.body["error"]["field"]) == (422, field)


def test_simulate_names_the_trigger_field_at_fault_and_keeps_the_tenant_wall(api):
    window = {"from": "2026-12-01T00:00:00Z", "to": "2026-12-02T00:00:00Z"}
    bad = {"workflow": "echo", "schedule": {"cron": "99 * * * *"}}
    answer = api.call("POST", "/v1/schedules/simulate", {"trigger": bad, **window})
    assert (answer.status, answer.body["error"]["field"]) == (422, "trigger.schedule.cron")
    stored = api.create_trigger({"workflow": "echo", "schedule": {"cron": "0 9 * * *"}})
    api.make_key("other", "viewer", tenant="other")
    body = {"trigger_id": stored["id"], **window}
    assert api.call("POST", "/v1/schedules/simulate", body, key="other").status == 404
    assert api.call("POST", "/v1/schedules/simulate", body).status == 200


@pytest.mark.parametrize("at", ["9999-12-31T23:59:59.999999Z", "9999-12-31T23:59:59.9999Z"])
def test_an_at_in_the_last_millisecond_of_9999_is_kept_to_the_millisecond(api, at):
    # Rounded up to the millisecond it was year 10000: a 500 that stored the trigger and
    # then failed every read of it (the tenant's whole list with it).
    answer = api.call("POST", "/v1/triggers", {"workflow": "echo", "schedule": {"at": at}})
    assert answer.status == 201, answer.body
    assert answer.body["schedule"]["at"].startswith("9999-12-31T23:59:59.999")
    assert api.call("GET", f"/v1/triggers/{answer.body['id']}").status == 200
    assert api.call("GET", "/v1/triggers?limit=200").status == 200
    patched = api.call("PATCH", f"/v1/triggers/{answer.body['id']}", {"schedule": {"at": at}})
    assert patched.status == 200, patched.body
    preview = api.call("POST", "/v1/schedules/preview", {"at": at})
    assert preview.status == 200, preview.body
