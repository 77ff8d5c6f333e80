"""cronhook_cli/trigger_actions.py: ``pause``, ``resume``, ``backfill``, ``rotate-secret``."""

from __future__ import annotations

import json

import pytest

from tests.unit.cli_fake import TRIGGER, Answer, FakeCronhook, Recorded, invoke, only_request
from tests.unit.cli_fixtures import api_fixture  # noqa: F401


def test_pause_by_tag_with_a_note_uses_the_bulk_route(api: FakeCronhook) -> None:
    api.answer("POST", "/v1/triggers/disable", 200, {"changed": 2, "ids": ["trg_a", "trg_b"]})
    result = invoke(api.url, "pause", "--tag", "client-7", "--note", "until January")
    assert result.exit_code == 0, result.output
    assert only_request(api).body == {"tag": "client-7", "note": "until January"}
    assert "Paused 2 trigger(s)" in result.stdout
    assert "trg_a" in result.stdout and "trg_b" in result.stdout


def test_pause_by_ids_disables_each_with_the_note(api: FakeCronhook) -> None:
    for trigger_id in ("trg_a", "trg_b"):
        api.answer(
            "POST",
            f"/v1/triggers/{trigger_id}/disable",
            200,
            {**TRIGGER, "id": trigger_id, "status": "disabled"},
        )
    result = invoke(api.url, "pause", "trg_a", "trg_b", "--note", "hold", "-o", "json")
    assert result.exit_code == 0, result.output
    assert [(r.path, r.body) for r in api.requests] == [
        ("/v1/triggers/trg_a/disable", {"note": "hold"}),
        ("/v1/triggers/trg_b/disable", {"note": "hold"}),
    ]
    assert json.loads(result.stdout) == {"changed": 2, "ids": ["trg_a", "trg_b"]}


def test_resume_by_workflow_reports_what_it_could_not_resume(api: FakeCronhook) -> None:
    api.answer(
        "POST",
        "/v1/triggers/enable",
        200,
        {"changed": 1, "ids": ["trg_a"], "skipped": [{"id": "trg_b", "reason": "no future fire"}]},
    )
    result = invoke(api.url, "resume", "--workflow", "echo")
    assert result.exit_code == 0, result.output
    assert only_request(api).body == {"workflow": "echo"}
    assert "trg_b not resumed: no future fire" in result.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["pause"], "give trigger ids, or --tag"),
        (["pause", "trg_a", "--tag", "t"], "not both"),
        (["resume", "--note", "x"], "give trigger ids, or --tag"),
    ],
)
def test_pause_and_resume_usage_errors(api: FakeCronhook, args: list[str], says: str) -> None:
    result = invoke(api.url, *args)
    assert result.exit_code == 2
    assert says in result.stderr
    assert api.requests == []


def test_backfill_dry_run_and_run(api: FakeCronhook) -> None:
    plan = {
        "slots": 6,
        "first": "2030-01-01T00:00:00.000Z",
        "last": "2030-01-01T05:00:00.000Z",
        "estimated_usd": 1.5,
        "estimate_from_runs": 2,
        "already_ran": 0,
    }
    started = {"slots": 2, "run_ids": ["trg_01.1893456000000s", "trg_01.1893459600000s"]}

    def answer(request: Recorded) -> Answer:
        return (200, plan) if request.body.get("dry_run") else (202, started)

    api.route("POST", "/v1/triggers/trg_01/backfill", answer)
    dry = invoke(
        api.url,
        "backfill",
        "trg_01",
        "--from",
        "2030-01-01T00:00:00Z",
        "--to",
        "2030-01-01T05:00:00Z",
        "--dry-run",
    )
    assert dry.exit_code == 0, dry.output
    assert api.requests[0].body == {
        "from": "2030-01-01T00:00:00Z",
        "to": "2030-01-01T05:00:00Z",
        "dry_run": True,
    }
    assert "2030-01-01T00:00:00Z" in dry.stdout and "1.5" in dry.stdout
    real = invoke(
        api.url,
        "backfill",
        "trg_01",
        "--from",
        "2030-01-01T00:00:00Z",
        "--to",
        "2030-01-01T01:00:00Z",
    )
    assert real.exit_code == 0, real.output
    assert "dry_run" not in api.requests[1].body
    assert "trg_01.1893459600000s" in real.stdout


def test_rotate_secret_sends_the_grace_and_shows_the_new_secret_once(api: FakeCronhook) -> None:
    api.answer(
        "POST",
        "/v1/triggers/trg_hook/rotate-secret",
        200,
        {"secret": "whsec_new", "previous_valid_until": "2030-01-02T00:00:00.000Z"},
    )

    rotated = invoke(api.url, "rotate-secret", "trg_hook", "--grace", "60")

    assert only_request(api).body == {"grace_s": 60}
    assert only_request(api).method == "POST"
    assert "whsec_new" in rotated.stdout and "shown only this once" in rotated.stderr
    assert "2030-01-02T00:00:00Z" in rotated.stdout


def test_rotate_secret_sends_a_provider_issued_secret(api: FakeCronhook) -> None:
    api.answer("POST", "/v1/triggers/trg_hook/rotate-secret", 200, {"secret": "given-1"})

    rotated = invoke(api.url, "rotate-secret", "trg_hook", "--secret", "given-1", "--json")

    assert rotated.exit_code == 0, rotated.output
    assert only_request(api).body == {"secret": "given-1"}
    assert json.loads(rotated.stdout) == {"secret": "given-1"}
