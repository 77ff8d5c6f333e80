"""API keys: shown once, stored hashed, tenant-scoped; and run as creator (creator_gone)."""

from __future__ import annotations

import hashlib
import json

import pytest

import app as app_module
from chalicelib import assembly
from chalicelib.observability import metric_counts
from chalicelib.services import triggers
from chalicelib.services.auth import Principal
from chalicelib.store.audit import AuditModel
from chalicelib.store.keys import KeyModel
from devstack.gateway import contract_client as Client
from tests.functional.api_client import Api


@pytest.fixture
def api(aws):
    with Client(app_module.app, stage_name="test") as client:
        yield Api(client)


def test_key_is_shown_once_stored_only_as_its_sha256_and_works_with_its_role(api):
    created = api.make_key("ops", "operator")
    assert set(created) >= {"id", "key", "tenant", "role", "created_at"}
    assert (created["tenant"], created["role"], created["created_by"]) == (
        "local",
        "operator",
        "root",
    )
    stored = KeyModel.get(created["id"])
    assert stored.key_hash == hashlib.sha256(created["key"].encode()).hexdigest()
    assert created["key"] not in json.dumps(stored.attribute_values, default=str)
    listed = api.call("GET", "/v1/keys")
    assert listed.status == 200
    assert [k["id"] for k in listed.body["items"]] == [created["id"]]
    assert "key" not in listed.body["items"][0] and "key_hash" not in listed.body["items"][0]
    assert api.call("GET", "/v1/triggers", key="ops").status == 200
    assert api.call("POST", "/v1/keys", {"role": "viewer"}, key="ops").status == 403


def test_deleted_key_stops_authenticating_at_once(api):
    created = api.make_key("gone", "admin")
    assert api.call("GET", "/v1/keys", key="gone").status == 200
    assert api.call("DELETE", f"/v1/keys/{created['id']}").status == 204
    answer = api.call("GET", "/v1/keys", key="gone")
    assert answer.status == 401 and answer.error["code"] == "unauthorized"
    assert api.call("DELETE", f"/v1/keys/{created['id']}").status == 404


def test_only_the_root_key_names_another_tenant(api):
    api.make_key("local_admin", "admin")
    refused = api.call("POST", "/v1/keys", {"role": "viewer", "tenant": "acme"}, key="local_admin")
    assert refused.status == 403 and refused.error["field"] == "tenant"
    own = api.call("POST", "/v1/keys", {"role": "viewer", "tenant": "local"}, key="local_admin")
    assert own.status == 201 and own.body["tenant"] == "local"
    acme = api.make_key("acme_admin", "admin", tenant="acme")
    assert acme["tenant"] == "acme"
    # acme's admin sees and manages acme only; the first tenant's keys are 404 to it.
    acme_list = api.call("GET", "/v1/keys", key="acme_admin").body["items"]
    assert [k["id"] for k in acme_list] == [acme["id"]]
    assert api.call("GET", "/v1/keys?tenant=local", key="acme_admin").status == 403
    assert api.call("DELETE", f"/v1/keys/{own.body['id']}", key="acme_admin").status == 404
    # The root key may list another tenant's keys.
    root_view = api.call("GET", "/v1/keys?tenant=acme").body["items"]
    assert [k["id"] for k in root_view] == [acme["id"]]


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"role": "owner"}, 422, "role"),
        ({}, 422, "role"),
        ({"role": "viewer", "scopes": ["x"]}, 422, "scopes"),
        ({"role": "viewer", "tenant": "Not A Tenant!"}, 422, "tenant"),
        ({"role": "viewer", "tenant": "x" * 65}, 422, "tenant"),
        (["viewer"], 422, None),
    ],
)
def test_bad_key_requests_are_422_naming_the_field(api, body, status, field):
    answer = api.call("POST", "/v1/keys", body)
    assert answer.status == status
    assert answer.error.get("field") == field


def test_keys_list_pages_newest_first_and_refuses_a_forged_cursor(api):
    made = [api.make_key(f"k{n}", "viewer")["id"] for n in range(5)]
    seen, cursor = [], None
    for _ in range(5):
        query = "/v1/keys?limit=2" + (f"&cursor={cursor}" if cursor else "")
        page = api.call("GET", query).body
        assert len(page["items"]) <= 2
        seen += [k["id"] for k in page["items"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert sorted(seen) == sorted(made) and len(seen) == 5
    forged = triggers.encode_cursor(
        {"id": {"S": made[0]}, "tenant": {"S": "acme"}, "created_ms": {"N": "1"}}
    )
    answer = api.call("GET", f"/v1/keys?cursor={forged}")
    assert answer.status == 422 and answer.error["field"] == "cursor"


def test_key_changes_are_audited_without_the_key(api):
    created = api.make_key("x", "operator")
    api.call("DELETE", f"/v1/keys/{created['id']}")
    entries = api.call("GET", "/v1/audit").body["items"]
    assert [e["action"] for e in entries] == ["delete_key", "create_key"]
    assert all(e["detail"]["key_id"] == created["id"] for e in entries)
    assert created["key"] not in json.dumps([e.attribute_values for e in AuditModel.scan()])


# -- run as creator ------------------------------------------------------------------------


def _operator_trigger(api: Api, clock) -> tuple[dict, dict]:
    key = api.make_key("creator", "operator")
    principal = Principal(key["id"], "local", "operator")
    trigger = triggers.create_trigger(
        principal, {"workflow": "echo", "schedule": {"interval_s": 60}}, now=clock()
    )
    assert trigger["created_by"] == key["id"]
    return key, trigger


def test_fire_after_the_creator_key_is_deleted_disables_with_creator_gone(aws, api, clock):
    key, trigger = _operator_trigger(api, clock)
    runner = assembly.build_runner(clock=clock)
    clock.advance(60)
    assembly.tick(now=clock())
    assert aws.drain(runner) == ["succeeded"]

    assert api.call("DELETE", f"/v1/keys/{key['id']}").status == 204
    clock.advance(60)
    assembly.tick(now=clock())
    assert aws.drain(runner) == ["refused"]

    view = api.call("GET", f"/v1/triggers/{trigger['id']}").body
    assert (view["status"], view["disabled_reason"]) == ("disabled", "creator_gone")
    runs = api.call("GET", f"/v1/triggers/{trigger['id']}/runs").body["items"]
    assert [r["status"] for r in runs] == ["refused", "succeeded"]
    assert "deleted or no longer has the operator role" in runs[0]["error"]
    assert metric_counts("Disables") == {(("reason", "creator_gone"),): 1}
    audit = api.call("GET", f"/v1/audit?trigger_id={trigger['id']}&action=disable").body
    assert len(audit["items"]) == 1
    assert audit["items"][0]["actor"] == "system"
    assert audit["items"][0]["detail"]["reason"] == "creator_gone"
    # It does not retry forever: later ticks find nothing to fire.
    clock.advance(600)
    assert assembly.tick(now=clock()).due == 0


def test_a_creator_demoted_below_operator_is_gone_too(aws, api, clock):
    key, trigger = _operator_trigger(api, clock)
    stored = KeyModel.get(key["id"])
    stored.update(actions=[KeyModel.role.set("viewer")])
    clock.advance(60)
    assembly.tick(now=clock())
    assert aws.drain(assembly.build_runner(clock=clock)) == ["refused"]
    view = api.call("GET", f"/v1/triggers/{trigger['id']}").body
    assert view["disabled_reason"] == "creator_gone"


def test_a_manual_fire_still_runs_as_the_creator(aws, api, clock):
    key, trigger = _operator_trigger(api, clock)
    api.call("DELETE", f"/v1/keys/{key['id']}")
    fired = api.call("POST", f"/v1/triggers/{trigger['id']}/fire")
    assert fired.status == 202
    assert aws.drain(assembly.build_runner(clock=clock)) == ["refused"]
    view = api.call("GET", f"/v1/triggers/{trigger['id']}").body
    assert view["disabled_reason"] == "creator_gone"


def test_root_created_triggers_keep_running(aws, api, clock, root):
    trigger = triggers.create_trigger(
        root, {"workflow": "echo", "schedule": {"interval_s": 60}}, now=clock()
    )
    clock.advance(60)
    assembly.tick(now=clock())
    assert aws.drain(assembly.build_runner(clock=clock)) == ["succeeded"]
    assert triggers.get_trigger_view(root, trigger["id"])["status"] == "active"
