"""One-off exceptions and ``after_fire: delete`` through the API and the fire path (moto
server): a skipped slot is recorded ``skipped`` with its reason and not run, an undone skip
runs, an extra instant runs once with its payload, and an ``at`` trigger deletes itself
once its run succeeded. T0 is Monday 2026-11-30 12:00 UTC; time is driven by hand.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

import app as app_module
from chalicelib import assembly
from chalicelib.domain.ids import schedule_run_id
from devstack.gateway import contract_client as Client
from tests.functional.api_client import Api
from tests.scenarios import runs_of


@pytest.fixture
def api(aws, clock, monkeypatch):
    monkeypatch.setattr("chalicelib.routes.resource.now_utc", clock)
    with Client(app_module.app, stage_name="test") as client:
        yield Api(client)


def at(hh: int, mm: int = 0) -> datetime:
    return datetime(2026, 11, 30, hh, mm, tzinfo=UTC)


def run_until(aws, clock, hh: int, mm: int = 0) -> list[str]:
    """Tick a minute before ``hh:mm`` and drain at it: the statuses that ran."""
    runner = assembly.build_runner(clock=clock)
    clock.at = at(hh, mm).replace(minute=mm) if mm else at(hh - 1, 59)
    if mm:
        clock.at = at(hh, mm - 1)
    assembly.tick(now=clock())
    clock.at = at(hh, mm)
    return [s for s in aws.drain(runner) if s != "dropped"]


def history(trigger_id: str) -> list[tuple[str, str, str | None]]:
    runs = sorted(runs_of(trigger_id), key=lambda r: int(r.scheduled_for or 0))
    return [
        (
            datetime.fromtimestamp(int(r.scheduled_for) / 1000, UTC).strftime("%H:%M"),
            r.status,
            r.error,
        )
        for r in runs
    ]


def hourly(api) -> dict:
    return api.create_trigger({"workflow": "echo", "schedule": {"cron": "0 * * * *"}})


def test_a_skipped_slot_is_recorded_skipped_with_its_reason_and_the_next_runs(aws, api, clock):
    trigger = hourly(api)
    answer = api.call(
        "POST",
        f"/v1/triggers/{trigger['id']}/skip",
        {"slot": "2026-11-30T14:00:00Z", "reason": "maintenance window"},
    )
    assert answer.status == 200, answer.body
    preview = api.call("GET", f"/v1/triggers/{trigger['id']}/preview?count=2").body
    assert preview["fires"] == ["2026-11-30T13:00:00.000Z", "2026-11-30T15:00:00.000Z"]
    assert preview["calendar"] == [
        {"at": "2026-11-30T14:00:00.000Z", "change": "skipped", "name": "maintenance window"}
    ]
    for hh in (13, 14, 15):
        run_until(aws, clock, hh)
    assert history(trigger["id"]) == [
        ("13:00", "succeeded", None),
        ("14:00", "skipped", "maintenance window"),
        ("15:00", "succeeded", None),
    ]


def test_an_undone_skip_runs_its_slot(aws, api, clock):
    trigger = hourly(api)
    path = f"/v1/triggers/{trigger['id']}/skip"
    api.call("POST", path, {"slot": "2026-11-30T13:00:00Z", "reason": "x"})
    answer = api.call("DELETE", f"{path}/2026-11-30T13%3A00%3A00Z")
    assert answer.status == 200, answer.body
    assert run_until(aws, clock, 13) == ["succeeded"]
    assert api.call("DELETE", f"{path}/2026-11-30T13%3A00%3A00Z").status == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"slot": "2026-11-30T13:30:00Z"}, "slot"),  # not a slot of the schedule
        ({"slot": "2026-11-30T11:00:00Z"}, "slot"),  # passed
        ({"slot": "soon"}, "slot"),
        ({"reason": "x"}, "slot"),
        ({"slot": "2026-11-30T13:00:00Z", "reason": "x" * 201}, "reason"),
    ],
)
def test_a_bad_skip_is_a_422_naming_the_field(api, body, field):
    trigger = hourly(api)
    answer = api.call("POST", f"/v1/triggers/{trigger['id']}/skip", body)
    assert (answer.status, answer.body["error"]["field"]) == (422, field)


def test_an_extra_run_fires_once_at_its_instant_with_its_payload(aws, api, clock):
    trigger = api.create_trigger({"workflow": "echo", "schedule": {"cron": "0 15 * * *"}})
    answer = api.call(
        "POST",
        f"/v1/triggers/{trigger['id']}/extra",
        {"at": "2026-11-30T13:30:00Z", "payload": {"why": "hotfix"}},
    )
    assert answer.status == 200, answer.body
    assert answer.body["next_fire_at"] == "2026-11-30T13:30:00.000Z"
    preview = api.call("GET", f"/v1/triggers/{trigger['id']}/preview?count=2").body
    assert preview["fires"] == ["2026-11-30T13:30:00.000Z", "2026-11-30T15:00:00.000Z"]
    assert preview["calendar"][0]["change"] == "extra"
    assert run_until(aws, clock, 13, 30) == ["succeeded"]
    (run,) = runs_of(trigger["id"])
    assert run.run_id == schedule_run_id(trigger["id"], int(at(13, 30).timestamp() * 1000))
    assert '"why": "hotfix"' in (run.output or "")
    assert api.call("GET", f"/v1/triggers/{trigger['id']}").body["next_fire_at"] == (
        "2026-11-30T15:00:00.000Z"
    )


def test_a_past_extra_or_one_on_an_event_trigger_is_a_422(api):
    trigger = hourly(api)
    past = api.call("POST", f"/v1/triggers/{trigger['id']}/extra", {"at": "2026-11-30T11:00:00Z"})
    assert (past.status, past.body["error"]["field"]) == (422, "at")
    hook = api.create_trigger({"workflow": "echo", "event": {"source": "webhook"}})
    answer = api.call("POST", f"/v1/triggers/{hook['id']}/extra", {"at": "2026-12-01T11:00:00Z"})
    assert (answer.status, answer.body["error"]["field"]) == (422, "schedule")


def test_exceptions_keep_the_tenant_wall(api):
    trigger = hourly(api)
    api.make_key("other", "operator", tenant="other")
    body = {"slot": "2026-11-30T13:00:00Z"}
    assert api.call("POST", f"/v1/triggers/{trigger['id']}/skip", body, key="other").status == 404
    extra = {"at": "2026-11-30T13:30:00Z"}
    assert api.call("POST", f"/v1/triggers/{trigger['id']}/extra", extra, key="other").status == 404


def test_an_at_trigger_with_after_fire_delete_is_gone_once_its_run_succeeded(aws, api, clock):
    trigger = api.create_trigger(
        {"workflow": "echo", "schedule": {"at": "2026-11-30T13:00:00Z"}, "after_fire": "delete"}
    )
    assert trigger["after_fire"] == "delete"
    assert run_until(aws, clock, 13) == ["succeeded"]
    assert api.call("GET", f"/v1/triggers/{trigger['id']}").status == 404
    assert [r.status for r in runs_of(trigger["id"])] == ["succeeded"]


def test_an_at_trigger_whose_run_failed_is_kept_disabled_not_deleted(aws, api, clock):
    trigger = api.create_trigger(
        {"workflow": "fail", "schedule": {"at": "2026-11-30T13:00:00Z"}, "after_fire": "delete"}
    )
    assert run_until(aws, clock, 13) == ["failed"]
    kept = api.call("GET", f"/v1/triggers/{trigger['id']}").body
    assert kept["status"] == "disabled"


def test_after_fire_delete_is_only_for_an_at_trigger(api):
    answer = api.call(
        "POST",
        "/v1/triggers",
        {"workflow": "echo", "schedule": {"cron": "0 9 * * *"}, "after_fire": "delete"},
    )
    assert (answer.status, answer.body["error"]["field"]) == (422, "after_fire")
