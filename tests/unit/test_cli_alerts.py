"""cronhook_cli/alerts.py: ``cronhook alerts list|create|test|notifications|delete``."""

from __future__ import annotations

import json

from tests.unit.cli_fake import FakeCronhook, invoke, only_request
from tests.unit.cli_fixtures import api_fixture  # noqa: F401

POLICY = {
    "id": "alr_1",
    "name": "ops",
    "match": {"tags": ["client-7"], "workflows": [], "trigger_ids": []},
    "on": ["failed", "recovered"],
    "failures_in_a_row": 3,
    "channels": [
        {"type": "email", "to": ["ops@example.com"]},
        {"type": "slack", "host": "hooks.slack.com", "webhook_url": None},
    ],
}


def test_alerts_create_builds_the_body_from_options_and_shows_the_secret_once(
    api: FakeCronhook,
) -> None:
    api.answer("POST", "/v1/alerts", 201, {**POLICY, "signing_secret": "whsec_abc"})

    result = invoke(
        api.url, "alerts", "create", "--name", "ops", "--on", "failed,recovered",
        "--tag", "client-7", "--email", "ops@example.com", "--webhook", "https://x.example/h",
        "--failures-in-a-row", "3",
    )  # fmt: skip

    assert result.exit_code == 0, result.output
    assert only_request(api).body == {
        "name": "ops",
        "on": ["failed", "recovered"],
        "match": {"tags": ["client-7"], "workflows": [], "trigger_ids": []},
        "channels": [
            {"type": "email", "to": ["ops@example.com"]},
            {"type": "webhook", "url": "https://x.example/h"},
        ],
        "failures_in_a_row": 3,
    }
    assert "whsec_abc" in result.stdout and "shown only this once" in result.stderr


def test_alerts_create_from_a_yaml_file_sends_it_as_it_is(api: FakeCronhook, tmp_path) -> None:
    api.answer("POST", "/v1/alerts", 201, POLICY)
    path = tmp_path / "ops.yaml"
    path.write_text("name: ops\non: [late]\nlate_after_s: 600\n")

    result = invoke(api.url, "alerts", "create", "-f", str(path), "--json")

    assert result.exit_code == 0, result.output
    assert only_request(api).body == {"name": "ops", "on": ["late"], "late_after_s": 600}
    assert json.loads(result.stdout)["id"] == "alr_1"


def test_alerts_create_without_name_or_kinds_is_a_usage_error(api: FakeCronhook) -> None:
    result = invoke(api.url, "alerts", "create", "--email", "ops@example.com")
    assert result.exit_code == 2 and api.requests == []


def test_alerts_list_shows_channels_without_secrets(api: FakeCronhook) -> None:
    api.answer("GET", "/v1/alerts", 200, {"items": [POLICY]})

    result = invoke(api.url, "alerts", "list")

    assert result.exit_code == 0, result.output
    assert "alr_1" in result.stdout and "slack:hooks.slack.com" in result.stdout
    assert "tags=client-7" in result.stdout


def test_alerts_test_and_notifications_hit_their_routes(api: FakeCronhook) -> None:
    api.answer("POST", "/v1/alerts/alr_1/test", 202, {"queued": True, "channels": 2})
    notification = {"id": "ntf_1", "at": "2030-01-01T00:00:00Z", "kind": "failed",
                    "trigger_id": "trg_01", "run_id": None, "channel": "email#0",
                    "outcome": "failed", "error": "answered 500"}  # fmt: skip
    api.answer(
        "GET", "/v1/alerts/alr_1/notifications", 200, {"items": [notification], "next_cursor": None}
    )

    tested = invoke(api.url, "alerts", "test", "alr_1")
    listed = invoke(api.url, "alerts", "notifications", "alr_1")

    assert tested.exit_code == 0 and "2 channel(s)" in tested.stdout
    assert listed.exit_code == 0 and "answered 500" in listed.stdout
    assert [r.path for r in api.requests] == [
        "/v1/alerts/alr_1/test",
        "/v1/alerts/alr_1/notifications",
    ]
