"""The web console in headless Chromium against the local stack, found by role and label.

Debian's ``chromium`` is driven by playwright through ``executable_path`` (no browser
download; ``.ci/run`` installs it). Each test signs in in a fresh browser context, works
on triggers it made (unique titles and tags: the stack is shared by the e2e session) and
waits with playwright's bounded auto-waiting, never a sleep. ``CRONHOOK_SCREENSHOTS=1``
also writes the README's screenshots to ``docs/img/``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.e2e.conftest import ROOT, Stack

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# CI (.ci/run) installs both and sets this: there a missing browser fails, never skips.
if os.environ.get("CRONHOOK_REQUIRE_BROWSER") == "1":
    import playwright.sync_api as playwright_api

    if not Path(CHROMIUM).exists():
        raise RuntimeError(f"CRONHOOK_REQUIRE_BROWSER=1 but {CHROMIUM} does not exist")
else:
    playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect

LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
WAIT_MS = 30_000
SHOTS = ROOT / "docs" / "img"
expect.set_options(timeout=WAIT_MS)

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed (.ci/run does it)"
    ),
]


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with playwright_api.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser) -> Iterator[object]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(WAIT_MS)
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    yield opened
    context.close()
    assert not errors, f"script errors in the console: {errors}"


def _unique(prefix: str) -> str:
    return f"{prefix} {uuid.uuid4().hex[:8]}"


def _shot(page: object, name: str, *, full_page: bool = False) -> None:
    if os.environ.get("CRONHOOK_SCREENSHOTS"):
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.evaluate("document.getElementById('toast').classList.remove('on')")
        page.wait_for_timeout(300)  # the notice fades out (screenshots only)
        page.screenshot(path=str(SHOTS / name), full_page=full_page)


def sign_in(page, stack: Stack, key: str | None = None, *, hash_: str = "") -> None:
    page.goto(stack.url + "/" + hash_)
    page.get_by_label("API key").fill(key or stack.api_key)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_text(re.compile(r"Tenant \S+ · (viewer|operator|admin)"))).to_be_visible()


def _create(stack: Stack, body: dict, key: str | None = None) -> dict:
    answer = stack.call("POST", "/v1/triggers", body, key=key)
    assert answer.status_code == 201, answer.text
    return answer.json()


def _row(page, name: str):
    return page.get_by_role("row").filter(has=page.get_by_role("link", name=name, exact=True))


def _filter_by_tag(page, tag: str) -> None:
    filters = page.get_by_role("search", name="Filter triggers")
    filters.get_by_label("Tag").fill(tag)
    filters.get_by_role("button", name="Apply filters").click()


def _post_hook(url: str, body: bytes, headers: dict) -> requests.Response:
    return requests.post(
        url, data=body, headers={"Content-Type": "application/json", **headers}, timeout=30
    )


def _sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def test_create_a_cron_trigger_through_the_dialog_and_see_it_listed_with_next_fire_and_dst_marks(
    page, stack
):
    title = _unique("Nightly Berlin")
    sign_in(page, stack)
    page.get_by_role("button", name="New trigger").click()
    dialog = page.get_by_role("dialog", name="New trigger")
    dialog.get_by_label("Title").fill(title)
    dialog.get_by_label("Workflow").select_option("echo")
    dialog.get_by_label("How often").select_option("daily")
    dialog.get_by_label("Time of day").fill("02:30")
    dialog.get_by_label("Timezone", exact=True).select_option("Europe/Berlin")
    # Europe/Berlin springs forward on 2027-03-28 at 02:00 CET: 02:30 does not exist that
    # day, and the default policy (shift) fires right after the jump, at 03:00 CEST.
    dialog.get_by_label("Preview from").fill("2027-03-25")
    preview = dialog.get_by_role("table", name="Next 10 fires")
    expect(preview.get_by_role("row")).to_have_count(11)
    expect(preview.get_by_role("row").nth(1)).to_contain_text("25 Mar 2027, 02:30:00 CET")
    expect(preview.get_by_role("row").nth(1)).to_contain_text("25 Mar 2027, 01:30:00 UTC")
    marked = preview.get_by_role("row").filter(has_text=re.compile(r"DST\W+\w"))
    expect(marked).to_have_count(1)
    expect(marked).to_contain_text("28 Mar 2027, 03:00:00 CEST")
    expect(marked).to_contain_text("28 Mar 2027, 01:00:00 UTC")
    _shot(page, "console-dialog.png")
    dialog.get_by_role("button", name="Create").click()
    expect(dialog).to_be_hidden()

    row = _row(page, title)
    expect(row).to_contain_text("At 02:30 (Europe/Berlin)")
    expect(row).to_contain_text("active")
    next_fire = row.locator("time")
    expect(next_fire).to_contain_text(re.compile(r"in \d+ (hours?|minutes?)"))
    expect(next_fire).to_contain_text(re.compile(r"02:30:00 CES?T"))
    created = [t for t in stack.call("GET", "/v1/triggers?limit=200").json()["items"]]
    (mine,) = [t for t in created if t["title"] == title]
    assert mine["schedule"]["cron"] == "30 2 * * *"
    assert mine["schedule"]["timezone"] == "Europe/Berlin"
    expect(next_fire).to_have_attribute("datetime", mine["next_fire_at"])


def test_create_a_webhook_trigger_see_the_secret_once_and_not_after_a_reload(browser, stack):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(WAIT_MS)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=stack.url)
    page = context.new_page()
    title = _unique("Deploy hook")
    sign_in(page, stack)
    page.get_by_role("button", name="New trigger").click()
    dialog = page.get_by_role("dialog", name="New trigger")
    dialog.get_by_label("Title").fill(title)
    dialog.get_by_label("An event (webhook)").check()
    dialog.get_by_label("Event source").select_option("webhook")
    dialog.get_by_role("button", name="Create").click()

    expect(dialog.get_by_role("alert")).to_contain_text("it will not be shown again")
    secret = dialog.get_by_label("Signing secret").input_value()
    url = dialog.get_by_label("Webhook URL").input_value()
    assert secret.startswith("whsec_") and "/hooks/" in url
    dialog.get_by_role("button", name="Copy secret").click()
    assert page.evaluate("navigator.clipboard.readText()") == secret
    # The secret shown is the trigger's: a delivery signed with it is accepted.
    body = json.dumps({"ref": "main"}).encode()
    answer = _post_hook(url, body, {"X-Signature-256": _sign(secret, body)})
    assert answer.status_code == 202, answer.text
    dialog.get_by_role("button", name="Done").click()

    page.reload()
    _row(page, title).get_by_role("link", name=title).click()
    expect(page.get_by_role("heading", name=title, level=1)).to_be_visible()
    expect(page.get_by_text(url)).to_be_visible()  # the URL stays visible, the secret not
    assert secret not in page.content()
    context.close()


def test_create_an_eventbridge_trigger_with_its_pattern_through_the_dialog(page, stack):
    title = _unique("Orders placed")
    sign_in(page, stack)
    page.get_by_role("button", name="New trigger").click()
    dialog = page.get_by_role("dialog", name="New trigger")
    dialog.get_by_label("Title").fill(title)
    dialog.get_by_label("An event (webhook)").check()
    dialog.get_by_label("Event source").select_option("eventbridge")
    expect(dialog.get_by_label("Signing secret")).to_be_hidden()  # AWS delivers it: no secret
    expect(dialog.get_by_label("Bucket")).to_be_hidden()
    pattern = dialog.get_by_label("Event pattern (JSON)")
    pattern.fill('{"source": ["shop.orders"]')  # not JSON: named next to the field
    dialog.get_by_role("button", name="Create").click()
    expect(pattern).to_have_attribute("aria-invalid", "true")
    pattern.fill('{"source": ["shop.orders"], "detail-type": ["order.placed"]}')
    dialog.get_by_role("button", name="Create").click()
    expect(dialog).to_be_hidden()
    _row(page, title).get_by_role("link", name=title).click()
    expect(page.get_by_role("heading", name=title, level=1)).to_be_visible()
    listed = stack.call("GET", "/v1/triggers", params={"limit": 200}).json()["items"]
    (made,) = [t for t in listed if t["title"] == title]
    assert made["event"]["source"] == "eventbridge"
    assert made["event"]["pattern"] == {"source": ["shop.orders"], "detail-type": ["order.placed"]}


def test_the_backfill_dialog_shows_the_count_and_cost_before_it_runs(page, stack):
    title = _unique("Hourly import")
    made = _create(stack, {"workflow": "echo", "title": title, "schedule": {"cron": "0 * * * *"}})
    sign_in(page, stack, hash_=f"#/triggers/{made['id']}")
    expect(page.get_by_role("heading", name=title, level=1)).to_be_visible()
    page.get_by_role("button", name="Backfill", exact=True).click()
    dialog = page.get_by_role("dialog", name=f"Backfill {title}")
    dialog.get_by_label("From (UTC)").fill("2026-11-01T00:00")
    dialog.get_by_label("To (UTC)").fill("2026-11-01T03:00")
    run = dialog.get_by_role("button", name="Run backfill")
    expect(run).to_be_disabled()  # nothing runs before the check
    dialog.get_by_role("button", name="Check").click()
    expect(dialog).to_contain_text("4 slot(s)")
    expect(dialog).to_contain_text("estimated cost $")
    assert stack.call("GET", f"/v1/triggers/{made['id']}/runs").json()["items"] == []
    run.click()
    expect(page.get_by_role("status")).to_contain_text("Backfill queued: 4 slot(s)")

    def backfilled():
        items = stack.call(
            "GET", f"/v1/triggers/{made['id']}/runs", params={"surface": "backfill"}
        ).json()["items"]
        done = [r for r in items if r["status"] == "succeeded"]
        return done if len(done) == 4 else None

    runs = stack.wait_for(backfilled, timeout_s=120)
    assert sorted(r["scheduled_for"] for r in runs)[0].startswith("2026-11-01T00:00:00")


def test_a_trigger_disabled_by_failures_shows_its_reason_and_last_error_in_the_list(page, stack):
    tag = _unique("failing").replace(" ", "-")
    title = _unique("Always fails")
    made = _create(
        stack,
        {
            "workflow": "fail",
            "title": title,
            "tags": [tag],
            "schedule": {"cron": "0 0 1 1 *"},
            "limits": {"max_failures": 1},
        },
    )
    assert stack.call("POST", f"/v1/triggers/{made['id']}/fire").status_code == 202

    def disabled():
        view = stack.call("GET", f"/v1/triggers/{made['id']}").json()
        return view if view["status"] == "disabled" else None

    view = stack.wait_for(disabled)
    assert view["disabled_reason"] == "failures" and view["last_run"]["error"]
    sign_in(page, stack)
    _filter_by_tag(page, tag)
    row = _row(page, title)
    expect(row).to_contain_text("disabled")
    expect(row).to_contain_text("failures")
    expect(row.get_by_role("cell", name=view["last_run"]["error"], exact=True)).to_be_visible()
    expect(row.get_by_role("listitem")).to_have_count(1)  # one run mark: the failed run
    expect(row.get_by_role("listitem").first).to_have_attribute(
        "aria-label", re.compile(r"^failed")
    )


def test_pause_three_triggers_by_selection_with_a_note_and_see_the_note(page, stack):
    tag = _unique("batch").replace(" ", "-")
    titles = [_unique(f"Report {n}") for n in range(3)]
    made = [
        _create(
            stack,
            {"workflow": "echo", "title": t, "tags": [tag], "schedule": {"cron": "0 8 * * 1"}},
        )
        for t in titles
    ]
    untouched = _create(
        stack,
        {
            "workflow": "echo",
            "title": _unique("Other"),
            "tags": [tag],
            "schedule": {"cron": "0 9 * * 1"},
        },
    )
    note = _unique("Deploy freeze until Monday")
    sign_in(page, stack)
    _filter_by_tag(page, tag)
    for title in titles:
        page.get_by_label(f"Select {title}").check()
    expect(page.get_by_text("3 selected")).to_be_visible()
    page.get_by_role("button", name="Pause selected").click()
    dialog = page.get_by_role("dialog", name="Pause triggers")
    dialog.get_by_role("button", name="Pause").click()  # no note: refused, nothing paused
    expect(dialog.get_by_text("Say why")).to_be_visible()
    dialog.get_by_label("Note").fill(note)
    dialog.get_by_role("button", name="Pause").click()
    expect(dialog).to_be_hidden()
    for title in titles:
        row = _row(page, title)
        expect(row).to_contain_text("disabled")
        expect(row).to_contain_text("manual")
        expect(row).to_contain_text(f"Note: {note}")
    expect(_row(page, untouched["title"])).to_contain_text("active")
    for trigger in made:
        view = stack.call("GET", f"/v1/triggers/{trigger['id']}").json()
        assert (view["status"], view["disabled_note"]) == ("disabled", note)
    _shot(page, "console-list.png")


def test_fire_now_adds_a_run_on_the_trigger_page(page, stack):
    title = _unique("Weekly digest")
    made = _create(
        stack,
        {
            "workflow": "echo",
            "title": title,
            "schedule": {"cron": "0 8 * * 1", "timezone": "Europe/Berlin"},
        },
    )
    sign_in(page, stack, hash_=f"#/triggers/{made['id']}")
    expect(page.get_by_role("heading", name=title, level=1)).to_be_visible()
    runs = page.get_by_role("table", name="Runs, newest first")
    expect(runs).to_contain_text("No runs yet.")
    upcoming = page.get_by_role("table", name="Next 5 fires")
    expect(upcoming.get_by_role("row")).to_have_count(6)
    page.get_by_role("button", name="Fire now").click()
    first = runs.get_by_role("row").nth(1)
    expect(first).to_contain_text("manual")
    expect(page.get_by_role("status")).to_contain_text("Run queued")

    def settled():
        items = stack.call("GET", f"/v1/triggers/{made['id']}/runs").json()["items"]
        return items if items and items[0]["status"] == "succeeded" else None

    stack.wait_for(settled)
    page.get_by_role("button", name="Refresh").click()
    first = page.get_by_role("table", name="Runs, newest first").get_by_role("row").nth(1)
    expect(first).to_contain_text("succeeded")
    expect(first).to_contain_text("manual")
    _shot(page, "console-trigger.png", full_page=True)


def test_a_rejected_delivery_shows_its_cause(page, stack):
    title = _unique("Signed hook")
    made = _create(stack, {"workflow": "echo", "title": title, "event": {"source": "webhook"}})
    url, secret = made["webhook"]["url"], made["webhook"]["secret"]
    body = json.dumps({"n": 1}).encode()
    bad = _post_hook(url, body, {"X-Signature-256": _sign("not-the-secret", body)})
    assert bad.status_code == 401
    good = _post_hook(url, body, {"X-Signature-256": _sign(secret, body), "X-Request-Id": "abc"})
    assert good.status_code == 202
    sign_in(page, stack, hash_=f"#/triggers/{made['id']}")
    deliveries = page.get_by_role("table", name=re.compile("^Deliveries"))
    rejected = deliveries.get_by_role("row").filter(has_text="bad signature")
    expect(rejected).to_have_count(1)
    expect(rejected).to_contain_text("signature mismatch")
    expect(rejected).to_contain_text("401")
    accepted = deliveries.get_by_role("row").filter(has_text="accepted")
    expect(accepted).to_have_count(1)
    expect(accepted).to_contain_text(f"{len(body)} B")
    # Headers are shown, never the signature.
    accepted.get_by_text("Headers").click()
    expect(accepted.locator("pre")).to_contain_text('"x-request-id": "abc"')
    expect(accepted.locator("pre")).not_to_contain_text("x-signature-256")
    # And the accepted one is an event that can be replayed.
    events = page.get_by_role("table", name="Events, newest first")
    expect(events.get_by_role("button", name=re.compile("^Replay event"))).to_have_count(1)


def test_a_viewer_key_sees_no_write_controls(page, stack):
    title = _unique("Seen by a viewer")
    made = _create(stack, {"workflow": "echo", "title": title, "schedule": {"cron": "0 8 * * 1"}})
    key = stack.call("POST", "/v1/keys", {"role": "viewer"}).json()["key"]
    sign_in(page, stack, key)
    expect(page.get_by_text("Tenant local · viewer")).to_be_visible()
    expect(_row(page, title)).to_be_visible()
    for name in (
        "New trigger",
        "Pause selected",
        "Resume selected",
        "Fire selected",
        "Delete selected",
    ):
        expect(page.get_by_role("button", name=name)).to_have_count(0)
    expect(page.get_by_role("checkbox")).to_have_count(0)
    _row(page, title).get_by_role("link", name=title).click()
    expect(page.get_by_role("heading", name=title, level=1)).to_be_visible()
    expect(page.get_by_role("table", name="Runs, newest first")).to_be_visible()
    for name in ("Edit", "Pause", "Resume", "Fire now", "Backfill", "Delete"):
        expect(page.get_by_role("button", name=name, exact=True)).to_have_count(0)
    expect(page.get_by_role("heading", name="Audit")).to_have_count(0)  # admins only
    assert made["id"] in page.url


def test_api_validation_errors_appear_next_to_the_field_they_name(page, stack):
    sign_in(page, stack)
    page.get_by_role("button", name="New trigger").click()
    dialog = page.get_by_role("dialog", name="New trigger")
    dialog.get_by_label("How often").select_option("cron")
    cron = dialog.get_by_label("Cron expression")
    cron.fill("61 * * * *")
    expect(cron).to_have_attribute("aria-invalid", "true")
    described = cron.get_attribute("aria-describedby")
    expect(page.locator(f"#{described}")).to_contain_text("minute")
    cron.fill("0 8 * * 1")
    expect(cron).not_to_have_attribute("aria-invalid", "true")
    dialog.get_by_text("Tags, limits and options").click()
    max_runs = dialog.get_by_label("Max runs")
    max_runs.fill("0")
    dialog.get_by_role("button", name="Create").click()
    expect(max_runs).to_have_attribute("aria-invalid", "true")
    expect(page.locator(f"#{max_runs.get_attribute('aria-describedby')}")).to_contain_text(
        "must be at least 1"
    )
    expect(dialog).to_be_visible()  # nothing was created


def test_the_edit_dialog_shows_the_fires_an_edit_adds_and_removes_before_saving(page, stack):
    title = _unique("Daily digest")
    made = _create(stack, {"workflow": "echo", "title": title, "schedule": {"cron": "0 9 * * *"}})
    sign_in(page, stack, hash_=f"#/triggers/{made['id']}")
    expect(page.get_by_role("heading", name=title, level=1)).to_be_visible()
    page.get_by_role("button", name="Edit", exact=True).click()
    dialog = page.get_by_role("dialog", name=f"Edit {title}")
    dialog.get_by_label("How often").select_option("cron")
    dialog.get_by_label("Cron expression").fill("0 9 * * 1-5")
    dialog.get_by_role("button", name="Save").click()
    diff = dialog.get_by_role("region", name="What this edit changes")
    expect(diff).to_contain_text("Fires added: 0")
    expect(diff).to_contain_text(re.compile(r"Fires removed: \d+"))
    # Nothing is stored before the edit is confirmed.
    stored = stack.call("GET", f"/v1/triggers/{made['id']}").json()
    assert stored["schedule"]["cron"] == "0 9 * * *"
    dialog.get_by_role("button", name="Confirm and save").click()
    expect(dialog).to_be_hidden()
    stored = stack.call("GET", f"/v1/triggers/{made['id']}").json()
    assert stored["schedule"]["cron"] == "0 9 * * 1-5"
