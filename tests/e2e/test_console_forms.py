# ruff: noqa: F811  (the browser and page fixtures are test_console's, imported by name)
"""The console's forms and list in headless Chromium against the local stack: intervals
built or pasted, the edit dialog keeping a schedule it has no preset for, the selection
across pages, the content security policy on the list, and a run without a payload."""

from __future__ import annotations

import pytest

from tests.e2e.test_console import (  # noqa: F401 (fixtures: browser, page)
    CHROMIUM,
    _create,
    _filter_by_tag,
    _row,
    _unique,
    browser,
    expect,
    page,
    sign_in,
)

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not __import__("pathlib").Path(CHROMIUM).exists(), reason="no chromium"),
]

# A one-time instant far enough ahead never to fire during the session.
FAR_AT = "2031-05-06T07:08:09Z"


def _mine(stack, title: str) -> dict:
    listed = stack.call("GET", "/v1/triggers", params={"limit": 200}).json()["items"]
    (made,) = [t for t in listed if t["title"] == title]
    return made


def _settled_run(stack, run_id: str) -> dict:
    def done():
        answer = stack.call("GET", f"/v1/runs/{run_id}")
        run = answer.json() if answer.status_code == 200 else None
        return run if run and run["status"] not in ("queued", "running") else None

    return stack.wait_for(done, timeout_s=90)


def test_every_7_minutes_and_a_pasted_rate_are_previewed_and_created_as_intervals(page, stack):
    sign_in(page, stack)
    title = _unique("Every seven")
    page.get_by_role("button", name="New trigger").click()
    dialog = page.get_by_role("dialog", name="New trigger")
    dialog.get_by_label("Title").fill(title)
    dialog.get_by_label("Workflow").select_option("echo")
    # A zone chosen for a cron first: an interval sends neither it nor a DST policy.
    dialog.get_by_label("Timezone", exact=True).select_option("Europe/Berlin")
    dialog.get_by_label("How often").select_option("minutes")
    every = dialog.get_by_label("Every", exact=True)
    every.fill("7")
    expect(dialog.get_by_role("table", name="Next 10 fires").get_by_role("row")).to_have_count(11)
    expect(every).not_to_have_attribute("aria-invalid", "true")
    expect(dialog.get_by_label("Timezone", exact=True)).to_be_hidden()
    dialog.get_by_role("button", name="Create").click()
    expect(dialog).to_be_hidden()
    assert _mine(stack, title)["schedule"]["interval_s"] == 7 * 60

    title = _unique("Pasted rate")
    page.get_by_role("button", name="New trigger").click()
    dialog = page.get_by_role("dialog", name="New trigger")
    dialog.get_by_label("Title").fill(title)
    dialog.get_by_label("Workflow").select_option("echo")
    dialog.get_by_label("How often").select_option("eventbridge")
    pasted = dialog.get_by_label("EventBridge expression")
    pasted.fill("rate(5 minutes)")
    expect(dialog.get_by_role("table", name="Next 10 fires").get_by_role("row")).to_have_count(11)
    expect(pasted).not_to_have_attribute("aria-invalid", "true")
    dialog.get_by_role("button", name="Create").click()
    expect(dialog).to_be_hidden()
    assert _mine(stack, title)["schedule"]["interval_s"] == 5 * 60


@pytest.mark.parametrize(
    ("schedule", "kept"),
    [
        ({"interval_s": 10}, {"interval_s": 10}),
        ({"interval_s": 420}, {"interval_s": 420}),
        ({"at": FAR_AT}, {"at": FAR_AT}),
    ],
    ids=["seconds-interval", "minutes-interval", "one-time"],
)
def test_a_title_edit_keeps_the_schedule_exactly(page, stack, schedule, kept):
    title = _unique("Kept cadence")
    made = _create(stack, {"workflow": "echo", "title": title, "schedule": schedule})
    sign_in(page, stack, hash_=f"#/triggers/{made['id']}")
    expect(page.get_by_role("heading", name=title, level=1)).to_be_visible()
    page.get_by_role("button", name="Edit", exact=True).click()
    dialog = page.get_by_role("dialog", name=f"Edit {title}")
    if "interval_s" in schedule and schedule["interval_s"] % 60:
        expect(dialog.get_by_label("How often")).to_have_value("keep")
    if "at" in schedule:
        expect(dialog.get_by_label("How often")).to_have_value("keep")
    dialog.get_by_label("Title").fill(f"{title} renamed")
    dialog.get_by_role("button", name="Save").click()
    expect(dialog).to_be_hidden()
    stored = stack.call("GET", f"/v1/triggers/{made['id']}").json()
    assert stored["title"] == f"{title} renamed"
    assert stored["kind"] == made["kind"]
    for name, value in kept.items():
        assert stored["schedule"][name] == value
    assert stored["schedule"].get("cron") is None


def test_the_selection_is_cleared_when_the_list_turns_a_page(page, stack):
    tag = _unique("paged").replace(" ", "-")
    for n in range(26):
        _create(
            stack,
            {
                "workflow": "echo",
                "title": _unique(f"Paged {n}"),
                "tags": [tag],
                "schedule": {"cron": "0 0 1 1 *"},
            },
        )
    sign_in(page, stack)
    _filter_by_tag(page, tag)
    page.get_by_label("Select all on this page").check()
    expect(page.get_by_text("25 selected")).to_be_visible()
    page.get_by_role("button", name="Next page").click()
    expect(page.get_by_text("Page 2")).to_be_visible()
    expect(page.locator("input[data-id]")).to_have_count(1)
    expect(page.locator("#selected-count")).to_have_text("")
    for name in ("Fire selected", "Delete selected", "Pause selected", "Resume selected"):
        expect(page.get_by_role("button", name=name)).to_be_disabled()
    last = page.locator("input[data-id]")
    trigger_id = last.get_attribute("data-id")
    last.check()
    expect(page.get_by_text("1 selected")).to_be_visible()
    page.get_by_role("button", name="Fire selected").click()
    expect(page.get_by_role("status")).to_contain_text("Fired 1 trigger(s)")
    runs = stack.call("GET", f"/v1/triggers/{trigger_id}/runs").json()["items"]
    assert [r["surface"] for r in runs] == ["manual"]


def test_the_list_page_breaks_no_content_security_policy(page, stack):
    messages: list[str] = []
    page.on("console", lambda message: messages.append(message.text))
    tag = _unique("csp").replace(" ", "-")
    title = _unique("Strip")
    made = _create(
        stack,
        {"workflow": "echo", "title": title, "tags": [tag], "schedule": {"cron": "0 0 1 1 *"}},
    )
    run_id = stack.call("POST", f"/v1/triggers/{made['id']}/fire").json()["run_id"]
    _settled_run(stack, run_id)
    sign_in(page, stack)
    _filter_by_tag(page, tag)
    strip = _row(page, title).get_by_role("list")
    expect(strip.get_by_role("listitem")).to_have_count(1)
    width = strip.evaluate("e => e.getBoundingClientRect().width")
    blocked = [m for m in messages if "Content Security Policy" in m]
    assert not blocked, blocked
    # One run, one 9-px cell: the strip is as wide as its marks, not the whole cell.
    assert width == pytest.approx(9, abs=0.5)


def test_a_run_without_a_payload_says_so_instead_of_null(page, stack):
    title = _unique("No payload")
    made = _create(stack, {"workflow": "echo", "title": title, "schedule": {"cron": "0 0 1 1 *"}})
    run_id = stack.call("POST", f"/v1/triggers/{made['id']}/fire").json()["run_id"]
    _settled_run(stack, run_id)
    sign_in(page, stack, hash_=f"#/runs/{run_id}")
    payload = page.get_by_role("region", name="Payload")
    expect(payload).to_contain_text("No payload.")
    expect(payload.get_by_label("Payload as JSON")).to_have_count(0)
    expect(payload).not_to_contain_text("null")


def test_the_create_form_marks_bad_numbers_instead_of_changing_them(page, stack):
    title = _unique("Bad numbers")
    sign_in(page, stack)
    page.get_by_role("button", name="New trigger").click()
    dialog = page.get_by_role("dialog", name="New trigger")
    dialog.get_by_label("Title").fill(title)
    dialog.get_by_label("Workflow").select_option("echo")
    dialog.get_by_label("How often").select_option("minutes")
    every = dialog.get_by_label("Every", exact=True)
    every.fill("-5")
    expect(every).to_have_attribute("aria-invalid", "true")
    dialog.get_by_role("button", name="Create").click()
    expect(every).to_have_attribute("aria-invalid", "true")
    dialog.get_by_label("How often").select_option("monthly")
    day = dialog.get_by_label("Day of month")
    day.fill("45")
    expect(day).to_have_attribute("aria-invalid", "true")
    day.fill("15")
    expect(day).not_to_have_attribute("aria-invalid", "true")
    dialog.get_by_text("Tags, limits and options").click()
    concurrency = dialog.get_by_label("Concurrency")
    concurrency.fill("0")
    dialog.get_by_role("button", name="Create").click()
    expect(concurrency).to_have_attribute("aria-invalid", "true")  # the API's 422, not "1"
    expect(dialog).to_be_visible()
    listed = stack.call("GET", "/v1/triggers", params={"limit": 200}).json()["items"]
    assert not [t for t in listed if t["title"] == title]


def test_a_changed_backfill_window_must_be_checked_again(page, stack):
    title = _unique("Hourly window")
    made = _create(stack, {"workflow": "echo", "title": title, "schedule": {"cron": "0 * * * *"}})
    sign_in(page, stack, hash_=f"#/triggers/{made['id']}")
    expect(page.get_by_role("heading", name=title, level=1)).to_be_visible()
    page.get_by_role("button", name="Backfill", exact=True).click()
    dialog = page.get_by_role("dialog", name=f"Backfill {title}")
    dialog.get_by_label("From (UTC)").fill("2026-11-01T00:00")
    dialog.get_by_label("To (UTC)").fill("2026-11-01T03:00")
    dialog.get_by_role("button", name="Check").click()
    expect(dialog).to_contain_text("4 slot(s)")
    run = dialog.get_by_role("button", name="Run backfill")
    expect(run).to_be_enabled()
    dialog.get_by_label("To (UTC)").fill("2026-11-03T03:00")
    expect(run).to_be_disabled()
    expect(dialog).not_to_contain_text("4 slot(s)")
