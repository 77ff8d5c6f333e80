"""cronhook_cli/client.py: what goes over the wire, pages, and every failure as exit 1."""

from __future__ import annotations

from typing import Any

import pytest
import requests
from click.testing import CliRunner

from cronhook_cli import cli
from tests.unit.cli_fake import (
    DISABLED_TRIGGER,
    TRIGGER,
    Answer,
    FakeCronhook,
    Recorded,
    assert_no_traceback,
    invoke,
    only_request,
    two_pages,
)
from tests.unit.cli_fixtures import api_fixture, closed_port_url_fixture  # noqa: F401


def test_list_follows_next_cursor_until_the_last_page(api: FakeCronhook) -> None:
    api.route("GET", "/v1/triggers", two_pages(TRIGGER, DISABLED_TRIGGER))

    result = invoke(api.url, "triggers", "list", "--tag", "client-7")

    assert result.exit_code == 0, result.output
    assert [r.query for r in api.requests] == [
        {"tag": ["client-7"]},
        {"tag": ["client-7"], "cursor": ["page-2"]},
    ]
    assert "trg_01" in result.stdout and "trg_02" in result.stdout


def test_list_stops_with_exit_1_when_the_server_repeats_a_cursor(api: FakeCronhook) -> None:
    api.answer("GET", "/v1/triggers", 200, {"items": [TRIGGER], "next_cursor": "again"})

    result = invoke(api.url, "triggers", "list")

    assert result.exit_code == 1
    assert "repeated page cursor 'again'" in result.stderr
    assert len(api.requests) == 2


def test_a_down_server_exits_1_with_a_friendly_message(closed_port_url: str) -> None:
    result = invoke(closed_port_url, "triggers", "list")

    assert result.exit_code == 1
    assert f"cannot reach cronhook at {closed_port_url}: Connection refused" in result.stderr
    assert "make run" in result.stderr
    assert result.stdout == ""
    assert_no_traceback(result)


def test_a_wrong_api_key_exits_1_with_the_401_message(api: FakeCronhook) -> None:
    result = invoke(api.url, "triggers", "list", api_key="wrong")

    assert result.exit_code == 1
    assert only_request(api).headers["authorization"] == "Bearer wrong"
    assert "401 unauthorized: missing or bad API key" in result.stderr
    assert "check CRONHOOK_API_KEY" in result.stderr
    assert_no_traceback(result)


def test_a_missing_api_key_sends_no_authorization_and_says_how_to_set_one(
    api: FakeCronhook,
) -> None:
    result = invoke(api.url, "triggers", "list", api_key=None)

    assert result.exit_code == 1
    assert "authorization" not in only_request(api).headers
    assert "no API key given: set CRONHOOK_API_KEY" in result.stderr


def test_a_422_exits_1_printing_the_message_and_the_field(api: FakeCronhook) -> None:
    error = {"code": "invalid", "message": "interval below 60 s", "field": "schedule.interval_s"}
    api.answer("POST", "/v1/triggers", 422, {"error": error})

    result = invoke(api.url, "triggers", "create", "--workflow", "echo", "--every", "30s")

    assert result.exit_code == 1
    assert "422 invalid: interval below 60 s (field: schedule.interval_s)" in result.stderr
    assert result.stdout == ""
    assert_no_traceback(result)


def test_an_error_answer_that_is_not_json_exits_1_with_the_status(api: FakeCronhook) -> None:
    api.answer("GET", "/v1/triggers", 502, "<html>Bad Gateway</html>")

    result = invoke(api.url, "triggers", "list")

    assert result.exit_code == 1
    assert "502 Bad Gateway: <html>Bad Gateway</html>" in result.stderr
    assert_no_traceback(result)


def test_a_success_answer_that_is_not_json_exits_1(api: FakeCronhook) -> None:
    api.answer("GET", "/v1/triggers/trg_01", 200, "<html>a login page</html>")

    result = invoke(api.url, "triggers", "get", "trg_01")

    assert result.exit_code == 1
    assert "is not JSON (is this a cronhook URL?)" in result.stderr


def test_a_server_slower_than_the_timeout_exits_1(api: FakeCronhook) -> None:
    def stall(request: Recorded) -> Answer:
        api.release.wait(timeout=10)
        return 200, {"items": [], "next_cursor": None}

    api.route("GET", "/v1/triggers", stall)

    result = invoke(api.url, "--timeout", "0.2", "triggers", "list")

    assert result.exit_code == 1
    assert "did not answer within 0.2 s" in result.stderr
    assert_no_traceback(result)


def test_the_default_url_is_the_local_stack(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []

    def record(self: Any, method: str, url: str, **kwargs: Any) -> Any:
        seen.append(url)
        raise requests.ConnectionError("[Errno 111] Connection refused")

    monkeypatch.setattr(requests.Session, "request", record)

    result = CliRunner().invoke(
        cli, ["triggers", "list"], env={"CRONHOOK_URL": None, "CRONHOOK_API_KEY": None}
    )

    assert seen == ["http://127.0.0.1:8000/v1/triggers"]
    assert result.exit_code == 1
