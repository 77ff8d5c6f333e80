"""The audit log: every change with actor, time and trigger; newest first; never a secret."""

from __future__ import annotations

import json

import pytest

import app as app_module
from chalicelib.services import audit
from chalicelib.store.audit import AuditModel
from devstack.gateway import contract_client as Client
from tests.functional.api_client import Api


@pytest.fixture
def api(aws):
    with Client(app_module.app, stage_name="test") as client:
        yield Api(client)


def test_every_change_is_logged_with_actor_time_and_trigger_newest_first(api):
    ops = api.make_key("ops", "operator")
    trigger = api.create_trigger(key="ops")
    tid = trigger["id"]
    assert api.call("PATCH", f"/v1/triggers/{tid}", {"title": "t"}, key="ops").status == 200
    assert api.call("POST", f"/v1/triggers/{tid}/disable", key="ops").status == 200
    assert api.call("POST", f"/v1/triggers/{tid}/enable", key="ops").status == 200
    assert api.call("POST", f"/v1/triggers/{tid}/fire", key="ops").status == 202
    assert api.call("DELETE", f"/v1/triggers/{tid}", key="ops").status == 204

    entries = api.call("GET", f"/v1/audit?trigger_id={tid}").body["items"]
    assert [e["action"] for e in entries] == [
        "delete",
        "fire",
        "enable",
        "disable",
        "update",
        "create",
    ]
    assert {e["actor"] for e in entries} == {ops["id"]}
    assert {e["trigger_id"] for e in entries} == {tid}
    stamps = [e["at"] for e in entries]
    assert stamps == sorted(stamps, reverse=True)
    assert all(s.endswith("Z") for s in stamps)
    assert entries[4]["detail"]["changes"]["title"] == {"from": None, "to": "t"}
    assert entries[1]["detail"]["run_id"].startswith(tid)


def test_audit_never_holds_a_secret(api):
    created = api.create_trigger(
        {"workflow": "echo", "event": {"source": "stripe", "secret": "whsec_given_by_stripe"}}
    )
    rotated = api.call(
        "POST",
        f"/v1/triggers/{created['id']}/rotate-secret",
        {"secret": "whsec_rotated_by_stripe"},
    )
    assert rotated.status == 200, rotated.body
    key = api.make_key("k", "admin")
    dump = json.dumps([e.attribute_values for e in AuditModel.scan()], default=str)
    for secret in ("whsec_given_by_stripe", "whsec_rotated_by_stripe", key["key"]):
        assert secret not in dump
    actions = {e["action"] for e in api.call("GET", "/v1/audit").body["items"]}
    assert {"create", "create_key"} <= actions
    assert any(a.startswith("rotate") for a in actions)


def test_audit_pages_and_filters(api):
    trigger = api.create_trigger()
    for n in range(4):
        api.call("PATCH", f"/v1/triggers/{trigger['id']}", {"title": f"t{n}"})
    other = api.create_trigger()
    pages, cursor = [], None
    while True:
        answer = api.call(
            "GET",
            f"/v1/audit?trigger_id={trigger['id']}&limit=2"
            + (f"&cursor={cursor}" if cursor else ""),
        ).body
        pages.append([e["action"] for e in answer["items"]])
        cursor = answer["next_cursor"]
        if not cursor:
            break
    assert pages == [["update", "update"], ["update", "update"], ["create"]]
    only_other = api.call("GET", f"/v1/audit?trigger_id={other['id']}").body["items"]
    assert [e["action"] for e in only_other] == ["create"]
    assert api.call("GET", "/v1/audit?limit=0").error["field"] == "limit"
    assert api.call("GET", "/v1/audit?cursor=bm9wZQ").error["field"] == "cursor"


def test_audit_is_per_tenant(api):
    trigger = api.create_trigger()
    key = api.make_key("acme", "admin", tenant="acme")
    acme = api.call("GET", "/v1/audit", key="acme").body["items"]
    # acme sees its own key being made (by root), and nothing of the first tenant.
    assert [(e["action"], e["detail"]["key_id"]) for e in acme] == [("create_key", key["id"])]
    assert trigger["id"] not in json.dumps(acme)


@pytest.mark.parametrize(
    ("detail", "expected"),
    [
        ({"secret": "s", "role": "admin"}, {"secret": "[redacted]", "role": "admin"}),
        (
            {"event": {"signing_secret": "s", "source": "x"}},
            {"event": {"signing_secret": "[redacted]", "source": "x"}},
        ),
        (
            {"items": [{"api_key": "k"}, {"token": "t"}]},
            {"items": [{"api_key": "[redacted]"}, {"token": "[redacted]"}]},
        ),
        ({"key_id": "key_1", "secret": None}, {"key_id": "key_1", "secret": None}),
    ],
)
def test_details_are_scrubbed_of_anything_named_like_a_secret(detail, expected):
    assert audit.scrub(detail) == expected
