"""Fire with a payload, pause with a note and backfill, as a user does it: the CLI and HTTP
against the local stack (its heartbeat and runner pool do the work)."""

from __future__ import annotations

import secrets

import pytest

pytestmark = pytest.mark.e2e

WINDOW = ("--from", "2026-01-05T00:00:00Z", "--to", "2026-01-05T02:00:00Z")


def test_backfill_pause_and_fire_with_a_payload_through_the_cli(cronhook, stack):  # noqa: F811
    tag = "e2e-" + secrets.token_hex(4)
    created = cronhook(
        "triggers",
        "create",
        "--workflow",
        "echo",
        "--cron",
        "0 * * * *",
        "--tag",
        tag,
        "-o",
        "json",
    )
    assert created.code == 0, created.err
    trigger_id = created.json()["id"]

    dry = cronhook("backfill", trigger_id, *WINDOW, "--dry-run", "-o", "json")
    assert dry.code == 0, dry.err
    assert (dry.json()["slots"], dry.json()["first"]) == (3, "2026-01-05T00:00:00.000Z")
    started = cronhook("backfill", trigger_id, *WINDOW, "-o", "json")
    assert started.code == 0, started.err
    run_ids = started.json()["run_ids"]
    assert len(run_ids) == 3

    def backfilled():
        runs = cronhook("runs", trigger_id, "--surface", "backfill", "-o", "json").json()["items"]
        done = [r for r in runs if r["status"] == "succeeded"]
        return done if len(done) == 3 else None

    done = stack.wait_for(backfilled, timeout_s=90)
    assert sorted(r["id"] for r in done) == sorted(run_ids)
    again = cronhook("backfill", trigger_id, *WINDOW, "-o", "json").json()
    assert again == {"slots": 0, "run_ids": []}

    fired = cronhook("triggers", "fire", trigger_id, "--payload", '{"n": 7}', "-o", "json")
    assert fired.code == 0, fired.err
    run_id = fired.json()["run_id"]

    def finished():
        run = cronhook("runs", "get", run_id, "-o", "json").json()
        return run if run["status"] == "succeeded" else None

    assert stack.wait_for(finished, timeout_s=60)["output"] == {"n": 7}

    paused = cronhook("pause", "--tag", tag, "--note", "quiet week", "-o", "json")
    assert paused.code == 0, paused.err
    assert paused.json()["ids"] == [trigger_id]
    shown = cronhook("triggers", "get", trigger_id)
    assert "quiet week" in shown.out and "paused by" in shown.out
    resumed = cronhook("resume", "--tag", tag, "-o", "json")
    assert resumed.json()["ids"] == [trigger_id]
