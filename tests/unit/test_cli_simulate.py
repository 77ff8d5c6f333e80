"""cronhook_cli/simulate.py: ``cronhook simulate``."""

from __future__ import annotations

import json

from tests.unit.cli_fake import FakeCronhook, invoke, only_request
from tests.unit.cli_fixtures import api_fixture  # noqa: F401

ANSWER = {
    "slots": [
        {"slot": "2026-12-01T13:00:00.000Z", "outcome": "run", "fire_at": None, "reason": None},
        {
            "slot": "2026-12-01T14:00:00.000Z",
            "outcome": "missed",
            "fire_at": None,
            "reason": "passed",
        },
    ],
    "runs": 1,
    "estimated_usd": 3e-06,
    "truncated": False,
}


def test_simulate_posts_the_window_and_outages_and_lists_each_slot(api: FakeCronhook) -> None:
    api.answer("POST", "/v1/schedules/simulate", 200, ANSWER)
    result = invoke(
        api.url,
        "simulate",
        "--trigger-id",
        "trg_1",
        "--from",
        "2026-12-01T12:00:00Z",
        "--to",
        "2026-12-01T15:00:00Z",
        "--outage",
        "2026-12-01T13:30:00Z/2026-12-01T14:30:00Z",
        "--run-s",
        "5",
    )
    assert result.exit_code == 0, result.output
    request = only_request(api)
    assert request.body["trigger_id"] == "trg_1" and request.body["run_s"] == 5
    assert len(request.body["outages"]) == 1
    assert set(request.body["outages"][0]) == {"from", "to"}
    assert "missed" in result.output and "1 run(s)" in result.output


def test_simulate_takes_a_create_body_from_a_file(api: FakeCronhook, tmp_path) -> None:
    api.answer("POST", "/v1/schedules/simulate", 200, ANSWER)
    body = {"workflow": "echo", "schedule": {"cron": "0 * * * *"}}
    path = tmp_path / "trigger.json"
    path.write_text(json.dumps(body))
    result = invoke(
        api.url,
        "simulate",
        "--file",
        str(path),
        "--from",
        "2026-12-01T12:00:00Z",
        "--to",
        "2026-12-01T15:00:00Z",
        "--json",
    )
    assert result.exit_code == 0, result.output
    assert only_request(api).body["trigger"] == body


def test_simulate_needs_a_trigger_or_a_file_and_a_well_formed_outage(api: FakeCronhook) -> None:
    window = ["--from", "2026-12-01T12:00:00Z", "--to", "2026-12-01T15:00:00Z"]
    assert invoke(api.url, "simulate", *window).exit_code == 2
    bad = invoke(api.url, "simulate", "--trigger-id", "t", *window, "--outage", "2026-12-01")
    assert bad.exit_code == 2
