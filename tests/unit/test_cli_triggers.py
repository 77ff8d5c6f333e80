"""cronhook_cli/triggers.py: ``cronhook triggers list|get|fire|enable|disable|delete``."""

from __future__ import annotations

import json

import pytest

from tests.unit.cli_fake import TRIGGER, FakeCronhook, invoke, only_request
from tests.unit.cli_fixtures import api_fixture  # noqa: F401


def test_list_sends_filters_and_bearer_key_and_prints_a_table(api: FakeCronhook) -> None:
    api.answer("GET", "/v1/triggers", 200, {"items": [TRIGGER], "next_cursor": None})

    result = invoke(
        api.url, "triggers", "list", "--tag", "client-7", "--workflow", "echo", "--status", "active"
    )

    assert result.exit_code == 0, result.output
    request = only_request(api)
    assert (request.method, request.path) == ("GET", "/v1/triggers")
    assert request.query == {"tag": ["client-7"], "workflow": ["echo"], "status": ["active"]}
    assert request.headers["authorization"] == "Bearer test-key"
    header = result.stdout.splitlines()[0].split()
    assert header[:3] == ["ID", "NAME", "KIND"]
    for text in (
        "trg_01",
        "Weekly report for client 7",
        "cron",
        "At 08:00 on Monday (Europe/Berlin)",
        "active",
        "2030-01-07T07:00:00Z",
        "succeeded",
    ):
        assert text in result.stdout


def test_list_leaves_out_filters_that_were_not_given(api: FakeCronhook) -> None:
    api.answer("GET", "/v1/triggers", 200, {"items": [], "next_cursor": None})

    result = invoke(api.url, "triggers", "list")

    assert result.exit_code == 0
    assert only_request(api).query == {}
    assert "No triggers." in result.stdout


def test_get_json_prints_the_trigger_as_the_api_sent_it(api: FakeCronhook) -> None:
    api.answer("GET", "/v1/triggers/trg_01", 200, TRIGGER)

    result = invoke(api.url, "triggers", "get", "trg_01", "--json")

    assert result.exit_code == 0
    assert json.loads(result.stdout) == TRIGGER


def test_get_of_an_unknown_trigger_exits_1_with_the_404_message(api: FakeCronhook) -> None:
    result = invoke(api.url, "triggers", "get", "trg_missing")

    assert result.exit_code == 1
    assert "404 not_found: trigger not found" in result.stderr
    assert result.stdout == ""


def test_fire_posts_to_fire_and_prints_the_run_id(api: FakeCronhook) -> None:
    api.answer("POST", "/v1/triggers/trg_01/fire", 202, {"run_id": "run_42"})

    result = invoke(api.url, "triggers", "fire", "trg_01")

    assert result.exit_code == 0, result.output
    request = only_request(api)
    assert (request.method, request.path, request.body) == (
        "POST",
        "/v1/triggers/trg_01/fire",
        None,
    )
    assert "Fired trg_01: run run_42" in result.stdout


def test_fire_json_prints_the_run_id_object(api: FakeCronhook) -> None:
    api.answer("POST", "/v1/triggers/trg_01/fire", 202, {"run_id": "run_42"})

    result = invoke(api.url, "triggers", "fire", "trg_01", "--json")

    assert json.loads(result.stdout) == {"run_id": "run_42"}


def test_fire_with_a_payload_sends_it(api: FakeCronhook) -> None:
    api.answer("POST", "/v1/triggers/trg_01/fire", 202, {"run_id": "run_42"})
    result = invoke(api.url, "triggers", "fire", "trg_01", "--payload", '[1, "two"]')
    assert result.exit_code == 0, result.output
    assert only_request(api).body == {"payload": [1, "two"]}


@pytest.mark.parametrize(
    ("action", "answer", "shown"),
    [
        ("enable", TRIGGER, "active"),
        ("disable", {**TRIGGER, "status": "disabled", "disabled_reason": "manual"}, "manual"),
    ],
)
def test_enable_and_disable_post_to_their_action_and_show_the_trigger(
    api: FakeCronhook, action: str, answer: dict, shown: str
) -> None:
    api.answer("POST", f"/v1/triggers/trg_01/{action}", 200, answer)

    result = invoke(api.url, "triggers", action, "trg_01")

    assert result.exit_code == 0, result.output
    assert only_request(api).path == f"/v1/triggers/trg_01/{action}"
    assert shown in result.stdout


def test_delete_sends_delete_and_exits_0_on_204(api: FakeCronhook) -> None:
    api.answer("DELETE", "/v1/triggers/trg_01", 204)

    result = invoke(api.url, "triggers", "delete", "trg_01")

    assert result.exit_code == 0, result.output
    assert only_request(api).method == "DELETE"
    assert "Deleted trg_01" in result.stdout


def test_delete_json_prints_a_parseable_confirmation(api: FakeCronhook) -> None:
    api.answer("DELETE", "/v1/triggers/trg_01", 204)

    result = invoke(api.url, "triggers", "delete", "trg_01", "--json")

    assert json.loads(result.stdout) == {"id": "trg_01", "deleted": True}
