"""The CLI at 80 columns: ids, URLs and instants never broken, values to copy whole."""

from __future__ import annotations

import re

from tests.unit.cli_fake import RUN, TRIGGER, WEBHOOK_TRIGGER, FakeCronhook, invoke_at
from tests.unit.cli_fixtures import api_fixture  # noqa: F401

LONG_URL = (
    "https://cronhook.example.com/hooks/"
    "trg_0123456789abcdefghij.tok_0123456789abcdefghijklmnopqrstuvwxyz0123456789"
)
SECRET = "whsec_" + "A1b2C3d4" * 8


def test_a_webhook_url_and_secret_longer_than_the_terminal_each_stand_whole_on_a_line(
    api: FakeCronhook,
) -> None:
    created = {
        **WEBHOOK_TRIGGER,
        "webhook_url": LONG_URL,
        "webhook": {"url": LONG_URL, "secret": SECRET},
    }
    api.answer("POST", "/v1/triggers", 201, created)

    result = invoke_at(
        api.url, 80, "triggers", "create", "--workflow", "echo", "--webhook", "github"
    )

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert LONG_URL in lines, result.stdout  # a line that is the URL, nothing else
    assert SECRET in lines, result.stdout


def test_a_long_cadence_wraps_between_words_and_keeps_the_zone_whole(api: FakeCronhook) -> None:
    trigger = {
        **TRIGGER,
        "cadence": "At 08:00 on Monday, Wednesday and Friday (America/Argentina/Buenos_Aires)",
    }
    api.answer("GET", "/v1/triggers/trg_01", 200, trigger)

    result = invoke_at(api.url, 80, "triggers", "get", "trg_01")

    assert result.exit_code == 0, result.output
    assert "(America/Argentina/Buenos_Aires)" in result.stdout


def test_runs_at_80_columns_never_break_an_id_an_instant_or_a_word(api: FakeCronhook) -> None:
    run = {
        **RUN,
        "id": "trg_0123456789abcdef.1893999600000s",
        "error": "RuntimeError: the upstream API answered 503 Service Unavailable",
    }
    api.answer("GET", "/v1/runs", 200, {"items": [run], "next_cursor": None})

    result = invoke_at(api.url, 80, "runs")

    assert result.exit_code == 0, result.output
    assert "trg_0123456789abcdef.1893999600000s" in result.stdout
    assert "2029-12-31T07:00:00Z" in result.stdout


def test_runs_get_prints_the_traceback_line_by_line(api: FakeCronhook) -> None:
    trace = (
        "Traceback (most recent call last):\n"
        '  File "/srv/workflows/report.py", line 12, in weekly_report_for_client_seven_with_a_long_name\n'
        "    raise RuntimeError('upstream said no')\n"
        "RuntimeError: upstream said no\n"
    )
    run = {
        **RUN,
        "duration_ms": 750,
        "payload": {"client": 7},
        "error_detail": {"type": "RuntimeError", "message": "upstream said no", "traceback": trace},
    }
    api.answer("GET", "/v1/runs/run_03", 200, run)

    result = invoke_at(api.url, 80, "runs", "get", "run_03")

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    for line in trace.rstrip("\n").splitlines():
        assert line in lines, (line, result.stdout)
    assert re.search(r"duration ms\s+750", result.stdout)
    assert '{"client": 7}' in result.stdout


def test_runs_rerun_posts_to_the_rerun_route_and_prints_the_new_run_id(api: FakeCronhook) -> None:
    new_id = "trg_01.1893999700000m0123456789abcdef0123456789abcdef0123456789abcdef"
    api.answer("POST", "/v1/runs/run_03/rerun", 202, {"run_id": new_id, "queued": True})

    result = invoke_at(api.url, 80, "runs", "rerun", "run_03")

    assert result.exit_code == 0, result.output
    assert api.requests[0].path == "/v1/runs/run_03/rerun"
    assert new_id in result.stdout.split()
    assert "waits its turn" in result.stdout


def test_runs_rerun_without_an_id_is_a_usage_error(api: FakeCronhook) -> None:
    result = invoke_at(api.url, 80, "runs", "rerun")

    assert result.exit_code == 2
    assert not api.requests


def test_the_trigger_list_at_80_columns_breaks_no_zone_and_no_instant(api: FakeCronhook) -> None:
    berlin = {**TRIGGER, "cadence": "At 08:00 on Monday (Europe/Berlin)"}
    long = {
        **TRIGGER,
        "id": "trg_abcdefghijklmnop",
        "title": "Weekly report for client 7 with a long title that has to wrap somewhere",
        "display_name": "Weekly report for client 7 with a long title that has to wrap somewhere",
        "cadence": "At 08:00 on Monday, Wednesday and Friday (America/Argentina/Buenos_Aires)",
        "next_fire_at": "2030-01-07T07:00:00.123Z",
    }
    api.answer("GET", "/v1/triggers", 200, {"items": [berlin, long], "next_cursor": None})

    result = invoke_at(api.url, 80, "triggers", "list")

    assert result.exit_code == 0, result.output
    for whole in (
        "(Europe/Berlin)",
        "(America/Argentina/Buenos_Aires)",
        "2030-01-07T07:00:00.123Z",
        "trg_abcdefghijklmnop",
    ):
        assert whole in result.stdout, (whole, result.stdout)
    words = set(result.stdout.split())
    assert {"Weekly", "report", "somewhere", "Wednesday"} <= words
