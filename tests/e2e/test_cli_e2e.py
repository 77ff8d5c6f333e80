"""The ``cronhook`` command as a user runs it: a subprocess talking HTTP to the local stack.

Exit codes are part of the contract: 0 done, 1 the API refused (or could not be
reached), 2 usage. No command ever prints a traceback.
"""

from __future__ import annotations

import secrets
import socket

import pytest

pytestmark = pytest.mark.e2e

FAR_FUTURE = "2031-01-01T08:00:00+01:00"


def test_create_each_kind_and_list_them_by_tag(cronhook):
    tag = "cli-" + secrets.token_hex(4)
    cron = cronhook(
        "triggers", "create", "--workflow", "echo", "--cron", "0 8 * * 1", "--tz", "Europe/Berlin",
        "--title", "Weekly", "--tag", tag, "--state", '{"count": 0}', "--json",
    )  # fmt: skip
    assert cron.code == 0, cron.err
    every = cronhook(
        "triggers", "create", "--workflow", "echo", "--every", "1h30m", "--tag", tag, "--json"
    )  # fmt: skip
    at = cronhook(
        "triggers", "create", "--workflow", "echo", "--at", FAR_FUTURE, "--tag", tag, "--json"
    )
    hook = cronhook(
        "triggers", "create", "--workflow", "echo", "--webhook", "github", "--tag", tag,
        "--filter", '{"github_event": ["push"]}', "--json",
    )  # fmt: skip
    for ran in (every, at, hook):
        assert ran.code == 0, ran.err
    made = {r.json()["kind"]: r.json() for r in (cron, every, at, hook)}
    assert set(made) == {"cron", "interval", "at", "event"}
    assert made["cron"]["schedule"]["timezone"] == "Europe/Berlin"
    assert made["cron"]["state"] == {"count": 0}
    assert made["interval"]["schedule"]["interval_s"] == 5400
    assert made["at"]["next_fire_at"] == "2031-01-01T07:00:00.000Z"
    assert made["event"]["webhook"]["secret"]
    assert "shown only this once" in hook.err

    listed = cronhook("triggers", "list", "--tag", tag, "--json")
    assert listed.code == 0
    body = listed.json()
    assert {t["id"] for t in body["items"]} == {t["id"] for t in made.values()}
    assert body["next_cursor"] is None
    assert cronhook("triggers", "list", "--tag", "no-such-" + tag, "--json").json()["items"] == []
    table = cronhook("triggers", "list", "--tag", tag)
    assert table.code == 0
    assert made["cron"]["id"] in table.out and "Weekly" in table.out


def test_fire_runs_then_disable_and_runs_show_it(cronhook, stack):
    created = cronhook(
        "triggers", "create", "--workflow", "echo", "--cron", "0 0 1 1 *", "--json"
    ).json()  # fmt: skip
    trigger_id = created["id"]
    fired = cronhook("triggers", "fire", trigger_id, "--json")
    assert fired.code == 0, fired.err
    run_id = fired.json()["run_id"]
    assert run_id.startswith(trigger_id)

    def succeeded():
        runs = cronhook("runs", trigger_id, "--json").json()["items"]
        return runs if runs and runs[0]["status"] == "succeeded" else None

    runs = stack.wait_for(succeeded, timeout_s=60, every_s=0.5)
    assert [r["id"] for r in runs] == [run_id]
    assert runs[0]["surface"] == "manual"
    people = cronhook("runs", trigger_id)
    assert people.code == 0 and run_id in people.out and "succeeded" in people.out
    manual = cronhook("runs", "--surface", "manual", "--status", "succeeded", "--json").json()
    assert run_id in {r["id"] for r in manual["items"]}

    disabled = cronhook("triggers", "disable", trigger_id, "--json")
    assert disabled.code == 0
    assert (disabled.json()["status"], disabled.json()["disabled_reason"]) == ("disabled", "manual")
    shown = cronhook("triggers", "get", trigger_id)
    assert "disabled (manual)" in shown.out
    refused = cronhook("triggers", "fire", trigger_id)
    assert refused.code == 1 and "409" in refused.err
    assert cronhook("triggers", "enable", trigger_id, "--json").json()["status"] == "active"
    deleted = cronhook("triggers", "delete", trigger_id, "--json")
    assert deleted.code == 0 and deleted.json() == {"id": trigger_id, "deleted": True}
    gone = cronhook("triggers", "get", trigger_id)
    assert gone.code == 1 and "404" in gone.err


def test_preview_shows_the_fires_in_utc_and_the_zone(cronhook):
    ran = cronhook(
        "preview", "30 2 * * *", "--tz", "Europe/Berlin", "--from", "2030-03-29T12:00:00Z",
        "--count", "3", "--json",
    )  # fmt: skip
    assert ran.code == 0, ran.err
    fires = ran.json()["fires"]
    # 02:30 does not exist in Berlin on 2030-03-31: dst.skipped "shift" fires at the jump.
    assert [f[:16] for f in fires] == ["2030-03-30T01:30", "2030-03-31T01:00", "2030-04-01T00:30"]
    table = cronhook(
        "preview", "30 2 * * *", "--tz", "Europe/Berlin", "--from", "2030-03-29T12:00:00Z",
        "--count", "3",
    )  # fmt: skip
    assert "2030-03-31T03:00:00+02:00" in table.out
    bad = cronhook("preview", "61 * * * *")
    assert bad.code == 1 and "422" in bad.err and "(field: cron)" in bad.err


def test_keys_create_gives_a_key_with_its_role(cronhook):
    made = cronhook("keys", "create", "--role", "viewer", "--json")
    assert made.code == 0, made.err
    key = made.json()
    assert key["role"] == "viewer" and key["tenant"] == "local" and key["key"]
    assert "shown only this once" in made.err
    assert cronhook("triggers", "list", "--json", key=key["key"]).code == 0
    refused = cronhook("triggers", "create", "--workflow", "echo", "--every", "1h", key=key["key"])
    assert refused.code == 1 and "403" in refused.err
    other = cronhook("keys", "create", "--role", "admin", "--tenant", "acme-cli", "--json").json()
    assert other["tenant"] == "acme-cli"
    not_root = cronhook("keys", "create", "--role", "viewer", "--tenant", "x", key=other["key"])
    assert not_root.code == 1 and "403" in not_root.err


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (("triggers", "get", "trg_doesnotexist"), 1, "404"),
        (("triggers", "create", "--workflow", "echo", "--cron", "61 * * * *"), 1, "schedule.cron"),
        (("triggers", "create", "--workflow", "nope", "--every", "1h"), 1, "workflow"),
        (
            ("triggers", "create", "--workflow", "echo", "--cron", "* * * * *", "--every", "1h"),
            2,
            "exactly one",
        ),
        (("triggers", "create", "--cron", "* * * * *"), 2, "--workflow"),
        (("triggers", "create", "--workflow", "echo", "--at", "2031-01-01T08:00:00"), 2, "offset"),
        (("triggers", "create", "--workflow", "echo", "--every", "soon"), 2, "duration"),
        (("triggers", "frobnicate"), 2, "No such command"),
        (("runs", "--status", "exploded"), 2, "exploded"),
    ],
)
def test_exit_codes_are_0_ok_1_refused_2_usage(cronhook, args, code, says):
    ran = cronhook(*args)
    assert ran.code == code, (ran.out, ran.err)
    assert says in ran.err


def test_a_bad_key_and_a_down_server_are_exit_1_with_a_message(cronhook):
    bad = cronhook("triggers", "list", key="chk_key_nope_" + secrets.token_urlsafe(8))
    assert bad.code == 1 and "401" in bad.err and "CRONHOOK_API_KEY" in bad.err
    down = cronhook("triggers", "list", url=f"http://127.0.0.1:{_closed_port()}")
    assert down.code == 1 and "cannot reach cronhook" in down.err


def test_every_json_output_parses(cronhook):
    created = cronhook("triggers", "create", "--workflow", "echo", "--every", "2h", "--json")
    trigger_id = created.json()["id"]
    for args in (
        ("triggers", "get", trigger_id, "--json"),
        ("triggers", "list", "--json"),
        ("runs", "--json"),
        ("runs", trigger_id, "--json"),
        ("preview", "0 9 * * 1-5", "--from", "2030-01-01T00:00:00Z", "--count", "2", "--json"),
        ("triggers", "disable", trigger_id, "--json"),
        ("triggers", "enable", trigger_id, "--json"),
        ("triggers", "delete", trigger_id, "--json"),
    ):
        ran = cronhook(*args)
        assert ran.code == 0, (args, ran.err)
        assert isinstance(ran.json(), dict), args
