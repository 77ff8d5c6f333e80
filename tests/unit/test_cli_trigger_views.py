"""cronhook_cli/trigger_views.py: a trigger for people, its one-time secrets and warnings."""

from __future__ import annotations

import json

from tests.unit.cli_fake import (
    DISABLED_TRIGGER,
    TRIGGER,
    WEBHOOK_TRIGGER,
    FakeCronhook,
    invoke,
    only_request,
)
from tests.unit.cli_fixtures import api_fixture  # noqa: F401


def test_list_shows_disabled_reason_next_to_status(api: FakeCronhook) -> None:
    api.answer("GET", "/v1/triggers", 200, {"items": [DISABLED_TRIGGER], "next_cursor": None})

    result = invoke(api.url, "triggers", "list")

    assert result.exit_code == 0
    assert "disabled (failures)" in result.stdout
    assert "Every 2 hours" in result.stdout


def test_create_webhook_prints_the_url_and_the_one_time_secret_with_a_warning(
    api: FakeCronhook,
) -> None:
    api.answer("POST", "/v1/triggers", 201, WEBHOOK_TRIGGER)

    result = invoke(api.url, "triggers", "create", "--workflow", "echo", "--webhook", "github")

    assert result.exit_code == 0, result.output
    assert only_request(api).body == {"workflow": "echo", "event": {"source": "github"}}
    lines = [line.split() for line in result.stdout.splitlines()]
    assert ["webhook", "url", "http://127.0.0.1:8000/hooks/tok_abc"] in lines
    assert ["webhook", "secret", "whsec_only_once"] in lines
    assert "shown only this once" in result.stderr


def test_create_webhook_json_keeps_stdout_parseable_and_warns_on_stderr(
    api: FakeCronhook,
) -> None:
    api.answer("POST", "/v1/triggers", 201, WEBHOOK_TRIGGER)

    result = invoke(
        api.url, "triggers", "create", "--workflow", "echo", "--webhook", "github", "--json"
    )

    assert result.exit_code == 0
    assert json.loads(result.stdout)["webhook"]["secret"] == "whsec_only_once"
    assert "shown only this once" in result.stderr


def test_create_prints_the_servers_warnings_on_stderr(api: FakeCronhook) -> None:
    api.answer("POST", "/v1/triggers", 201, {**TRIGGER, "warnings": ["state does not match"]})

    result = invoke(api.url, "triggers", "create", "--workflow", "echo", "--every", "1h", "--json")

    assert result.exit_code == 0
    assert json.loads(result.stdout)["id"] == "trg_01"
    assert "warning: state does not match" in result.stderr


def test_get_prints_the_trigger_in_detail(api: FakeCronhook) -> None:
    api.answer("GET", "/v1/triggers/trg_02", 200, DISABLED_TRIGGER)

    result = invoke(api.url, "triggers", "get", "trg_02")

    assert result.exit_code == 0, result.output
    assert only_request(api).method == "GET"
    for text in ("trg_02", "Every 2 hours", "disabled (failures)", "failed", "boom"):
        assert text in result.stdout


def test_an_http_targets_outbound_secret_is_printed_with_its_warning(api: FakeCronhook) -> None:
    api.answer(
        "POST",
        "/v1/triggers",
        201,
        {**TRIGGER, "workflow": "http:https://x.example", "outbound_secret": "whsec_out_1"},
    )
    for extra in ([], ["-o", "json"]):
        result = invoke(
            api.url,
            "triggers",
            "create",
            "--workflow",
            "http:https://x.example",
            "--every",
            "1h",
            *extra,
        )
        assert result.exit_code == 0, result.output
        assert "whsec_out_1" in result.stdout
        assert "outbound signing secret" in result.stderr and "only" in result.stderr


def test_page_disable_shows_the_note_who_and_when(api: FakeCronhook) -> None:
    paused = {
        **TRIGGER,
        "status": "disabled",
        "disabled_reason": "manual",
        "disabled_note": "client asked",
        "disabled_by": "key_abcdefghijklmnop",
        "disabled_at": "2030-01-01T09:00:00.000Z",
    }
    api.answer("POST", "/v1/triggers/trg_01/disable", 200, paused)
    result = invoke(api.url, "triggers", "disable", "trg_01", "--note", "client asked")
    assert result.exit_code == 0, result.output
    assert only_request(api).body == {"note": "client asked"}
    assert "client asked" in result.stdout
    assert "key_abcdefghijklmnop 2030-01-01T09:00:00Z" in result.stdout
