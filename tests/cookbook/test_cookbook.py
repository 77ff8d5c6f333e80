"""Each cookbook example, run as its README runs it: through the local stack over HTTP."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import subprocess
import sys
from pathlib import Path

import boto3
import pytest
import requests

from tests.cookbook.conftest import create, fire, load_example, settled

pytestmark = pytest.mark.e2e

FEED = """<?xml version="1.0"?><rss version="2.0"><channel><title>Blog</title>
<item><guid>post-3</guid><title>Third</title><link>https://blog.example/3</link></item>
<item><guid>post-2</guid><title>Second</title><link>https://blog.example/2</link></item>
<item><guid>post-1</guid><title>First</title><link>https://blog.example/1</link></item>
</channel></rss>"""


def _cli(stack, *args: str) -> subprocess.CompletedProcess:
    script = Path(sys.executable).parent / "cronhook"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "cronhook_cli"]
    env = {**os.environ, "CRONHOOK_URL": stack.url, "CRONHOOK_API_KEY": stack.api_key}
    return subprocess.run(
        [*command, *args], capture_output=True, text=True, env=env, timeout=60, check=False
    )


def _put_secret(aws_port: int, name: str, value: str) -> None:
    client = boto3.client(
        "secretsmanager",
        endpoint_url=f"http://127.0.0.1:{aws_port}",
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    client.create_secret(Name=name, SecretString=value)


# -- 1. weekly report for 18 clients ------------------------------------------------------


def test_weekly_reports_one_trigger_per_client_found_by_tag_with_its_own_secret(
    cookbook_stack, receiver_factory, aws_port
):
    weekly = load_example("weekly_report")
    rx = receiver_factory()
    made = [
        create(cookbook_stack, weekly.trigger_body(n, rx.url + "/reports")) for n in range(1, 19)
    ]
    assert len({t["id"] for t in made}) == 18
    assert made[6]["cadence"].startswith("At 07:00") and made[6]["next_fire_at"]

    listed = _cli(cookbook_stack, "triggers", "list", "--tag", "client-7", "--json")
    assert listed.returncode == 0, listed.stderr
    items = json.loads(listed.stdout)
    items = items["items"] if isinstance(items, dict) else items
    assert [t["id"] for t in items] == [made[6]["id"]]

    _put_secret(aws_port, "cronhook/local/local/client-7/REPORT_TOKEN", "token-for-client-7")
    _put_secret(aws_port, "cronhook/local/local/REPORT_TOKEN", "the-shared-token")
    seven = settled(cookbook_stack, fire(cookbook_stack, made[6]["id"]))
    eight = settled(cookbook_stack, fire(cookbook_stack, made[7]["id"]))
    assert seven["status"] == "succeeded", seven
    assert eight["status"] == "succeeded", eight
    by_client = {p["body"]["client"]: p for p in rx.posts}
    # The scope's own secret first; a client without one falls back to the tenant's.
    assert by_client["client-7"]["auth"] == "Bearer token-for-client-7"
    assert by_client["client-8"]["auth"] == "Bearer the-shared-token"
    assert (
        by_client["client-7"]["key"] == f"weekly-report/{by_client['client-7']['body']['fire_id']}"
    )
    assert "token-for-client-7" not in json.dumps(seven)
    state = cookbook_stack.call("GET", f"/v1/triggers/{made[6]['id']}").json()["state"]
    assert state["reports_sent"] == 1


def test_two_reports_for_one_client_never_overlap(cookbook_stack, receiver_factory, aws_port):
    weekly = load_example("weekly_report")
    rx = receiver_factory(hold_s=1.5)
    # A second trigger for the same client (a month-end report) shares the serialize_key.
    monday = create(cookbook_stack, weekly.trigger_body(42, rx.url + "/reports"))
    month_end_body = weekly.trigger_body(42, rx.url + "/reports")
    month_end_body["title"] = "Month-end report for client 42"
    month_end_body["schedule"] = {"cron": "0 7 28 * *", "timezone": "Europe/Berlin"}
    month_end = create(cookbook_stack, month_end_body)
    _put_secret(aws_port, "cronhook/local/local/client-42/REPORT_TOKEN", "t42")
    runs = [fire(cookbook_stack, monday["id"]), fire(cookbook_stack, month_end["id"])]
    done = [settled(cookbook_stack, run_id) for run_id in runs]
    assert [r["status"] for r in done] == ["succeeded", "succeeded"], done
    assert len(rx.posts) == 2
    assert rx.max_in_flight["client-42"] == 1


# -- 2. RSS repurposer with a per-item cursor ---------------------------------------------


def test_rss_failure_mid_feed_keeps_the_items_already_posted(cookbook_stack, receiver_factory):
    rx = receiver_factory(feed=FEED, fail_once={"Second"})
    trigger = create(
        cookbook_stack,
        {
            "workflow": "rss-repurposer",
            "title": "Blog to social",
            "schedule": {"cron": "*/15 * * * *"},
            "state": {
                "feed_url": rx.url + "/feed.xml",
                "post_url": rx.url + "/post",
                "cursor": None,
            },
        },
    )
    first = settled(cookbook_stack, fire(cookbook_stack, trigger["id"]))
    assert first["status"] == "failed"
    assert "post-2" in first["error"] and "1 posted before it" in first["error"]
    state = cookbook_stack.call("GET", f"/v1/triggers/{trigger['id']}").json()["state"]
    assert state["cursor"] == "post-1"  # the partial progress is kept

    second = settled(cookbook_stack, fire(cookbook_stack, trigger["id"]))
    assert second["status"] == "succeeded", second
    assert second["output"] == {"posted": ["post-2", "post-3"]}
    titles = [p["body"]["title"] for p in rx.posts]
    assert titles == ["First", "Second", "Third"]  # each item posted once, in order
    keys = [p["key"] for p in rx.posts]
    assert all(
        k.startswith("rss/") and k.endswith(g)
        for k, g in zip(keys, ["post-1", "post-2", "post-3"], strict=True)
    )
    assert keys[0].split("/")[1] != keys[1].split("/")[1]  # a new fire, a new fire id


# -- 3. client approval, split into two workflows -------------------------------------------


def test_client_approval_runs_the_decision_and_the_trigger_deletes_itself(
    cookbook_stack, receiver_factory
):
    client = receiver_factory()
    request = create(
        cookbook_stack,
        {
            "workflow": "approval-request",
            "title": "Ask client 7 to approve the launch post",
            "schedule": {"at": "2031-01-01T09:00:00Z"},
            "payload": {
                "draft": {"text": "We launch Monday."},
                "client_url": client.url + "/inbox",
            },
        },
    )
    asked = settled(cookbook_stack, fire(cookbook_stack, request["id"]))
    assert asked["status"] == "succeeded", asked
    assert "answer_secret" not in json.dumps(asked)  # the secret went to the client only
    (draft,) = [p["body"] for p in client.posts]
    decision_id = asked["output"]["decision_trigger_id"]

    answer = json.dumps(
        {"draft_id": draft["draft_id"], "approved": True, "comment": "Ship it"}
    ).encode()
    signature = hmac.new(draft["answer_secret"].encode(), answer, hashlib.sha256).hexdigest()
    headers = {"Content-Type": "application/json", "X-Signature-256": f"sha256={signature}"}
    accepted = requests.post(draft["answer_url"], data=answer, headers=headers, timeout=30)
    assert accepted.status_code == 202, accepted.text
    decided = settled(cookbook_stack, accepted.json()["run_id"])
    assert decided["status"] == "succeeded", decided
    assert decided["output"]["decision"] == "approved"

    def gone() -> bool:
        return cookbook_stack.call("GET", f"/v1/triggers/{decision_id}").status_code == 404

    cookbook_stack.wait_for(gone, timeout_s=30)
    again = requests.post(draft["answer_url"], data=answer, headers=headers, timeout=30)
    assert again.status_code == 401  # the URL is dead: a second answer does nothing


# -- 4. the repository's own freshness check ------------------------------------------------


def test_freshness_trigger_checks_every_example_through_the_stack(cookbook_stack):
    freshness = load_example("freshness")
    trigger = create(cookbook_stack, freshness.trigger_body())
    assert trigger["cadence"].startswith("At 06:00") and trigger["next_fire_at"]
    run = settled(cookbook_stack, fire(cookbook_stack, trigger["id"]))
    assert run["status"] == "succeeded", run
    assert run["output"] == {name: "ok" for name in freshness.CHECKS}


def test_freshness_names_the_example_that_broke(monkeypatch):
    for name in ("weekly_report", "rss_repurposer", "client_approval"):
        load_example(name)
    freshness = load_example("freshness")
    assert set(freshness.run_checks().values()) == {"ok"}

    def broken() -> None:
        raise AssertionError("the feed came back empty")

    monkeypatch.setitem(freshness.CHECKS, "rss-repurposer", broken)
    outcomes = freshness.run_checks()
    assert outcomes["rss-repurposer"] == "AssertionError: the feed came back empty"
    assert outcomes["weekly-report"] == "ok"
    with pytest.raises(freshness.WorkflowFailed, match="rss-repurposer") as failed:
        freshness.cookbook_freshness(freshness._fire("trg_fresh"))
    assert failed.value.state == {
        "last_checked": "trg_fresh:selfcheck",
        "broken": ["rss-repurposer"],
    }
