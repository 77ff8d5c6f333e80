"""``PATCH /v1/triggers/{id}?dry_run=true``: the trigger as the edit would make it, with the
slots it adds and removes over 30 days, and nothing stored; and what an edit never does
(re-fire a slot that ran, resume a paused trigger). The app in process; T0 is Monday
2026-11-30 12:00 UTC.
"""

from __future__ import annotations

import pytest

import app as app_module
from devstack.gateway import contract_client as Client
from tests.functional.api_client import Api

SAME_FIELDS = ("schedule", "kind", "cadence", "next_fire_at", "status", "overlap", "title")


@pytest.fixture
def api(aws, clock, monkeypatch):
    monkeypatch.setattr("chalicelib.routes.resource.now_utc", clock)
    with Client(app_module.app, stage_name="test") as client:
        yield Api(client)


def dry_run(api, trigger: dict, body: dict, *, key: str = "root"):
    return api.call("PATCH", f"/v1/triggers/{trigger['id']}?dry_run=true", body, key=key)


def test_a_dry_run_lists_the_slots_removed_and_stores_nothing(api):
    trigger = api.create_trigger({"workflow": "echo", "schedule": {"cron": "0 9 * * *"}})
    answer = dry_run(api, trigger, {"schedule": {"cron": "0 9 * * 1-5"}})
    assert answer.status == 200, answer.body
    diff = answer.body["slots_diff"]
    # 2026-12-01 to 2026-12-30: the weekends' 09:00 slots go, none is added.
    assert diff["added"] == [] and diff["days"] == 30
    assert diff["removed"][:2] == ["2026-12-05T09:00:00.000Z", "2026-12-06T09:00:00.000Z"]
    assert diff["removed_count"] == 8 and diff["truncated"] is False
    assert answer.body["dry_run"] is True
    assert answer.body["schedule"]["cron"] == "0 9 * * 1-5"
    stored = api.call("GET", f"/v1/triggers/{trigger['id']}").body
    assert stored["schedule"]["cron"] == "0 9 * * *"
    assert stored["version"] == trigger["version"]


@pytest.mark.parametrize("value", ["yes", "1", "True", "TRUE", ""])
def test_a_dry_run_flag_other_than_true_or_false_is_a_422_and_stores_nothing(api, value):
    trigger = api.create_trigger({"workflow": "echo", "schedule": {"cron": "0 9 * * *"}})
    path = f"/v1/triggers/{trigger['id']}?dry_run={value}"
    answer = api.call("PATCH", path, {"title": "t-" + value})
    if value == "":  # an empty parameter is no parameter: a real PATCH
        assert answer.status == 200 and "dry_run" not in answer.body
        return
    assert (answer.status, answer.error["field"]) == (422, "dry_run")
    stored = api.call("GET", f"/v1/triggers/{trigger['id']}").body
    assert stored["version"] == trigger["version"] and stored["title"] == trigger["title"]
    real = api.call("PATCH", f"/v1/triggers/{trigger['id']}?dry_run=false", {"title": "kept"})
    assert real.status == 200 and real.body["title"] == "kept"


def test_a_dry_run_answers_what_the_patch_then_does(api):
    trigger = api.create_trigger(
        {"workflow": "echo", "schedule": {"cron": "30 8 * * *", "timezone": "Europe/Berlin"}}
    )
    body = {"schedule": {"cron": ["0 7 * * 1-5", "0 10 * * 6"]}, "title": "twice"}
    planned = dry_run(api, trigger, body).body
    done = api.call("PATCH", f"/v1/triggers/{trigger['id']}", body).body
    assert {k: planned[k] for k in SAME_FIELDS} == {k: done[k] for k in SAME_FIELDS}
    assert planned["slots_diff"]["added"][0] == "2026-12-01T06:00:00.000Z"
    assert planned["slots_diff"]["removed"][0] == "2026-12-01T07:30:00.000Z"


def test_a_calendar_edit_shows_the_holidays_it_removes(api):
    trigger = api.create_trigger(
        {"workflow": "echo", "schedule": {"cron": "0 9 * * *", "timezone": "Europe/Berlin"}}
    )
    answer = dry_run(api, trigger, {"schedule": {"calendar": {"holidays": "DE"}}})
    assert answer.body["slots_diff"]["removed"] == [
        "2026-12-25T08:00:00.000Z",
        "2026-12-26T08:00:00.000Z",
    ]
    assert answer.body["slots_diff"]["added"] == []


def test_an_edit_never_resumes_a_paused_trigger(api):
    trigger = api.create_trigger({"workflow": "echo", "schedule": {"cron": "0 9 * * *"}})
    assert api.call("POST", f"/v1/triggers/{trigger['id']}/disable").status == 200
    body = {"schedule": {"cron": "0 10 * * *"}}
    assert dry_run(api, trigger, body).body["status"] == "disabled"
    edited = api.call("PATCH", f"/v1/triggers/{trigger['id']}", body).body
    assert (edited["status"], edited["disabled_reason"]) == ("disabled", "manual")


def test_an_edit_never_fires_again_a_slot_that_already_ran(aws, api, clock):
    from chalicelib import assembly

    trigger = api.create_trigger({"workflow": "echo", "schedule": {"cron": "0 13 * * *"}})
    runner = assembly.build_runner(clock=clock)
    clock.advance(59 * 60)
    assembly.tick(now=clock())
    clock.advance(60)  # 13:00: the slot runs
    assert "succeeded" in aws.drain(runner)
    clock.advance(10)
    # 13:00 again, as a new cron would have it: already ran, so tomorrow's is next.
    body = {"schedule": {"cron": "0 13,18 * * *"}}
    planned = dry_run(api, trigger, body).body
    assert planned["next_fire_at"] == "2026-11-30T18:00:00.000Z"
    assert "2026-11-30T13:00:00.000Z" not in planned["slots_diff"]["added"]
    done = api.call("PATCH", f"/v1/triggers/{trigger['id']}", body).body
    assert done["next_fire_at"] == "2026-11-30T18:00:00.000Z"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"schedule": {"cron": "61 * * * *"}}, "schedule.cron"),
        ({"schedule": {"calendar": {"holidays": "XX"}}}, "schedule.calendar.holidays"),
        ({"overlap": "sometimes"}, "overlap"),
    ],
)
def test_a_bad_dry_run_is_a_422_naming_the_field(api, body, field):
    trigger = api.create_trigger({"workflow": "echo", "schedule": {"cron": "0 9 * * *"}})
    answer = dry_run(api, trigger, body)
    assert (answer.status, answer.body["error"]["field"]) == (422, field)


def test_a_dry_run_keeps_the_tenant_wall(api):
    trigger = api.create_trigger({"workflow": "echo", "schedule": {"cron": "0 9 * * *"}})
    api.make_key("other", "operator", tenant="other")
    answer = dry_run(api, trigger, {"title": "x"}, key="other")
    assert answer.status == 404


# What only storing the edit changes: the real PATCH's answer has them, the dry run not.
STORED_ONLY = ("updated_at", "version", "dry_run", "slots_diff")


@pytest.mark.parametrize(
    "body",
    [
        {"title": "dry"},
        {"title": None, "tags": ["a"]},
        {"schedule": {"interval_s": 3600}, "title": "hourly"},
        {"enabled": False, "title": "paused"},
        {"state": {"cursor": 7}},
    ],
)
def test_a_dry_run_answers_the_trigger_exactly_as_the_patch_leaves_it(api, body):
    trigger = api.create_trigger(
        {"workflow": "echo", "title": "stored", "schedule": {"cron": "0 9 * * *"}}
    )
    planned = dry_run(api, trigger, body)
    assert planned.status == 200, planned.body
    done = api.call("PATCH", f"/v1/triggers/{trigger['id']}", body)
    assert done.status == 200, done.body

    def without_storing(view: dict) -> dict:
        return {k: v for k, v in view.items() if k not in STORED_ONLY}

    assert without_storing(planned.body) == without_storing(done.body)
    assert planned.body["version"] == trigger["version"]


def test_a_dry_run_of_a_title_shows_it_as_the_display_name(api):
    trigger = api.create_trigger(
        {"workflow": "echo", "title": "stored", "schedule": {"cron": "0 9 * * *"}}
    )
    answer = dry_run(api, trigger, {"title": "dry"}).body
    assert (answer["title"], answer["display_name"]) == ("dry", "dry")
    assert api.call("GET", f"/v1/triggers/{trigger['id']}").body["display_name"] == "stored"
