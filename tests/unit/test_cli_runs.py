"""cronhook_cli/runs.py: ``runs``, ``events``, ``replay``, ``audit``, ``workflows``."""

from __future__ import annotations

import json

from tests.unit.cli_fake import AUDIT, RUN, FakeCronhook, invoke, only_request
from tests.unit.cli_fixtures import api_fixture  # noqa: F401


def test_runs_of_a_trigger_use_its_runs_route_with_the_filters(api: FakeCronhook) -> None:
    api.answer("GET", "/v1/triggers/trg_01/runs", 200, {"items": [RUN], "next_cursor": None})

    result = invoke(api.url, "runs", "trg_01", "--surface", "schedule", "--status", "failed")

    assert result.exit_code == 0, result.output
    request = only_request(api)
    assert request.path == "/v1/triggers/trg_01/runs"
    assert request.query == {"surface": ["schedule"], "status": ["failed"]}
    line = next(line for line in result.stdout.splitlines() if "run_03" in line)
    for text in ("trg_01", "schedule", "failed", "2029-12-31T07:00:00Z", "250"):
        assert text in line
    assert "Traceback line one" in line and "line two" not in result.stdout


def test_runs_filters_again_when_the_server_ignores_the_filters(api: FakeCronhook) -> None:
    other = {**RUN, "id": "run_manual", "surface": "manual"}
    api.answer("GET", "/v1/triggers/trg_01/runs", 200, {"items": [other, RUN], "next_cursor": None})

    result = invoke(api.url, "runs", "trg_01", "--surface", "schedule", "--json")

    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["items"] == [RUN]


def test_runs_without_a_trigger_id_list_all_runs(api: FakeCronhook) -> None:
    api.answer("GET", "/v1/runs", 200, {"items": [RUN], "next_cursor": None})

    result = invoke(api.url, "runs", "--surface", "manual")

    assert result.exit_code == 0, result.output
    request = only_request(api)
    assert (request.path, request.query) == ("/v1/runs", {"surface": ["manual"]})


def test_runs_stop_at_the_limit_and_json_keeps_the_next_cursor(api: FakeCronhook) -> None:
    page = [{**RUN, "id": f"run_{n}"} for n in range(3)]
    api.answer("GET", "/v1/runs", 200, {"items": page, "next_cursor": "more"})

    result = invoke(api.url, "runs", "--limit", "2", "--json")

    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"items": page[:2], "next_cursor": "more"}
    assert len(api.requests) == 1


def test_runs_rejects_an_unknown_status_with_exit_2(api: FakeCronhook) -> None:
    result = invoke(api.url, "runs", "--status", "exploded")

    assert result.exit_code == 2
    assert api.requests == []


def test_runs_get_shows_one_run(api: FakeCronhook) -> None:
    api.answer("GET", "/v1/runs/run_03", 200, RUN)
    result = invoke(api.url, "runs", "get", "run_03")
    assert result.exit_code == 0, result.output
    assert only_request(api).path == "/v1/runs/run_03"
    assert "Traceback line one" in result.stdout and "2029-12-31T07:00:01Z" in result.stdout


def test_audit_sends_its_filters(api: FakeCronhook) -> None:
    api.answer("GET", "/v1/audit", 200, {"items": [AUDIT], "next_cursor": None})
    result = invoke(api.url, "audit", "--trigger", "trg_01", "--action", "disable")
    assert result.exit_code == 0, result.output
    assert only_request(api).query == {"trigger_id": ["trg_01"], "action": ["disable"]}


def test_replay_posts_to_the_events_replay_route_and_prints_the_run(api: FakeCronhook) -> None:
    api.answer("POST", "/v1/events/evt_1/replay", 202, {"run_id": "run_7"})

    replayed = invoke(api.url, "replay", "evt_1")

    assert "Replayed evt_1: run run_7" in replayed.stdout
    assert only_request(api).method == "POST"


def test_workflows_lists_the_registered_workflows(api: FakeCronhook) -> None:
    api.answer(
        "GET",
        "/v1/workflows",
        200,
        {
            "items": [{"name": "echo", "description": "Echoes", "state_schema": None}],
            "next_cursor": None,
        },
    )

    flows = invoke(api.url, "workflows")

    assert "echo" in flows.stdout and "Echoes" in flows.stdout
    assert only_request(api).method == "GET"


def test_runs_in_a_table_say_when_the_limit_left_newer_runs_out(api: FakeCronhook) -> None:
    api.answer("GET", "/v1/runs", 200, {"items": [RUN, RUN], "next_cursor": "more"})

    result = invoke(api.url, "runs", "--limit", "2")

    assert result.exit_code == 0, result.output
    assert "(showing the newest 2; pass --limit for more)" in result.stderr
    assert "pass --limit" not in result.stdout
