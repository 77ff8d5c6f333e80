# ruff: noqa: F811  (the browser and page fixtures are test_console's, imported by name)
"""Issue 30 in the console, in headless Chromium against the local stack, by role and label:
a run's page (traceback, "Run again"), paging, search, a paused trigger, a viewer's page,
and the pictures (a failed slot in its colour, light and dark, at a phone's width).

``CRONHOOK_SCREENSHOTS=1`` also writes the screenshots of the README and docs/console.md."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from tests.e2e.test_console import (  # noqa: F401 (fixtures: browser, page)
    CHROMIUM,
    WAIT_MS,
    _create,
    _row,
    _shot,
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


def _settled(stack, run_id: str) -> dict:
    def done():
        answer = stack.call("GET", f"/v1/runs/{run_id}")
        if answer.status_code != 200:  # an event's run is known once its event starts
            return None
        run = answer.json()
        return run if run["status"] not in ("queued", "running") else None

    return stack.wait_for(done, timeout_s=90)


def _failed_trigger(stack, title: str) -> tuple[dict, str]:
    made = _create(stack, {"workflow": "fail", "title": title, "schedule": {"cron": "0 0 1 1 *"}})
    fired = stack.call("POST", f"/v1/triggers/{made['id']}/fire", {"payload": {"client": 7}})
    run_id = fired.json()["run_id"]
    assert _settled(stack, run_id)["status"] == "failed"
    return made, run_id


def test_open_a_failed_run_see_its_traceback_run_it_again_and_see_the_new_run_linked(page, stack):
    made, run_id = _failed_trigger(stack, _unique("Nightly export"))
    sign_in(page, stack, hash_=f"#/triggers/{made['id']}")
    runs = page.get_by_role("table", name="Runs, newest first")
    runs.get_by_role("link", name=f"Run {run_id} (failed)").click()

    expect(page.get_by_role("heading", name="Run failed", level=1)).to_be_visible()
    trace = page.get_by_label("Traceback")
    expect(trace).to_contain_text("Traceback (most recent call last)")
    expect(trace).to_contain_text("RuntimeError: the fail workflow always fails")
    expect(page.get_by_label("Payload as JSON")).to_contain_text('"client": 7')
    logs = page.get_by_role("table", name="Log lines, oldest first")
    expect(logs.get_by_role("row").filter(has_text="fire handled")).not_to_have_count(0)
    _shot(page, "console-run.png", full_page=True)

    page.get_by_role("button", name="Run again").click()
    expect(page).not_to_have_url(re.compile(re.escape(run_id) + "$"))
    original = page.get_by_role("link", name=f"Run {run_id} (the original)")
    expect(original).to_be_visible()
    new_id = page.url.rsplit("/", 1)[-1]
    assert _settled(stack, new_id)["rerun_of"] == run_id
    page.get_by_role("button", name="Refresh").click()
    expect(page.get_by_role("heading", name="Run failed", level=1)).to_be_visible()
    expect(page.get_by_label("Payload as JSON")).to_contain_text('"client": 7')
    original.click()
    expect(page.get_by_role("heading", name="Run failed", level=1)).to_be_visible()
    assert page.url.endswith(run_id)


def test_page_to_a_run_older_than_the_first_25(page, stack):
    made = _create(
        stack,
        {"workflow": "echo", "title": _unique("Every minute"), "schedule": {"cron": "* * * * *"}},
    )
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    window = {
        "from": (now - timedelta(minutes=40)).isoformat().replace("+00:00", "Z"),
        "to": (now - timedelta(minutes=11)).isoformat().replace("+00:00", "Z"),
    }
    started = stack.call("POST", f"/v1/triggers/{made['id']}/backfill", window)
    assert started.status_code == 202, started.text
    ids = started.json()["run_ids"]
    assert len(ids) == 30

    def all_ran():
        items = stack.call("GET", f"/v1/triggers/{made['id']}/runs", params={"limit": 100}).json()[
            "items"
        ]
        done = [r for r in items if r["status"] == "succeeded"]
        return done if len(done) >= 30 else None

    stack.wait_for(all_ran, timeout_s=120)
    oldest = min(ids)
    sign_in(page, stack, hash_=f"#/triggers/{made['id']}")
    runs = page.get_by_role("table", name="Runs, newest first")
    expect(runs.get_by_role("row")).to_have_count(26)  # the header and 25 runs
    expect(runs.get_by_role("link", name=f"Run {oldest} (succeeded)")).to_have_count(0)
    page.get_by_role("navigation", name="Runs: older pages").get_by_role(
        "button", name="Older"
    ).click()
    link = page.get_by_role("table", name="Runs, newest first").get_by_role(
        "link", name=f"Run {oldest} (succeeded)"
    )
    expect(link).to_be_visible()
    link.click()
    expect(page.get_by_role("heading", name="Run succeeded", level=1)).to_be_visible()


def test_search_the_trigger_list_by_title_tag_workflow_and_id(page, stack):
    word = _unique("zebra").replace(" ", "")
    tag = _unique("tag").replace(" ", "-")
    wanted = _create(
        stack,
        {"workflow": "echo", "title": f"Report {word}", "schedule": {"cron": "0 8 * * 1"}},
    )
    tagged = _create(
        stack,
        {
            "workflow": "sleep",
            "title": _unique("Tagged"),
            "tags": [tag],
            "schedule": {"cron": "0 8 * * 1"},
        },
    )
    sign_in(page, stack)
    search = page.get_by_role("search", name="Filter triggers")
    for query, shown, hidden in (
        (word, wanted, tagged),
        (tag, tagged, wanted),
        (tagged["id"], tagged, wanted),
        (f"sleep {tag}", tagged, wanted),
    ):
        search.get_by_label("Search").fill(query)
        search.get_by_role("button", name="Apply filters").click()
        found = page.get_by_role("table", name=re.compile("^Triggers matching"))
        expect(found.get_by_role("link", name=shown["display_name"], exact=True)).to_be_visible()
        expect(found.get_by_role("link", name=hidden["display_name"], exact=True)).to_have_count(0)


def test_a_paused_triggers_page_shows_no_upcoming_fires(page, stack):
    made = _create(
        stack, {"workflow": "echo", "title": _unique("Paused"), "schedule": {"cron": "0 8 * * 1"}}
    )
    assert stack.call("POST", f"/v1/triggers/{made['id']}/disable").status_code == 200
    sign_in(page, stack, hash_=f"#/triggers/{made['id']}")
    expect(page.get_by_text("Paused: nothing fires until it is resumed.")).to_be_visible()
    expect(page.get_by_role("table", name="Next 5 fires")).to_have_count(0)
    expect(page.get_by_role("table", name=re.compile("^Upcoming fires in"))).to_have_count(0)


def test_a_one_time_trigger_that_ran_is_done_not_red(page, stack):
    at = (datetime.now(UTC) + timedelta(seconds=3)).isoformat().replace("+00:00", "Z")
    title = _unique("Once")
    made = _create(stack, {"workflow": "echo", "title": title, "schedule": {"at": at}})

    def done():
        view = stack.call("GET", f"/v1/triggers/{made['id']}").json()
        return view if view["status"] == "disabled" else None

    assert stack.wait_for(done, timeout_s=90)["disabled_reason"] == "max_runs"
    sign_in(page, stack)
    page.get_by_role("search", name="Filter triggers").get_by_label("Search").fill(made["id"])
    page.get_by_role("search", name="Filter triggers").get_by_role(
        "button", name="Apply filters"
    ).click()
    row = _row(page, title)
    expect(row).to_contain_text("done")
    expect(row).to_contain_text("ran once")
    expect(row).not_to_contain_text("max_runs")
    colour = row.locator(".s-done").evaluate("e => getComputedStyle(e).color")
    bad = page.evaluate(
        "() => { const s = document.createElement('span'); s.style.color = 'var(--bad)';"
        " document.body.append(s); const c = getComputedStyle(s).color; s.remove(); return c; }"
    )
    assert colour != bad


def test_a_viewer_sees_no_stray_text(page, stack):
    made, run_id = _failed_trigger(stack, _unique("Viewer sees"))
    key = stack.call("POST", "/v1/keys", {"role": "viewer"}).json()["key"]
    sign_in(page, stack, key)
    main = page.get_by_role("main")
    expect(main.get_by_role("table", name="Triggers")).to_be_visible()
    for hash_ in ("#/triggers", f"#/triggers/{made['id']}", f"#/runs/{run_id}", "#/activity"):
        page.goto(stack.url + "/" + hash_)
        expect(main.get_by_role("heading", level=1)).to_be_visible()
        expect(main.get_by_text("Loading…")).to_have_count(0)
        text = main.inner_text()
        assert not re.search(r"\b(null|undefined|NaN)\b", text), (hash_, text)
    expect(page.get_by_role("button", name="Run again")).to_have_count(0)


def _css_colour(page, variable: str) -> str:
    return page.evaluate(
        "(v) => { const s = document.createElement('span'); s.style.color = `var(${v})`;"
        " document.body.append(s); const c = getComputedStyle(s).color; s.remove(); return c; }",
        variable,
    )


def test_the_7_day_strip_shows_a_failed_slot_in_its_colour_light_dark_and_on_a_phone(
    browser, stack
):
    made = _create(
        stack,
        {
            "workflow": "echo",
            "title": _unique("Export every 3 hours"),
            "schedule": {"cron": "0 */3 * * *", "timezone": "Europe/Berlin"},
        },
    )
    # A week of history: its slots backfilled (each runs, succeeded), then a failure.
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    window = {
        "from": (now - timedelta(days=6, hours=20)).isoformat().replace("+00:00", "Z"),
        "to": (now - timedelta(hours=3)).isoformat().replace("+00:00", "Z"),
    }
    started = stack.call("POST", f"/v1/triggers/{made['id']}/backfill", window)
    assert started.status_code == 202, started.text
    slots = started.json()["slots"]

    def week_ran():
        items = stack.call("GET", f"/v1/triggers/{made['id']}/runs", params={"limit": 200}).json()[
            "items"
        ]
        return len([r for r in items if r["status"] == "succeeded"]) >= slots or None

    stack.wait_for(week_ran, timeout_s=180)
    patched = stack.call("PATCH", f"/v1/triggers/{made['id']}", {"workflow": "fail"})
    assert patched.status_code == 200, patched.text
    run_id = stack.call("POST", f"/v1/triggers/{made['id']}/fire").json()["run_id"]
    assert _settled(stack, run_id)["status"] == "failed"
    ok = _create(
        stack,
        {"workflow": "echo", "title": _unique("Strip ok"), "schedule": {"cron": "0 8 * * *"}},
    )
    _settled(stack, stack.call("POST", f"/v1/triggers/{ok['id']}/fire").json()["run_id"])
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    try:
        sign_in(page, stack, hash_=f"#/triggers/{made['id']}")
        strip = page.get_by_role(
            "img", name=re.compile(r"^Last 7 days of runs: \d+ succeeded, 1 failed")
        )
        expect(strip).to_be_visible()
        failed = strip.locator(f'rect[data-run="{run_id}"]')
        expect(failed).to_have_attribute("data-outcome", "failed")
        light = failed.evaluate("e => getComputedStyle(e).fill")
        assert light == _css_colour(page, "--bad")
        calendar = page.get_by_role("table", name=re.compile("^Upcoming fires in"))
        expect(calendar).to_be_visible()
        expect(
            page.get_by_role("img", name=re.compile(r"^Last \d+ runs, oldest first"))
        ).to_be_visible()
        _shot(page, "console-pictures.png", full_page=True)

        page.get_by_role("button", name="Dark theme").click()
        dark = failed.evaluate("e => getComputedStyle(e).fill")
        assert dark == _css_colour(page, "--bad") and dark != light

        page.set_viewport_size({"width": 390, "height": 844})
        expect(strip).to_be_visible()
        box = strip.bounding_box()
        assert box is not None and box["width"] <= 390
        _shot(page, "console-run-phone-dark.png", full_page=True)

        page.set_viewport_size({"width": 1280, "height": 900})
        page.get_by_role("button", name="Dark theme").click()
        page.goto(stack.url + "/#/triggers")
        row = _row(page, ok["display_name"])
        expect(row.get_by_role("listitem")).to_have_count(1)
        expect(row.get_by_role("listitem").first).to_have_attribute(
            "aria-label", re.compile(r"^succeeded")
        )
        page.goto(stack.url + "/#/activity")
        chart = page.get_by_role("img", name=re.compile(r"^Runs per hour, last 24 hours"))
        expect(chart).to_be_visible()
        expect(chart.locator('rect[data-outcome="failed"]')).not_to_have_count(0)
        _shot(page, "console-activity.png", full_page=False)
    finally:
        context.close()


def test_activity_filters_by_status_and_window_and_pages(page, stack):
    made, run_id = _failed_trigger(stack, _unique("Activity"))
    sign_in(page, stack, hash_="#/activity")
    filters = page.get_by_role("search", name="Filter runs")
    filters.get_by_label("Status").select_option("failed")
    filters.get_by_label("Time window").select_option(label="Last hour")
    filters.get_by_role("button", name="Apply filters").click()
    all_runs = page.get_by_role("region", name="All runs").get_by_role(
        "table", name="Runs, newest first", exact=True
    )
    expect(all_runs.get_by_role("link", name=f"Run {run_id} (failed)")).to_be_visible()
    expect(all_runs.get_by_role("row").filter(has_text="succeeded")).to_have_count(0)
    del made
