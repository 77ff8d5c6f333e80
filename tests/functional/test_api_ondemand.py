"""Fire with a payload, pause with a note (one and many), and backfill, on the moto server."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest

import app as app_module
from chalicelib import assembly
from chalicelib.domain.errors import Conflict, ValidationError
from chalicelib.domain.ids import schedule_run_id
from chalicelib.services import ondemand, triggers
from chalicelib.store import state as state_store
from chalicelib.store import triggers as triggers_store
from chalicelib.workflows import Result, workflow
from devstack.gateway import contract_client as Client
from tests.conftest import T0
from tests.functional.api_client import Api

HOURLY = {"workflow": "echo", "schedule": {"cron": "0 * * * *"}, "tags": ["client-7"]}


@workflow("test-nan-cost")
def nan_cost(fire):
    """Reports a cost that cannot be stored."""
    return Result(state={"seen": True}, cost_usd=float(fire.payload or "nan"))


@pytest.fixture
def api(aws):
    with Client(app_module.app, stage_name="test") as client:
        api = Api(client)
        api.aws = aws
        yield api


def _runs(root, trigger_id, **params):
    return triggers.list_trigger_runs(root, trigger_id, {"limit": "200", **params})["items"]


# -- fire with a payload ---------------------------------------------------------------------


def test_fire_with_a_payload_runs_with_that_payload_and_without_one_with_the_triggers(api):
    created = api.create_trigger({**HOURLY, "payload": {"from": "trigger"}})
    given = api.call("POST", f"/v1/triggers/{created['id']}/fire", {"payload": {"n": [1, 2]}})
    assert given.status == 202, given.body
    api.aws.drain(assembly.build_runner())
    plain = api.call("POST", f"/v1/triggers/{created['id']}/fire")
    assert plain.status == 202, plain.body
    api.aws.drain(assembly.build_runner())

    first = api.call("GET", f"/v1/runs/{given.body['run_id']}").body
    second = api.call("GET", f"/v1/runs/{plain.body['run_id']}").body
    assert (first["status"], first["output"]) == ("succeeded", {"n": [1, 2]})
    assert (second["status"], second["output"]) == ("succeeded", {"from": "trigger"})


def test_a_fire_payload_is_forgotten_once_its_run_settles(aws, root, clock):
    trigger_id = triggers.create_trigger(root, HOURLY, now=clock())["id"]
    fired = triggers.fire_now(root, trigger_id, now=clock(), body={"payload": "x"})
    key = f"{fired['run_id']}#payload"
    from chalicelib.store.state import StateModel

    assert StateModel.count(key) == 1
    aws.drain(assembly.build_runner(clock=clock))
    assert StateModel.count(key) == 0


@pytest.mark.parametrize(
    ("body", "field"),
    [({"payloads": 1}, "payloads"), ([1], None), ({"payload": "x" * 70_000}, "payload")],
)
def test_a_bad_fire_body_is_a_4xx_naming_the_field(api, body, field):
    created = api.create_trigger(HOURLY)
    answer = api.call("POST", f"/v1/triggers/{created['id']}/fire", body)
    assert answer.status in (413, 422), answer.body
    assert answer.error.get("field") == field
    # Nothing was claimed: the trigger fires normally afterwards.
    assert api.call("POST", f"/v1/triggers/{created['id']}/fire").status == 202


# -- a result that cannot be stored -------------------------------------------------------


@pytest.mark.parametrize("cost", ["nan", "inf", "-inf"])
def test_a_nan_or_infinite_cost_fails_the_run_clearly_and_every_cleanup_runs(
    aws, root, clock, cost
):
    trigger_id = triggers.create_trigger(
        root,
        {
            "workflow": "test-nan-cost",
            "schedule": {"cron": "0 * * * *"},
            "serialize_key": "k",
            "limits": {"max_usd": 5, "budget_period": "day"},
        },
        now=clock(),
    )["id"]
    runner = assembly.build_runner(clock=clock)
    fired = triggers.fire_now(root, trigger_id, now=clock(), body={"payload": cost})
    assert aws.drain(runner) == ["failed"]
    run = triggers.get_run_view(root, fired["run_id"])
    assert run["status"] == "failed"
    assert "cost_usd" in run["error"] and "finite" in run["error"]
    assert math.isfinite(run["cost_usd"])
    item = triggers_store.get_trigger(trigger_id)
    assert triggers_store.in_flight_of(item) == {}  # the claim is released
    assert state_store.get_state(trigger_id) == ({}, 0)  # the bad result's state is not kept
    # The serialize key and the budget hold are released too: the next run goes through.
    again = triggers.fire_now(root, trigger_id, now=clock(), body={"payload": "0.25"})
    assert aws.drain(runner) == ["succeeded"]
    assert triggers.get_run_view(root, again["run_id"])["cost_usd"] == 0.25


# -- pause with a note ----------------------------------------------------------------------


def test_pause_with_a_note_shows_who_when_and_why_and_resume_clears_it(api):
    api.make_key("ops", "operator")
    created = api.create_trigger(HOURLY)
    paused = api.call(
        "POST",
        f"/v1/triggers/{created['id']}/disable",
        {"note": "client asked to stop until January"},
        key="ops",
    )
    assert paused.status == 200, paused.body
    body = paused.body
    assert (body["status"], body["disabled_reason"]) == ("disabled", "manual")
    assert body["disabled_note"] == "client asked to stop until January"
    assert body["disabled_by"].startswith("key_")
    assert body["disabled_at"].endswith("Z") and body["next_fire_at"] is None
    assert api.call("GET", f"/v1/triggers/{created['id']}").body["disabled_note"] == (
        "client asked to stop until January"
    )

    resumed = api.call("POST", f"/v1/triggers/{created['id']}/enable", key="ops")
    assert resumed.status == 200, resumed.body
    assert resumed.body["status"] == "active"
    assert (
        resumed.body["disabled_note"],
        resumed.body["disabled_by"],
        resumed.body["disabled_at"],
    ) == (None, None, None)

    entries = api.call("GET", f"/v1/audit?trigger_id={created['id']}").body["items"]
    actions = [(e["action"], (e.get("detail") or {}).get("note")) for e in entries]
    assert ("disable", "client asked to stop until January") in actions
    assert ("enable", None) in actions


def test_pause_without_a_body_still_records_who_and_when(api):
    created = api.create_trigger(HOURLY)
    paused = api.call("POST", f"/v1/triggers/{created['id']}/disable")
    assert paused.status == 200, paused.body
    assert paused.body["disabled_note"] is None
    assert paused.body["disabled_by"] == "root" and paused.body["disabled_at"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"note": "x" * 501}, "note"),
        ({"note": "a\x00b"}, "note"),
        ({"note": 5}, "note"),
        ({"reason": "x"}, "reason"),
    ],
)
def test_a_bad_pause_note_is_a_422_naming_note(api, body, field):
    created = api.create_trigger(HOURLY)
    answer = api.call("POST", f"/v1/triggers/{created['id']}/disable", body)
    assert answer.status == 422, answer.body
    assert answer.error["field"] == field
    assert "Value error" not in answer.error["message"]
    assert api.call("GET", f"/v1/triggers/{created['id']}").body["status"] == "active"


def test_pausing_a_trigger_disabled_by_failures_keeps_the_reason_and_adds_the_note(
    aws, root, clock
):
    trigger_id = triggers.create_trigger(root, HOURLY, now=clock())["id"]
    triggers_store.disable_trigger(trigger_id, reason="failures", now_ms=int(T0.timestamp() * 1000))
    view = triggers.set_enabled(
        root, trigger_id, enabled=False, now=clock(), body={"note": "looking into it"}
    )
    assert (view["disabled_reason"], view["disabled_note"]) == ("failures", "looking into it")


def test_bulk_pause_and_resume_by_tag_and_workflow_change_only_the_matching_triggers(api):
    a = api.create_trigger(HOURLY)["id"]
    b = api.create_trigger({**HOURLY, "tags": ["client-7", "eu"]})["id"]
    other = api.create_trigger({**HOURLY, "tags": ["client-8"]})["id"]
    sleeper = api.create_trigger({**HOURLY, "workflow": "sleep"})["id"]
    paused = api.call("POST", "/v1/triggers/disable", {"tag": "client-7", "note": "freeze"})
    assert paused.status == 200, paused.body
    assert paused.body["changed"] == 3
    assert sorted(paused.body["ids"]) == sorted([a, b, sleeper])
    for trigger_id in (a, b, sleeper):
        view = api.call("GET", f"/v1/triggers/{trigger_id}").body
        assert (view["status"], view["disabled_note"]) == ("disabled", "freeze")
    assert api.call("GET", f"/v1/triggers/{other}").body["status"] == "active"

    again = api.call("POST", "/v1/triggers/disable", {"tag": "client-7"})
    assert (again.body["changed"], again.body["ids"]) == (0, [])

    resumed = api.call("POST", "/v1/triggers/enable", {"tag": "client-7", "workflow": "echo"})
    assert resumed.status == 200, resumed.body
    assert sorted(resumed.body["ids"]) == sorted([a, b])
    assert api.call("GET", f"/v1/triggers/{sleeper}").body["status"] == "disabled"

    entries = api.call("GET", f"/v1/audit?trigger_id={a}").body["items"]
    assert any(e["action"] == "disable" and e["detail"].get("via") == "bulk" for e in entries)


def test_bulk_pause_never_touches_another_tenants_triggers(api):
    api.make_key("acme", "admin", tenant="acme")
    mine = api.create_trigger(HOURLY)["id"]
    answer = api.call("POST", "/v1/triggers/disable", {"tag": "client-7"}, key="acme")
    assert answer.status == 200, answer.body
    assert answer.body["changed"] == 0
    assert api.call("GET", f"/v1/triggers/{mine}").body["status"] == "active"


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/triggers/disable", {}, "tag"),
        ("/v1/triggers/disable", {"note": "x"}, "tag"),
        ("/v1/triggers/disable", {"tag": ""}, "tag"),
    ],
)
def test_a_bulk_switch_without_a_selection_is_a_422(api, path, body, field):
    answer = api.call("POST", path, body)
    assert answer.status == 422, answer.body
    assert answer.error["field"] == field


def test_a_viewer_may_not_pause_in_bulk(api):
    api.make_key("viewer", "viewer")
    answer = api.call("POST", "/v1/triggers/disable", {"tag": "t"}, key="viewer")
    assert answer.status == 403


# -- backfill ---------------------------------------------------------------------------------

WINDOW = {"from": "2026-11-01T00:00:00Z", "to": "2026-11-01T05:00:00Z"}


def _ms(text: str) -> int:
    from datetime import datetime

    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def test_a_dry_run_counts_the_slots_and_estimates_from_recent_runs(aws, root, clock):
    trigger_id = triggers.create_trigger(
        root, {**HOURLY, "payload": {"cost_usd": 0.25}}, now=clock()
    )["id"]
    for _ in range(2):
        triggers.fire_now(root, trigger_id, now=clock())
        aws.drain(assembly.build_runner(clock=clock))
    answer = ondemand.backfill(root, trigger_id, {**WINDOW, "dry_run": True}, now=clock())
    assert answer["slots"] == 6
    assert (answer["first"], answer["last"]) == (
        "2026-11-01T00:00:00.000Z",
        "2026-11-01T05:00:00.000Z",
    )
    assert answer["estimated_usd"] == pytest.approx(1.5)
    assert answer["estimate_from_runs"] == 2
    # A dry run runs nothing.
    assert [r for r in _runs(root, trigger_id) if r["surface"] == "backfill"] == []


def test_backfill_runs_every_slot_in_order_with_the_slots_own_fire_id(aws, root, clock):
    trigger_id = triggers.create_trigger(root, HOURLY, now=clock())["id"]
    answer = ondemand.backfill(root, trigger_id, WINDOW, now=clock())
    slots = [_ms(WINDOW["from"]) + h * 3_600_000 for h in range(6)]
    assert answer == {"slots": 6, "run_ids": [schedule_run_id(trigger_id, ms) for ms in slots]}

    # Concurrency 1: one slot at a time, each settle starts the next.
    live = [r for r in _runs(root, trigger_id) if r["status"] in ("queued", "running")]
    assert [r["id"] for r in live] == answer["run_ids"][:1]
    assert aws.drain(assembly.build_runner(clock=clock)) == ["succeeded"] * 6

    runs = [r for r in _runs(root, trigger_id, surface="backfill")]
    assert sorted(r["id"] for r in runs) == answer["run_ids"]
    assert all(r["surface"] == "backfill" and r["status"] == "succeeded" for r in runs)
    assert all(r["lateness_ms"] is None for r in runs)
    # State went through every slot, one after another.
    assert state_store.get_state(trigger_id)[0]["count"] == 6
    assert triggers_store.get_trigger(trigger_id).backfill_left is None


def test_a_slot_that_already_ran_is_not_run_again(aws, root, clock):
    trigger_id = triggers.create_trigger(root, HOURLY, now=clock())["id"]
    ondemand.backfill(
        root, trigger_id, {"from": WINDOW["from"], "to": "2026-11-01T02:00:00Z"}, now=clock()
    )
    assert aws.drain(assembly.build_runner(clock=clock)) == ["succeeded"] * 3
    dry = ondemand.backfill(root, trigger_id, {**WINDOW, "dry_run": True}, now=clock())
    assert (dry["slots"], dry["already_ran"], dry["first"]) == (3, 3, "2026-11-01T03:00:00.000Z")
    again = ondemand.backfill(root, trigger_id, WINDOW, now=clock())
    assert again["slots"] == 3
    assert aws.drain(assembly.build_runner(clock=clock)) == ["succeeded"] * 3
    assert len(_runs(root, trigger_id, surface="backfill")) == 6
    assert ondemand.backfill(root, trigger_id, WINDOW, now=clock()) == {"slots": 0, "run_ids": []}


def test_slots_the_heartbeat_will_fire_are_left_to_it(aws, root, clock):
    created = triggers.create_trigger(root, HOURLY, now=clock())
    # Due at 13:00; a window reaching past it covers only the slots before 13:00.
    later = clock() + timedelta(hours=3)
    dry = ondemand.backfill(
        root,
        created["id"],
        {"from": "2026-11-30T10:00:00Z", "to": "2026-11-30T14:00:00Z", "dry_run": True},
        now=later,
    )
    assert (dry["first"], dry["last"]) == ("2026-11-30T10:00:00.000Z", "2026-11-30T12:00:00.000Z")


def test_backfill_keeps_to_the_triggers_concurrency(aws, root, clock):
    trigger_id = triggers.create_trigger(root, {**HOURLY, "concurrency": 2}, now=clock())["id"]
    ondemand.backfill(root, trigger_id, WINDOW, now=clock())
    item = triggers_store.get_trigger(trigger_id)
    assert len(triggers_store.in_flight_of(item)) == 2
    assert item.backfill_left == 4
    assert aws.drain(assembly.build_runner(clock=clock)) == ["succeeded"] * 6


def test_a_slot_put_back_after_a_failed_claim_runs_when_the_run_in_flight_settled_meanwhile(
    aws, root, clock, monkeypatch
):
    # Seen in the console's e2e test: the dispatch that found the trigger full put its slot
    # back after the run in flight had settled and pulled, finding nothing to pull (the
    # slot was out of the list). Nobody was left to start it.
    trigger_id = triggers.create_trigger(root, HOURLY, now=clock())["id"]
    window = {"from": WINDOW["from"], "to": "2026-11-01T01:00:00Z"}
    answer = ondemand.backfill(root, trigger_id, window, now=clock())
    first, second = answer["run_ids"]
    real = ondemand._push_back
    settled: list[str] = []

    def settle_first_then_push_back(trigger_id_: str, slot: int) -> None:
        if not settled:  # the first run settles now, and its pull finds no slot
            settled.append(first)
            triggers_store.TriggerModel(trigger_id_).update(
                actions=[triggers_store.TriggerModel.in_flight[first].remove()]
            )
            assert ondemand.dispatch_backfill(trigger_id_, now=clock()) == 0
        real(trigger_id_, slot)

    monkeypatch.setattr(ondemand, "_push_back", settle_first_then_push_back)
    assert ondemand.dispatch_backfill(trigger_id, now=clock()) == 1
    item = triggers_store.get_trigger(trigger_id)
    assert list(triggers_store.in_flight_of(item)) == [second]


def test_a_paused_trigger_holds_its_backfill_and_resuming_carries_on(aws, root, clock):
    trigger_id = triggers.create_trigger(root, HOURLY, now=clock())["id"]
    ondemand.backfill(root, trigger_id, WINDOW, now=clock())
    triggers.set_enabled(root, trigger_id, enabled=False, now=clock(), body={"note": "hold"})
    # The run already queued is skipped (the trigger is paused); nothing else starts.
    assert aws.drain(assembly.build_runner(clock=clock)) == ["skipped"]
    assert triggers_store.get_trigger(trigger_id).backfill_left == 5
    triggers.set_enabled(root, trigger_id, enabled=True, now=clock())
    assert aws.drain(assembly.build_runner(clock=clock)) == ["succeeded"] * 5
    dry = ondemand.backfill(root, trigger_id, {**WINDOW, "dry_run": True}, now=clock())
    # The skipped slot never ran its workflow: it is still there to backfill.
    assert (dry["slots"], dry["first"]) == (1, "2026-11-01T00:00:00.000Z")


def test_backfill_stays_within_the_budget(aws, root, clock):
    trigger_id = triggers.create_trigger(
        root,
        {
            **HOURLY,
            "payload": {"cost_usd": 1.0},
            "limits": {"max_usd": 2.5, "budget_period": "total"},
        },
        now=clock(),
    )["id"]
    ondemand.backfill(root, trigger_id, WINDOW, now=clock())
    statuses = aws.drain(assembly.build_runner(clock=clock))
    assert statuses.count("succeeded") <= 3
    spent = sum(r["cost_usd"] for r in _runs(root, trigger_id))
    assert spent <= 3.0
    view = triggers.get_trigger_view(root, trigger_id)
    assert (view["status"], view["disabled_reason"]) == ("disabled", "budget")


def test_one_backfill_at_a_time(aws, root, clock):
    trigger_id = triggers.create_trigger(root, HOURLY, now=clock())["id"]
    ondemand.backfill(root, trigger_id, WINDOW, now=clock())
    with pytest.raises(Conflict, match="still running"):
        ondemand.backfill(root, trigger_id, WINDOW, now=clock())


def test_deleting_a_trigger_drops_its_pending_backfill(aws, root, clock):
    trigger_id = triggers.create_trigger(root, HOURLY, now=clock())["id"]
    ondemand.backfill(root, trigger_id, WINDOW, now=clock())
    triggers.delete_trigger(root, trigger_id, now=clock())
    assert aws.drain(assembly.build_runner(clock=clock)) == ["dropped"]
    from chalicelib.store.state import StateModel

    assert StateModel.count(f"{trigger_id}#backfill") == 0


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"from": "2026-01-01T00:00:00Z", "to": "2026-11-01T00:00:00Z"}, "to"),  # > 1,000 slots
        ({"from": "2026-11-01T05:00:00Z", "to": "2026-11-01T00:00:00Z"}, "to"),
        ({"from": "2026-11-01T00:00:00Z", "to": "2026-12-30T00:00:00Z"}, "to"),  # future
        ({"from": "2026-11-01T00:00:00", "to": "2026-11-01T05:00:00Z"}, "from"),
        ({"to": "2026-11-01T05:00:00Z"}, "from"),
        ({**WINDOW, "dry_run": "yes"}, "dry_run"),
    ],
)
def test_a_bad_backfill_window_is_a_422_naming_the_field(aws, root, clock, body, field):
    trigger_id = triggers.create_trigger(root, HOURLY, now=clock())["id"]
    with pytest.raises(ValidationError) as raised:
        ondemand.backfill(root, trigger_id, body, now=clock())
    assert raised.value.field == field


def test_backfill_through_the_api_answers_202_and_a_dry_run_200(api):
    created = api.create_trigger(HOURLY)
    path = f"/v1/triggers/{created['id']}/backfill"
    dry = api.call("POST", path, {**WINDOW, "dry_run": True})
    assert dry.status == 200, dry.body
    assert dry.body["slots"] == 6
    real = api.call("POST", path, WINDOW)
    assert real.status == 202, real.body
    assert len(real.body["run_ids"]) == 6
    api.aws.drain(assembly.build_runner())
    runs = api.call("GET", f"/v1/runs?surface=backfill&trigger_id={created['id']}").body
    assert len(runs["items"]) == 6
    too_many = api.call(
        "POST", path, {"from": "2025-01-01T00:00:00Z", "to": "2025-03-01T00:00:00Z"}
    )
    assert too_many.status == 422 and too_many.error["field"] == "to"
    assert "1,000" in too_many.error["message"]


def test_an_event_trigger_cannot_be_backfilled(aws, root, clock):
    trigger_id = triggers.create_trigger(
        root, {"workflow": "echo", "event": {"source": "webhook"}}, now=clock()
    )["id"]
    with pytest.raises(ValidationError, match="event trigger"):
        ondemand.backfill(root, trigger_id, WINDOW, now=clock())


@pytest.fixture
def switch_reset():
    from chalicelib.services import switch

    switch.set_override(None)
    switch._cache.clear()
    yield switch
    switch.set_override(None)
    switch._cache.clear()


def test_a_backfill_waits_for_the_switch_instead_of_skipping_its_slots(
    aws, root, clock, switch_reset
):
    from chalicelib.domain.errors import ServiceUnavailable

    trigger_id = triggers.create_trigger(root, HOURLY, now=clock())["id"]
    switch_reset.set_override(False)
    with pytest.raises(ServiceUnavailable, match="switched off"):
        ondemand.backfill(root, trigger_id, WINDOW, now=clock())
    assert (
        ondemand.backfill(root, trigger_id, {**WINDOW, "dry_run": True}, now=clock())["slots"] == 6
    )

    switch_reset.set_override(None)
    ondemand.backfill(root, trigger_id, WINDOW, now=clock())
    switch_reset.set_override(False)  # switched off mid-backfill: the queued slot waits
    runner = assembly.build_runner(clock=clock)
    messages = aws.receive()
    from chalicelib.store.sqs import FireMessage

    assert [runner.handle(FireMessage.parse(m["Body"])) for m in messages] == ["deferred"]
    aws.delete(messages)
    assert _runs(root, trigger_id, surface="backfill", status="skipped") == []
    switch_reset.set_override(None)
    assert aws.drain(runner) == ["succeeded"] * 6


def test_a_lost_backfill_run_is_recorded_as_backfill_and_the_next_slot_still_runs(aws, root, clock):
    from chalicelib.settings import get_settings

    trigger_id = triggers.create_trigger(root, HOURLY, now=clock())["id"]
    answer = ondemand.backfill(
        root, trigger_id, {"from": WINDOW["from"], "to": "2026-11-01T01:00:00Z"}, now=clock()
    )
    aws.delete(aws.receive())  # the runner that took the first slot died
    # The reaper looks when the trigger is next due (13:00), well after the lease ran out:
    # the runner claiming that slot finds the dead claim and reaps it first.
    clock.advance(max(get_settings().lease_s + 120, 3700))
    assembly.tick(now=clock())
    statuses = aws.drain(assembly.build_runner(clock=clock))
    lost = triggers.get_run_view(root, answer["run_ids"][0])
    assert (lost["status"], lost["surface"]) == ("lost", "backfill")
    assert "succeeded" in statuses
    assert triggers.get_run_view(root, answer["run_ids"][1])["status"] == "succeeded"
