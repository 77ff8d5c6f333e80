"""The console and triggers as code: an edit of a managed trigger is kept, answered with a
warning, and shown as drift on its page (and in ``cronhook diff``: tests/functional).

Headless Chromium against the local stack, as tests/e2e/test_console.py (whose browser
fixtures these tests share).
"""

from __future__ import annotations

import uuid

from tests.e2e.test_console import browser, expect, page, sign_in  # noqa: F401 (fixtures)


def test_editing_a_managed_trigger_warns_and_shows_the_drift(page, stack):  # noqa: F811
    key = f"console-{uuid.uuid4().hex[:8]}"
    title = f"Managed {key}"
    body = {
        "workflow": "echo",
        "title": title,
        "schedule": {"cron": "0 8 * * 1", "timezone": "Europe/Berlin"},
        "managed_by": "apply",
    }
    made = stack.call("PUT", f"/v1/triggers/by-key/{key}", body)
    assert made.status_code == 201, made.text
    trigger_id = made.json()["id"]
    sign_in(page, stack, hash_=f"#/triggers/{trigger_id}")
    expect(page.get_by_role("heading", name=title, level=1)).to_be_visible()
    expect(page.get_by_text("managed by apply")).to_be_visible()
    page.get_by_role("button", name="Edit").click()
    dialog = page.get_by_role("dialog", name=f"Edit {title}")
    dialog.get_by_label("Title").fill(f"{title} (by hand)")
    dialog.get_by_role("button", name="Save").click()
    expect(dialog).to_be_hidden()
    expect(page.get_by_role("status")).to_contain_text("managed by apply")
    expect(page.get_by_role("heading", name=f"{title} (by hand)", level=1)).to_be_visible()
    drift = page.get_by_role("definition").filter(has_text="edited outside apply")
    expect(drift).to_contain_text("title")
    after = stack.call("GET", f"/v1/triggers/by-key/{key}").json()
    assert after["drift"]["fields"] == ["title"]
