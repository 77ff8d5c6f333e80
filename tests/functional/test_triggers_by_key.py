"""PUT/GET/DELETE /v1/triggers/by-key/{key}: create or update in place, drift, the key's
uniqueness (a conditional write, raced on threads against the moto server).

T0 is Monday 2026-11-30 12:00 UTC; the routes read the test's clock.
"""

from __future__ import annotations

import threading

import pytest
from chalice.test import Client

import app as app_module
from chalicelib import assembly
from chalicelib.services import triggers
from chalicelib.services.auth import Principal
from chalicelib.services.events.rotation import secrets_of
from chalicelib.services.triggers import by_key
from chalicelib.store import trigger_keys
from chalicelib.store import triggers as triggers_store
from chalicelib.store.runs import RunModel
from tests.functional.api_client import Api

WEEKLY = {
    "workflow": "echo",
    "title": "Weekly report",
    "tags": ["client-7"],
    "schedule": {"cron": "0 8 * * 1", "timezone": "Europe/Berlin"},
    "state": {"count": 0},
    "managed_by": "apply",
}


@pytest.fixture
def api(aws, clock, monkeypatch):
    monkeypatch.setattr("chalicelib.routes.resource.now_utc", clock)
    with Client(app_module.app, stage_name="test") as client:
        yield Api(client)


def put(api, name, body, **kw):
    return api.call("PUT", f"/v1/triggers/by-key/{name}", body, **kw)


def tenant_trigger_ids(tenant="local"):
    from chalicelib.store import trigger_reads

    return list(trigger_reads.tenant_trigger_ids(tenant))


def test_a_put_creates_then_the_same_body_again_changes_nothing(api):
    created = put(api, "weekly-report", WEEKLY)
    assert created.status == 201, created.body
    assert created.body["key"] == "weekly-report"
    assert created.body["managed_by"] == "apply"
    assert created.body["changed"] is True
    again = put(api, "weekly-report", WEEKLY)
    assert again.status == 200, again.body
    assert again.body["changed"] is False
    assert again.body["changes"] == {}
    assert again.body["id"] == created.body["id"]
    assert again.body["version"] == created.body["version"]
    # The same trigger spelled differently (defaults written out, the body's key) is the same.
    spelled = {
        **WEEKLY,
        "key": "weekly-report",
        "overlap": "skip",
        "concurrency": 1,
        "schedule": {**WEEKLY["schedule"], "dst": None},
        "limits": {"max_failures": 5},
    }
    assert put(api, "weekly-report", spelled).body["changed"] is False
    assert tenant_trigger_ids() == [created.body["id"]]


def test_a_cadence_change_updates_in_place_keeping_state_and_runs(api, aws, clock):
    body = {**WEEKLY, "schedule": {"interval_s": 3600}}
    created = put(api, "hourly", body).body
    runner = assembly.build_runner(clock=clock)
    clock.advance(3600)
    assert assembly.tick(now=clock()).due == 1
    assert aws.drain(runner) == ["succeeded"]
    clock.advance(60)
    changed = put(api, "hourly", {**body, "schedule": {"interval_s": 7200}})
    assert changed.status == 200, changed.body
    assert changed.body["changed"] is True
    assert changed.body["changes"] == {"schedule.interval_s": {"from": 3600, "to": 7200}}
    assert changed.body["id"] == created["id"]
    assert changed.body["state"] == {"count": 1}  # kept: the file's state is the initial one
    assert changed.body["next_fire_at"] == "2026-11-30T15:00:00.000Z"
    assert [r.run_id for r in RunModel.query(created["id"])] != []


def test_a_webhook_trigger_keeps_its_secret_when_its_filter_changes(api, clock):
    body = {"workflow": "echo", "event": {"source": "github", "filter": {"branch": "main"}}}
    created = put(api, "deploys", body)
    assert created.status == 201
    secret = created.body["webhook"]["secret"]
    changed = put(
        api, "deploys", {**body, "event": {"source": "github", "filter": {"branch": "x"}}}
    )
    assert changed.body["changes"] == {"event.filter.branch": {"from": "main", "to": "x"}}
    assert "webhook" not in changed.body  # the secret is shown once, on create
    item = triggers_store.get_trigger(created.body["id"])
    assert secrets_of(item, now=clock())[0] == secret


def test_a_provider_secret_that_changed_in_the_file_is_rotated_in(api, clock):
    body = {"workflow": "echo", "event": {"source": "stripe", "secret": "whsec_first_secret"}}
    created = put(api, "payments", body).body
    assert put(api, "payments", body).body["changed"] is False
    rotated = {"workflow": "echo", "event": {"source": "stripe", "secret": "whsec_second_one"}}
    answer = put(api, "payments", rotated).body
    assert answer["changed"] is True and "event.secret" in answer["changes"]
    assert "whsec" not in str(answer["changes"])
    opened = secrets_of(triggers_store.get_trigger(created["id"]), now=clock())
    assert opened[0] == "whsec_second_one"
    assert "whsec_first_secret" in opened  # the old one verifies for the grace period


def test_get_and_delete_by_key_and_the_key_is_free_again(api):
    created = put(api, "nightly", WEEKLY).body
    got = api.call("GET", "/v1/triggers/by-key/nightly")
    assert got.status == 200 and got.body["id"] == created["id"]
    assert api.call("DELETE", "/v1/triggers/by-key/nightly").status == 204
    assert api.call("GET", "/v1/triggers/by-key/nightly").status == 404
    assert api.call("DELETE", "/v1/triggers/by-key/nightly").status == 404
    again = put(api, "nightly", WEEKLY)
    assert again.status == 201 and again.body["id"] != created["id"]


def test_deleting_a_keyed_trigger_by_id_frees_its_key(api):
    created = put(api, "nightly", WEEKLY).body
    assert api.call("DELETE", f"/v1/triggers/{created['id']}").status == 204
    assert trigger_keys.reservation("local", "nightly") is None
    assert put(api, "nightly", WEEKLY).status == 201


def test_keys_are_per_tenant_and_another_tenants_key_is_not_found(api):
    api.make_key("other", "operator", tenant="other")
    mine = put(api, "shared-name", WEEKLY).body
    assert api.call("GET", "/v1/triggers/by-key/shared-name", key="other").status == 404
    assert api.call("DELETE", "/v1/triggers/by-key/shared-name", key="other").status == 404
    theirs = put(api, "shared-name", WEEKLY, key="other")
    assert theirs.status == 201 and theirs.body["id"] != mine["id"]
    assert api.call("GET", "/v1/triggers/by-key/shared-name").body["id"] == mine["id"]


def test_a_patch_of_a_managed_trigger_is_kept_with_a_warning_and_shows_as_drift(api):
    created = put(api, "weekly", WEEKLY).body
    patched = api.call("PATCH", f"/v1/triggers/{created['id']}", {"title": "Edited by hand"})
    assert patched.status == 200
    assert patched.body["title"] == "Edited by hand"
    assert any("managed by apply" in w for w in patched.body["warnings"])
    assert patched.body["drift"]["fields"] == ["title"]
    assert api.call("GET", "/v1/triggers/by-key/weekly").body["drift"]["fields"] == ["title"]
    plan = api.call("POST", "/v1/triggers/by-key/weekly/plan", WEEKLY)
    assert plan.status == 200, plan.body
    assert plan.body["action"] == "update"
    assert plan.body["changes"] == {"title": {"from": "Edited by hand", "to": "Weekly report"}}
    assert plan.body["trigger"]["drift"]["fields"] == ["title"]
    applied = put(api, "weekly", WEEKLY).body
    assert applied["changed"] is True and applied["title"] == "Weekly report"
    assert applied["drift"] is None


def test_a_patch_of_an_unmanaged_trigger_has_no_drift(api):
    created = api.create_trigger()
    patched = api.call("PATCH", f"/v1/triggers/{created['id']}", {"title": "x"})
    assert patched.body["drift"] is None and patched.body["warnings"] == []


def test_the_plan_of_a_new_key_is_a_create_and_writes_nothing(api):
    plan = api.call("POST", "/v1/triggers/by-key/new-one/plan", WEEKLY)
    assert plan.status == 200 and plan.body["action"] == "create"
    assert trigger_keys.reservation("local", "new-one") is None
    assert tenant_trigger_ids() == []


@pytest.mark.parametrize(
    ("key", "body", "field"),
    [
        ("Bad_Key", WEEKLY, "key"),
        ("-starts-with-dash", WEEKLY, "key"),
        ("ok", {**WEEKLY, "cadence": "weekly"}, "cadence"),
        ("ok", {**WEEKLY, "key": "other"}, "key"),
        ("ok", {**WEEKLY, "managed_by": "Not Valid"}, "managed_by"),
        ("ok", {**WEEKLY, "schedule": {"cron": "99 * * * *"}}, "schedule.cron"),
        ("ok", {**WEEKLY, "workflow": "no-such-workflow"}, "workflow"),
    ],
)
def test_bad_input_is_a_422_naming_the_field_and_nothing_is_written(api, key, body, field):
    answer = put(api, key, body)
    assert answer.status == 422, answer.body
    assert answer.error["field"] == field
    assert tenant_trigger_ids() == []
    if key == "ok":
        assert trigger_keys.reservation("local", "ok") is None


def test_a_change_that_cannot_be_made_in_place_is_refused_naming_the_field(api):
    put(api, "weekly", WEEKLY)
    hook = {"workflow": "echo", "event": {"source": "webhook"}}
    answer = put(api, "weekly", hook)
    assert answer.status == 422 and answer.error["field"] == "schedule"
    s3 = {"workflow": "echo", "event": {"source": "github"}}
    put(api, "hook", s3)
    answer = put(
        api, "hook", {"workflow": "echo", "event": {"source": "stripe", "secret": "x" * 9}}
    )
    assert answer.status == 422 and answer.error["field"] == "event.source"


def test_concurrent_puts_of_one_key_make_one_trigger(aws, clock):
    root = Principal("root", "local", "admin")
    answers: list = []
    start = threading.Barrier(6)

    def one() -> None:
        start.wait()
        try:
            answers.append(by_key.put_trigger(root, "raced", WEEKLY, now=clock())[0])
        except Exception as exc:  # a 409 "being created" is a fair answer
            answers.append(type(exc).__name__)

    threads = [threading.Thread(target=one) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers.count(201) == 1, answers
    assert set(answers) <= {201, 200, "Conflict"}, answers
    assert len(tenant_trigger_ids()) == 1


def test_a_reservation_left_by_a_dead_create_is_taken_over_after_its_grace(aws, clock):
    root = Principal("root", "local", "admin")
    now_ms = int(clock().timestamp() * 1000)
    assert trigger_keys.reserve("local", "orphan", trigger_id="trg_dead", now_ms=now_ms)
    with pytest.raises(Exception, match="being created"):
        by_key.put_trigger(root, "orphan", WEEKLY, now=clock())
    clock.advance(by_key.RESERVATION_GRACE_MS / 1000 + 1)
    status, body = by_key.put_trigger(root, "orphan", WEEKLY, now=clock())
    assert status == 201
    assert trigger_keys.reservation("local", "orphan").trigger_id == body["id"]


def test_a_create_that_fails_after_the_reservation_gives_the_key_back(aws, clock, monkeypatch):
    root = Principal("root", "local", "admin")

    def broken(*args, **kwargs):
        raise RuntimeError("the table is gone")

    monkeypatch.setattr(by_key, "create_trigger", broken)
    with pytest.raises(RuntimeError):
        by_key.put_trigger(root, "fragile", WEEKLY, now=clock())
    assert trigger_keys.reservation("local", "fragile") is None
    monkeypatch.undo()
    assert triggers.put_trigger(root, "fragile", WEEKLY, now=clock())[0] == 201
