"""The ``/v1/alerts`` routes through the app: roles, the tenant wall, validation naming the
field, channel URLs through the address policy, secrets sealed and never returned."""

from __future__ import annotations

import pytest
from chalice.test import Client

import app as app_module
from chalicelib.settings import reset_settings
from chalicelib.store import alerts as alert_store
from chalicelib.store import kms
from chalicelib.store.aws import client
from tests.functional.api_client import Api

ROOT_TENANT = "local"  # the root key's tenant (tests/conftest.py)
SLACK = "https://hooks.slack.com/services/T000/B000/secretpart"
POLICY = {
    "name": "ops",
    "on": ["failed", "recovered"],
    "failures_in_a_row": 3,
    "channels": [
        {"type": "email", "to": ["ops@example.com"]},
        {"type": "slack", "webhook_url": SLACK},
        {"type": "webhook", "url": "https://example.com/cronhook"},
        {"type": "sns", "topic_arn": "arn:aws:sns:us-east-1:123456789012:ops"},
    ],
}


@pytest.fixture
def api(aws, monkeypatch, tmp_path):
    url = client("sqs").create_queue(QueueName="cronhook-alerts")["QueueUrl"]
    monkeypatch.setenv("CRONHOOK_ALERTS_QUEUE_URL", url)
    monkeypatch.setenv("CRONHOOK_DATA_DIR", str(tmp_path))
    reset_settings()
    kms.clear_cache()
    # Slack's and example.com's names resolve to public addresses: no network here.
    from chalicelib.workflows.remote import addresses

    real = addresses._resolve
    monkeypatch.setattr(
        addresses,
        "_resolve",
        lambda host, port: (
            ["93.184.215.14"] if host.endswith(("slack.com", "example.com")) else real(host, port)
        ),
    )
    with Client(app_module.app, stage_name="test") as chalice_client:
        yield Api(chalice_client)


def test_a_policy_round_trips_and_never_shows_a_slack_url_or_a_signing_secret_again(api):
    created = api.call("POST", "/v1/alerts", POLICY)
    assert created.status == 201, created.body
    secret = created.body["signing_secret"]
    assert secret.startswith("whsec_")
    assert SLACK not in str(created.body)
    assert created.body["channels"][1] == {
        "type": "slack",
        "host": "hooks.slack.com",
        "webhook_url": None,
    }
    alert_id = created.body["id"]
    for answer in (api.call("GET", f"/v1/alerts/{alert_id}"), api.call("GET", "/v1/alerts")):
        assert answer.status == 200
        assert SLACK not in str(answer.body) and secret not in str(answer.body)
        assert "signing_secret" not in str(answer.body).replace("has_signing_secret", "")
    # Stored sealed: neither the URL nor the secret is in the table.
    stored = str([i.body for i in alert_store.AlertModel.scan()])
    assert SLACK not in stored and secret not in stored
    patched = api.call("PATCH", f"/v1/alerts/{alert_id}", {"quiet_s": 60, "name": "ops-2"})
    assert patched.status == 200 and patched.body["quiet_s"] == 60
    assert "signing_secret" not in patched.body  # kept, not issued again
    assert api.call("DELETE", f"/v1/alerts/{alert_id}").status == 204
    assert api.call("GET", f"/v1/alerts/{alert_id}").status == 404


@pytest.mark.parametrize(
    "url",
    [
        "https://169.254.169.254/latest/meta-data/",
        "https://127.0.0.1/services/T/B/x",
        "https://localhost/services/T/B/x",
        "https://[::1]/services/T/B/x",
        "https://[fd00:ec2::254]/latest/",
    ],
)
def test_a_slack_url_pointing_at_metadata_or_loopback_is_refused_at_create(api, url):
    body = {"name": "ops", "on": ["failed"], "channels": [{"type": "slack", "webhook_url": url}]}
    answer = api.call("POST", "/v1/alerts", body)
    assert answer.status == 422, answer.body
    assert answer.error["field"] == "channels.0.webhook_url"
    assert url not in answer.error["message"]
    assert api.call("GET", "/v1/alerts").body["items"] == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"on": ["failed"]}, "name"),
        ({"name": "x", "on": ["exploded"]}, "on.0"),
        ({"name": "x", "on": []}, "on"),
        ({"name": "x", "on": ["failed"], "failures_in_a_row": 0}, "failures_in_a_row"),
        ({"name": "x", "on": ["failed"], "quiet_s": "60"}, "quiet_s"),
        ({"name": "x", "on": ["failed"], "channels": [{"type": "pager"}]}, "channels.0"),
        (
            {"name": "x", "on": ["failed"], "channels": [{"type": "email", "to": ["nope"]}]},
            "channels.0.to",
        ),
        (
            {
                "name": "x",
                "on": ["failed"],
                "channels": [{"type": "sns", "topic_arn": "arn:aws:s3:::b"}],
            },
            "channels.0.topic_arn",
        ),
        (
            {"name": "x", "on": ["failed"], "channels": [{"type": "webhook", "url": 5}]},
            "channels.0.url",  # as the body names it (pydantic adds the branch, webhook)
        ),
        (
            {"name": "x", "on": ["failed"], "channels": [{"type": "slack", "host": "a"}]},
            "channels.0.host",
        ),
        ({"name": "x", "on": ["failed"], "match": {"tags": "a"}}, "match.tags"),
        ({"name": "x", "on": ["failed"], "colour": "red"}, "colour"),
    ],
)
def test_a_bad_policy_is_a_422_naming_its_field(api, body, field):
    answer = api.call("POST", "/v1/alerts", body)
    assert answer.status == 422, answer.body
    assert answer.error["field"] == field


def test_roles_and_the_tenant_wall(api):
    created = api.call("POST", "/v1/alerts", {"name": "ops", "on": ["failed"]}).body
    api.make_key("op", "operator")
    api.make_key("other", "admin", tenant="acme")
    assert api.call("POST", "/v1/alerts", {"name": "x", "on": ["failed"]}, key="op").status == 403
    assert api.call("GET", "/v1/alerts", key="op").status == 200
    path = f"/v1/alerts/{created['id']}"
    assert api.call("GET", path, key="other").status == 404
    assert api.call("PATCH", path, {"name": "mine"}, key="other").status == 404
    assert api.call("DELETE", path, key="other").status == 404
    assert api.call("POST", path + "/test", key="other").status == 404
    assert api.call("GET", path + "/notifications", key="other").status == 404
    assert api.call("GET", "/v1/alerts", key="other").body["items"] == []
    assert api.call("GET", path).body["name"] == "ops"


def test_a_policy_without_channels_cannot_be_tested_and_one_with_channels_is_queued(api):
    bare = api.call("POST", "/v1/alerts", {"name": "bus only", "on": ["late"]}).body
    answer = api.call("POST", f"/v1/alerts/{bare['id']}/test")
    assert answer.status == 422 and answer.error["field"] == "channels"
    created = api.call("POST", "/v1/alerts", POLICY).body
    queued = api.call("POST", f"/v1/alerts/{created['id']}/test")
    assert queued.status == 202 and queued.body == {"queued": True, "channels": 4}


def test_a_webhook_urls_query_values_are_masked_in_every_view_and_kept_for_sending(api):
    hook = "https://example.com/hook?token=QSSECRET999&team=ops"
    body = {"name": "ops", "on": ["failed"], "channels": [{"type": "webhook", "url": hook}]}
    created = api.call("POST", "/v1/alerts", body)
    assert created.status == 201, created.body
    alert_id = created.body["id"]
    api.make_key("viewer", "viewer")
    answers = [
        created,
        api.call("GET", "/v1/alerts", key="viewer"),
        api.call("GET", f"/v1/alerts/{alert_id}", key="viewer"),
        api.call("PATCH", f"/v1/alerts/{alert_id}", {"quiet_s": 60}),
    ]
    for answer in answers:
        assert answer.status in (200, 201), answer.body
        assert "QSSECRET999" not in str(answer.body)
    assert created.body["channels"] == [
        {"type": "webhook", "url": "https://example.com/hook?token=[masked]&team=[masked]"}
    ]
    stored = alert_store.get_policy(ROOT_TENANT, alert_id)
    assert stored is not None and stored["channels"][0]["url"] == hook


def test_a_patched_match_is_stored_whole_with_its_empty_lists(api):
    created = api.call("POST", "/v1/alerts", {"name": "ops", "on": ["failed"]}).body
    assert created["match"] == {"tags": [], "workflows": [], "trigger_ids": []}
    path = f"/v1/alerts/{created['id']}"
    patched = api.call("PATCH", path, {"match": {"tags": ["p1"]}})
    assert patched.status == 200, patched.body
    whole = {"tags": ["p1"], "workflows": [], "trigger_ids": []}
    assert patched.body["match"] == whole
    assert api.call("GET", path).body["match"] == whole
    assert api.call("GET", "/v1/alerts").body["items"][0]["match"] == whole
    stored = alert_store.get_policy(ROOT_TENANT, created["id"])
    assert stored is not None and stored["match"] == whole


def test_alert_policies_list_a_page_at_a_time_with_a_cursor(api):
    ids = [
        api.call("POST", "/v1/alerts", {"name": f"p{n}", "on": ["failed"]}).body["id"]
        for n in range(5)
    ]
    seen: list[str] = []
    cursor = None
    for _ in range(5):
        path = "/v1/alerts?limit=2" + (f"&cursor={cursor}" if cursor else "")
        page = api.call("GET", path, key="root")
        assert page.status == 200, page.body
        assert set(page.body) == {"items", "next_cursor"}
        assert len(page.body["items"]) <= 2
        seen += [item["id"] for item in page.body["items"]]
        cursor = page.body["next_cursor"]
        if cursor is None:
            break
    assert sorted(seen) == sorted(ids) and len(seen) == 5
    assert api.call("GET", "/v1/alerts").body["next_cursor"] is None


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("limit=0", "limit"),
        ("limit=abc", "limit"),
        ("limit=201", "limit"),
        ("cursor=nope", "cursor"),
    ],
)
def test_a_bad_limit_or_cursor_on_the_alert_list_is_a_422_naming_it(api, query, field):
    answer = api.call("GET", f"/v1/alerts?{query}")
    assert answer.status == 422, answer.body
    assert answer.error["field"] == field


def test_a_cursor_of_another_tenant_or_outside_the_policies_is_a_422(api):
    from chalicelib.services.pages import encode_cursor

    api.make_key("other", "admin", tenant="acme")
    for n in range(2):
        api.call("POST", "/v1/alerts", {"name": f"p{n}", "on": ["failed"]}, key="other")
    foreign = api.call("GET", "/v1/alerts?limit=1", key="other").body["next_cursor"]
    assert foreign is not None
    assert api.call("GET", f"/v1/alerts?cursor={foreign}").error["field"] == "cursor"
    outside = encode_cursor({"pk": {"S": f"t#{ROOT_TENANT}"}, "sk": {"S": "q#x"}})
    answer = api.call("GET", f"/v1/alerts?cursor={outside}")
    assert answer.status == 422 and answer.error["field"] == "cursor"
