"""Alerts in the local stack, over HTTP: a failing trigger's email lands in the outbox
once per streak, and the console's Alerts page sends a test and shows its outcome."""

from __future__ import annotations

import os
import re
import shutil
import uuid
from pathlib import Path

import pytest

from tests.e2e.conftest import Stack

pytestmark = pytest.mark.e2e

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _notifications(stack: Stack, alert_id: str) -> list[dict]:
    answer = stack.call("GET", f"/v1/alerts/{alert_id}/notifications")
    assert answer.status_code == 200, answer.text
    return answer.json()["items"]


def _mail_about(stack: Stack, text: str) -> list[Path]:
    folder = stack.data_dir / "outbox"
    found = sorted(folder.glob("*.eml")) if folder.exists() else []
    return [p for p in found if text in p.read_text(errors="replace")]


def test_a_failing_trigger_emails_once_per_streak_through_the_local_outbox(stack):
    tag = _unique("alerts")
    policy = stack.call(
        "POST",
        "/v1/alerts",
        {"name": tag, "on": ["failed", "disabled"], "failures_in_a_row": 2,
         "match": {"tags": [tag]}, "quiet_s": 0,
         "channels": [{"type": "email", "to": ["ops@example.com"]}]},
    )  # fmt: skip
    assert policy.status_code == 201, policy.text
    alert_id = policy.json()["id"]
    trigger = stack.call(
        "POST",
        "/v1/triggers",
        {"workflow": "fail", "schedule": {"interval_s": 2}, "tags": [tag],
         "limits": {"max_failures": 4}},
    )  # fmt: skip
    assert trigger.status_code == 201, trigger.text
    trigger_id = trigger.json()["id"]

    def settled() -> list[dict] | None:
        items = _notifications(stack, alert_id)
        kinds = sorted(i["kind"] for i in items if i["outcome"] == "sent")
        return items if kinds == ["disabled", "failed"] else None

    # Four failures in a row disable it: one "failed" (the second), one "disabled".
    items = stack.wait_for(settled, timeout_s=180, every_s=1)
    assert {i["trigger_id"] for i in items} == {trigger_id}
    mails = _mail_about(stack, trigger_id)
    assert len(mails) in (1, 2)  # one message a minute: both in one, or one each
    text = "".join(p.read_text(errors="replace") for p in mails)
    assert "failed" in text and "was disabled" in text and "failures" in text


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed")
def test_the_alerts_page_lists_a_policy_sends_a_test_and_shows_its_outcome(stack):
    playwright_api = pytest.importorskip("playwright.sync_api")
    expect = playwright_api.expect
    name = _unique("console-alerts")
    created = stack.call(
        "POST",
        "/v1/alerts",
        {"name": name, "on": ["failed"], "channels": [{"type": "email", "to": ["a@example.com"]}]},
    )
    assert created.status_code == 201, created.text
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox"])
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(stack.url + "/#/alerts")
        page.get_by_label("API key").fill(stack.api_key)
        page.get_by_role("button", name="Sign in").click()
        row = page.get_by_role("row").filter(has=page.get_by_role("rowheader", name=name))
        expect(row).to_be_visible(timeout=30_000)
        row.get_by_role("button", name="Send a test").click()
        expect(page.get_by_text(re.compile(r"Test sent on 1 channel"))).to_be_visible()
        table = page.get_by_role("table", name=f"Notifications of {name}")
        for _ in range(30):  # the worker sends within a second or two; reload to see it
            page.reload()
            if table.get_by_text("sent").count():
                break
            page.wait_for_timeout(1000)
        expect(table.get_by_role("row").filter(has_text="test")).to_contain_text("sent")
        browser.close()
    assert not errors, errors
    assert os.path.isdir(stack.data_dir / "outbox")
