"""cronhook_cli/output.py: json, yaml, and tables that fit 80 columns."""

from __future__ import annotations

import json

import pytest

from tests.unit.cli_fake import (
    AUDIT,
    DISABLED_TRIGGER,
    EVENT,
    KEY,
    LONG_RUN,
    LONG_TRIGGER,
    TRIGGER,
    WEBHOOK_TRIGGER,
    FakeCronhook,
    invoke,
    invoke_at,
    two_pages,
)
from tests.unit.cli_fixtures import api_fixture  # noqa: F401


def test_list_json_prints_only_parseable_json_with_every_page(api: FakeCronhook) -> None:
    api.route("GET", "/v1/triggers", two_pages(TRIGGER, DISABLED_TRIGGER))

    result = invoke(api.url, "triggers", "list", "--json")

    assert result.exit_code == 0
    assert json.loads(result.stdout) == {
        "items": [TRIGGER, DISABLED_TRIGGER],
        "next_cursor": None,
    }


def test_list_prints_titles_with_brackets_literally_not_as_markup(api: FakeCronhook) -> None:
    tricky = {**TRIGGER, "display_name": "[bold]report[/bold] [x]"}
    api.answer("GET", "/v1/triggers", 200, {"items": [tricky], "next_cursor": None})

    result = invoke(api.url, "triggers", "list")

    assert result.exit_code == 0
    assert "[bold]report[/bold] [x]" in result.stdout


@pytest.mark.parametrize("where", ["before", "after"])
def test_output_yaml_prints_the_answer_as_yaml(api: FakeCronhook, where: str) -> None:
    import yaml

    api.answer("GET", "/v1/triggers/trg_01", 200, TRIGGER)
    args = ["triggers", "get", "trg_01"]
    args = ["-o", "yaml", *args] if where == "before" else [*args, "--output", "yaml"]
    result = invoke(api.url, *args)
    assert result.exit_code == 0, result.output
    assert yaml.safe_load(result.stdout) == TRIGGER


def test_output_rejects_an_unknown_format(api: FakeCronhook) -> None:
    result = invoke(api.url, "triggers", "list", "-o", "xml")
    assert result.exit_code == 2
    assert api.requests == []


@pytest.mark.parametrize(
    ("args", "path", "answer", "whole"),
    [
        (
            ["triggers", "list"],
            "/v1/triggers",
            {"items": [LONG_TRIGGER, TRIGGER], "next_cursor": None},
            ["trg_abcdefghijklmnop", "2030-01-07T07:00:00.123Z", "(failures)"],
        ),
        (
            ["runs"],
            "/v1/runs",
            {"items": [LONG_RUN], "next_cursor": None},
            ["trg_abcdefghijklmnop.1893999600000s", "budget_exceeded", "2030-01-07T07:00:00Z"],
        ),
        (
            ["events", "trg_abcdefghijklmnop"],
            "/v1/triggers/trg_abcdefghijklmnop/events",
            {"items": [EVENT], "next_cursor": None},
            ["evt_abcdefghijklmnopqrstuvwx", "2030-01-07T07:00:00.250Z"],
        ),
        (
            ["audit"],
            "/v1/audit",
            {"items": [AUDIT], "next_cursor": None},
            ["2030-01-07T07:00:00.250Z", "key_abcdefghijklmnop", "trg_abcdefghijklmnop"],
        ),
        (
            ["keys", "list"],
            "/v1/keys",
            {"items": [KEY], "next_cursor": None},
            ["key_abcdefghijklmnop", "2030-01-07T07:00:00.250Z"],
        ),
    ],
)
def test_lists_fit_80_columns_and_never_cut_ids_or_instants(
    api: FakeCronhook, args: list[str], path: str, answer: dict, whole: list[str]
) -> None:
    api.answer("GET", path, 200, answer)
    result = invoke_at(api.url, 80, *args)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    # Wider than 80 only where one unbreakable word needs it: LONG_TRIGGER's cadence ends
    # in "(America/Argentina/Buenos_Aires)", kept whole (issue 30: never fold a word).
    widest = 103 if args == ["triggers", "list"] else 80
    assert max(len(line) for line in lines) <= widest, result.stdout
    assert "…" not in result.stdout
    for text in whole:
        assert any(text in line for line in lines), (text, result.stdout)


def test_a_long_webhook_url_is_printed_whole_at_80_columns(api: FakeCronhook) -> None:
    url = "https://cronhook.example.com/hooks/trg_abcdefghijklmnop." + "x" * 32
    api.answer(
        "POST",
        "/v1/triggers",
        201,
        {**WEBHOOK_TRIGGER, "webhook_url": url, "webhook": {"url": url, "secret": "whsec_1"}},
    )
    result = invoke_at(
        api.url, 80, "triggers", "create", "--workflow", "echo", "--webhook", "github"
    )
    assert result.exit_code == 0, result.output
    assert "…" not in result.stdout
    # Folded at the edge, never cut: the pieces join back into the URL.
    joined = "".join(
        line.strip().split()[-1]
        for line in result.stdout.splitlines()
        if "x" * 8 in line or "https" in line
    )
    assert url in joined
