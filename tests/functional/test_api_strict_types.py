"""The API refuses a wrong JSON type (``true`` for a number, ``"5"`` for an integer) with a
422 naming the field, through the whole HTTP path (the app in process)."""

from __future__ import annotations

import pytest

import app as app_module
from devstack.gateway import contract_client as Client
from tests.functional.api_client import Api

CRON = {"workflow": "echo", "schedule": {"cron": "0 8 * * 1"}}


@pytest.fixture
def api(aws):
    with Client(app_module.app, stage_name="test") as client:
        yield Api(client)


def _triggers(api) -> list:
    answer = api.call("GET", "/v1/triggers")
    assert answer.status == 200, answer.body
    return answer.body["items"]


def test_create_with_concurrency_true_is_a_422_naming_concurrency(api):
    answer = api.call("POST", "/v1/triggers", {**CRON, "concurrency": True})
    assert answer.status == 422, answer.body
    assert answer.error["field"] == "concurrency"
    assert answer.error["code"] and "concurrency" in answer.error["message"]
    assert _triggers(api) == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**CRON, "limits": {"max_runs": "10"}}, "limits.max_runs"),
        ({**CRON, "limits": {"max_usd": True}}, "limits.max_usd"),
        ({"workflow": "echo", "schedule": {"interval_s": "3600"}}, "schedule.interval_s"),
        ({**CRON, "enabled": 1}, "enabled"),
        ({**CRON, "allow_destructive": "false"}, "allow_destructive"),
    ],
)
def test_create_with_a_wrong_json_type_is_a_422_naming_the_field(api, body, field):
    answer = api.call("POST", "/v1/triggers", body)
    assert answer.status == 422, answer.body
    assert answer.error["field"] == field


def test_patch_with_a_wrong_json_type_is_a_422_and_changes_nothing(api):
    trigger = api.create_trigger({**CRON, "limits": {"max_usd": 5}})
    assert trigger["limits"]["max_usd"] == 5.0  # an integer is still a number
    answer = api.call("PATCH", f"/v1/triggers/{trigger['id']}", {"concurrency": True})
    assert answer.status == 422, answer.body
    assert answer.error["field"] == "concurrency"
    answer = api.call("PATCH", f"/v1/triggers/{trigger['id']}", {"enabled": 0})
    assert answer.status == 422, answer.body
    assert answer.error["field"] == "enabled"
    after = api.call("GET", f"/v1/triggers/{trigger['id']}").body
    assert (after["concurrency"], after["status"], after["version"]) == (
        trigger["concurrency"],
        "active",
        trigger["version"],
    )


def test_preview_with_a_string_count_is_a_422_and_iso_from_still_works(api):
    answer = api.call("POST", "/v1/schedules/preview", {"cron": "0 8 * * *", "count": "3"})
    assert answer.status == 422, answer.body
    assert answer.error["field"] == "count"
    answer = api.call(
        "POST",
        "/v1/schedules/preview",
        {"cron": "0 8 * * *", "from": "2026-12-01T00:00:00Z", "count": 2},
    )
    assert answer.status == 200, answer.body
    assert answer.body["fires"] == ["2026-12-01T08:00:00.000Z", "2026-12-02T08:00:00.000Z"]
