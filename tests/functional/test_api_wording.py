"""Errors name the right field in cronhook's words; lists and routes answer alike."""

from __future__ import annotations

import pytest

import app as app_module
from devstack.gateway import contract_client as Client
from tests.functional.api_client import Api

HOURLY = {"workflow": "echo", "schedule": {"cron": "0 * * * *"}}
PYDANTIC_PHRASES = ("Value error", "should have", "after validation", "Input should", "[type=")


@pytest.fixture
def api(aws):
    with Client(app_module.app, stage_name="test") as client:
        yield Api(client)


def _refused(answer, status: int, field: str | None) -> dict:
    assert answer.status == status, answer.body
    error = answer.error
    assert error.get("field") == field, error
    for phrase in PYDANTIC_PHRASES:
        assert phrase not in error["message"], error["message"]
    return error


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        ({**HOURLY, "tags": ["t"] * 51}, "tags", "must have at most 50 items"),
        ({**HOURLY, "title": "a\x00b"}, "title", "control characters"),
        ({**HOURLY, "schedule": {"at": "2030-01-01T00:00:00"}}, "schedule.at", "offset or Z"),
        (
            {**HOURLY, "overlap": "sometimes"},
            "overlap",
            "must be one of skip, buffer_one, buffer_all, allow",
        ),
        ({**HOURLY, "concurrency": 0}, "concurrency", "must be at least 1"),
        ({**HOURLY, "enabled": "yes"}, "enabled", "must be true or false"),
        ({"schedule": {"cron": "0 * * * *"}}, "workflow", "is required"),
        (
            {**HOURLY, "limits": {"expires_at": "2020-01-01T00:00:00Z"}},
            "limits.expires_at",
            "in the past",
        ),
    ],
)
def test_create_refusals_name_the_field_in_cronhooks_words(api, body, field, says):
    error = _refused(api.call("POST", "/v1/triggers", body), 422, field)
    assert says in error["message"]


def test_a_patch_to_an_expiry_in_the_past_is_refused(api):
    created = api.create_trigger(HOURLY)
    answer = api.call(
        "PATCH", f"/v1/triggers/{created['id']}", {"limits": {"expires_at": "2020-01-01T00:00:00Z"}}
    )
    _refused(answer, 422, "limits.expires_at")
    # Other limits can still change while an old expiry stands.
    ok = api.call("PATCH", f"/v1/triggers/{created['id']}", {"limits": {"max_runs": 3}})
    assert ok.status == 200, ok.body


def test_preview_count_out_of_range_names_count(api):
    created = api.create_trigger(HOURLY)
    error = _refused(api.call("GET", f"/v1/triggers/{created['id']}/preview?count=0"), 422, "count")
    assert error["message"].startswith("count must be between 1 and 100")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"cron": "not a cron", "from": "2030-01-01T00:00:00Z"}, "cron"),
        (
            {"cron": "0 * * * *", "timezone": "Mars/Olympus", "from": "2030-01-01T00:00:00Z"},
            "timezone",
        ),
        ({"cron": "0 * * * *", "count": 0}, "count"),
    ],
)
def test_body_preview_errors_name_the_top_level_field(api, body, field):
    error = _refused(api.call("POST", "/v1/schedules/preview", body), 422, field)
    assert "schedule." not in error["message"]


def test_a_version_ahead_of_the_trigger_is_not_called_stale(api):
    created = api.create_trigger(HOURLY)
    ahead = api.call("PATCH", f"/v1/triggers/{created['id']}", {"version": 999, "title": "x"})
    error = _refused(ahead, 409, "version")
    assert "does not exist yet" in error["message"] and "stale" not in error["message"]
    api.call("PATCH", f"/v1/triggers/{created['id']}", {"title": "y"})
    behind = api.call("PATCH", f"/v1/triggers/{created['id']}", {"version": 1, "title": "z"})
    assert "stale" in _refused(behind, 409, "version")["message"]


def test_an_admin_may_name_its_own_tenant_but_not_another(api):
    api.make_key("acme-admin", "admin", tenant="acme")
    own = api.call("POST", "/v1/keys", {"role": "viewer", "tenant": "acme"}, key="acme-admin")
    assert own.status == 201, own.body
    assert own.body["tenant"] == "acme"
    other = api.call("POST", "/v1/keys", {"role": "viewer", "tenant": "local"}, key="acme-admin")
    _refused(other, 403, "tenant")


def test_workflows_refuse_a_cursor_they_did_not_issue_and_page_with_their_own(api):
    _refused(api.call("GET", "/v1/workflows?cursor=garbage"), 422, "cursor")
    first = api.call("GET", "/v1/workflows?limit=1")
    assert first.status == 200 and len(first.body["items"]) == 1
    cursor = first.body["next_cursor"]
    assert cursor
    second = api.call("GET", f"/v1/workflows?limit=1&cursor={cursor}")
    assert second.status == 200, second.body
    assert second.body["items"][0]["name"] > first.body["items"][0]["name"]


def test_audit_of_an_unknown_trigger_is_404_and_of_a_deleted_one_still_readable(api):
    _refused(api.call("GET", "/v1/audit?trigger_id=trg_doesnotexist0000"), 404, None)
    created = api.create_trigger(HOURLY)
    assert api.call("DELETE", f"/v1/triggers/{created['id']}").status == 204
    gone = api.call("GET", f"/v1/audit?trigger_id={created['id']}")
    assert gone.status == 200, gone.body
    assert {e["action"] for e in gone.body["items"]} == {"create", "delete"}


def test_head_healthz_answers_200_without_a_body(api):
    answer = api.call("HEAD", "/healthz", key=None)
    assert answer.status == 200
    assert not answer.body
