"""cronhook_cli/context.py: the global options anywhere on the line, and id checks."""

from __future__ import annotations

import json

from click.testing import CliRunner

from cronhook_cli import cli
from tests.unit.cli_fake import API_KEY, TRIGGER, FakeCronhook, invoke, only_request
from tests.unit.cli_fixtures import api_fixture, closed_port_url_fixture  # noqa: F401


def test_url_and_api_key_options_override_the_environment(
    api: FakeCronhook, closed_port_url: str
) -> None:
    api.answer("GET", "/v1/triggers", 200, {"items": [], "next_cursor": None})

    result = invoke(
        closed_port_url,
        "--url",
        api.url + "/",
        "--api-key",
        API_KEY,
        "triggers",
        "list",
        api_key="env-key",
    )

    assert result.exit_code == 0, result.output
    request = only_request(api)
    assert (request.path, request.headers["authorization"]) == ("/v1/triggers", "Bearer test-key")


def test_global_options_are_accepted_after_the_subcommand(
    api: FakeCronhook, closed_port_url: str
) -> None:
    api.answer("GET", "/v1/triggers/trg_01", 200, TRIGGER)
    env = {"CRONHOOK_URL": closed_port_url, "CRONHOOK_API_KEY": "wrong", "COLUMNS": "200"}
    args = ["triggers", "get", "trg_01", "--url", api.url, "--api-key", API_KEY, "-o", "json"]
    result = CliRunner().invoke(cli, args, env=env)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == TRIGGER
    assert only_request(api).headers["authorization"] == f"Bearer {API_KEY}"


def test_an_id_with_a_slash_is_a_usage_error(api: FakeCronhook) -> None:
    result = invoke(api.url, "triggers", "delete", "trg_01/../keys")

    assert result.exit_code == 2
    assert api.requests == []
