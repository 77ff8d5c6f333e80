"""A provider that removes the webhook (or uninstalls the app) disables its trigger: source_gone.

The signal is a signed delivery: GitHub's ``meta`` event with ``action: deleted``, Slack's
``app_uninstalled`` event, Shopify's ``app/uninstalled`` topic. The trigger shows why,
the audit log says who (``system``), and later deliveries are 410 like any disabled trigger.
"""

from __future__ import annotations

import json

import pytest

from chalicelib.domain import filters
from chalicelib.services import audit, triggers
from chalicelib.store.models import EventModel
from tests.functional.test_ingress import http, make_trigger, now_s, post  # noqa: F401
from tests.signing import ISSUED_SECRETS, delivery_body, signed_headers

GONE = {
    "github": (
        {"action": "deleted", "hook_id": 42, "hook": {"type": "Repository", "active": True}},
        {"X-GitHub-Event": "meta"},
    ),
    "slack": (
        {
            "type": "event_callback",
            "event_id": "Ev_gone",
            "event": {"type": "app_uninstalled"},
        },
        {},
    ),
    "shopify": ({"id": 548380009, "name": "Super Toys"}, {"X-Shopify-Topic": "app/uninstalled"}),
}


def _secret(source: str, created: dict) -> str:
    return ISSUED_SECRETS.get(source) or created["webhook"]["secret"]


@pytest.mark.parametrize("source", sorted(GONE))
def test_the_providers_goodbye_disables_the_trigger_with_source_gone(
    http,  # noqa: F811
    root,
    clock,
    source,
):
    created = make_trigger(root, clock, source)
    doc, extra = GONE[source]
    body = json.dumps(doc).encode()
    headers = {
        **signed_headers(source, _secret(source, created), body, ts=now_s(clock), delivery="bye"),
        **extra,
    }
    status, answer = post(http, created, body, headers)
    assert (status, answer) == (202, {"event_id": None, "run_id": None, "ignored": "source_gone"})
    view = triggers.get_trigger_view(root, created["id"])
    assert (view["status"], view["disabled_reason"]) == ("disabled", "source_gone")
    assert list(EventModel.scan()) == []  # nothing stored, nothing to run
    (entry,) = [
        e
        for e in audit.list_audit(root, {"trigger_id": created["id"]})["items"]
        if e["action"] == "disable"
    ]
    assert entry["actor"] == "system" and entry["detail"]["reason"] == "source_gone"
    # Whatever comes after is answered like any disabled trigger's delivery.
    later = delivery_body(source, "after")
    status, _ = post(
        http,
        created,
        later,
        signed_headers(source, _secret(source, created), later, ts=now_s(clock)),
    )
    assert status == 410


def test_an_unsigned_goodbye_changes_nothing(http, root, clock):  # noqa: F811
    created = make_trigger(root, clock, "github")
    doc, extra = GONE["github"]
    body = json.dumps(doc).encode()
    status, answer = post(
        http, created, body, {"X-Hub-Signature-256": "sha256=" + "0" * 64, **extra}
    )
    assert status == 401 and answer["error"]["code"] == "invalid_signature"
    assert triggers.get_trigger_view(root, created["id"])["status"] == "active"


@pytest.mark.parametrize(
    ("source", "headers", "doc"),
    [
        ("github", {"X-GitHub-Event": "meta"}, {"action": "created"}),
        ("github", {"X-GitHub-Event": "push"}, {"action": "deleted"}),
        ("slack", {}, {"type": "event_callback", "event": {"type": "app_mention"}}),
        ("shopify", {"X-Shopify-Topic": "orders/paid"}, {}),
        ("stripe", {}, {"type": "account.application.deauthorized"}),
        ("webhook", {}, {"type": "app_uninstalled"}),
    ],
)
def test_other_deliveries_are_not_a_goodbye(source, headers, doc):
    assert filters.source_gone(source, headers=headers, body_json=doc) is None


def test_goodbyes_are_recognised_whatever_the_header_case():
    assert filters.source_gone(
        "github", headers={"x-github-event": "meta"}, body_json={"action": "deleted"}
    )
    assert filters.source_gone(
        "shopify", headers={"X-SHOPIFY-TOPIC": "app/uninstalled"}, body_json={}
    )
