"""A provider that removes the webhook (or uninstalls the app) disables its trigger: source_gone.

The signal is a signed delivery: GitHub's ``meta`` event with ``action: deleted``, Slack's
``app_uninstalled`` event, Shopify's ``app/uninstalled`` topic. The trigger shows why,
the audit log says who (``system``), and later deliveries are 410 like any disabled trigger.
"""

from __future__ import annotations

import json

import pytest

from chalicelib.domain import filters
from chalicelib.services import audit, events, triggers
from chalicelib.store.events import EventModel
from tests.scenarios import now_s, post, source_trigger
from tests.signing import ISSUED_SECRETS, delivery_body, signed_headers

# Shopify's app/uninstalled body is the shop (its docs' sample, trimmed): the same shape
# as shop/update's, which is why the topic header alone can never make a goodbye.
SHOP = {
    "id": 548380009,
    "name": "Super Toys",
    "email": "super@supertoys.com",
    "domain": None,
    "myshopify_domain": "super-toys.myshopify.com",
    "shop_owner": "John Smith",
    "plan_name": "enterprise",
}
GONE = {
    "github": (
        {
            "action": "deleted",
            "hook_id": 42,
            "hook": {"type": "Repository", "id": 42, "active": True, "events": ["push"]},
            "repository": {"full_name": "acme/widgets"},
        },
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
    "shopify": (SHOP, {"X-Shopify-Topic": "app/uninstalled"}),
}
# Every header a provider does not sign, changed as a replayer would.
UNSIGNED_CHANGED = {
    "Idempotency-Key": "fresh-key-1",
    "X-GitHub-Delivery": "11111111-2222-3333-4444-555555555555",
    "X-Shopify-Webhook-Id": "99999999-aaaa-bbbb-cccc-dddddddddddd",
    "X-Slack-Retry-Num": "1",
    "User-Agent": "replayer/1.0",
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
    created = source_trigger(root, clock, source)
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
    # Nothing to run: no event listed, no run; only the mark that remembers the goodbye.
    assert events.list_events(root, created["id"], {})["items"] == []
    assert triggers.list_trigger_runs(root, created["id"], {})["items"] == []
    (mark,) = EventModel.scan()
    assert (mark.status, mark.body, mark.body_s3_key, mark.run_id) == ("ignored", None, None, None)
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
    created = source_trigger(root, clock, "github")
    doc, extra = GONE["github"]
    body = json.dumps(doc).encode()
    status, answer = post(
        http, created, body, {"X-Hub-Signature-256": "sha256=" + "0" * 64, **extra}
    )
    assert status == 401 and answer["error"]["code"] == "invalid_signature"
    assert triggers.get_trigger_view(root, created["id"])["status"] == "active"


@pytest.mark.parametrize("source", sorted(GONE))
def test_a_replayed_goodbye_never_disables_a_trigger_enabled_again(
    http,  # noqa: F811
    root,
    clock,
    source,
):
    created = source_trigger(root, clock, source)
    doc, extra = GONE[source]
    body = json.dumps(doc).encode()
    captured = {
        **signed_headers(source, _secret(source, created), body, ts=now_s(clock), delivery="bye"),
        **extra,
    }
    assert post(http, created, body, captured)[1]["ignored"] == "source_gone"
    triggers.set_enabled(root, created["id"], enabled=True, now=clock())
    clock.advance(60)  # inside Slack's 300 s window: only the dedupe can stop it
    status, answer = post(http, created, body, {**captured, **UNSIGNED_CHANGED})
    assert (status, answer) == (200, {"event_id": None, "run_id": None, "duplicate": True})
    assert triggers.get_trigger_view(root, created["id"])["status"] == "active"


def _deliver(http, created, source, doc, headers, clock):  # noqa: F811
    body = json.dumps(doc).encode()
    signed = signed_headers(source, _secret(source, created), body, ts=now_s(clock), delivery="d1")
    return body, signed, post(http, created, body, {**signed, **headers})


@pytest.mark.parametrize(
    ("source", "doc", "first", "forged"),
    [
        # A captured order, sent again as if it were the uninstall.
        (
            "shopify",
            {"id": 820982911946154508, "financial_status": "paid"},
            {"X-Shopify-Topic": "orders/paid"},
            {"X-Shopify-Topic": "app/uninstalled"},
        ),
        # A captured shop/update: the very body an uninstall carries, another topic.
        (
            "shopify",
            SHOP,
            {"X-Shopify-Topic": "shop/update"},
            {"X-Shopify-Topic": "app/uninstalled"},
        ),
        # Any signed body with "action": "deleted" under the meta event header.
        (
            "github",
            {"action": "deleted", "label": {"name": "bug"}},
            {"X-GitHub-Event": "label"},
            {"X-GitHub-Event": "meta"},
        ),
        ("github", GONE["github"][0], {"X-GitHub-Event": "ping"}, {"X-GitHub-Event": "meta"}),
    ],
)
def test_a_captured_delivery_under_a_goodbye_header_is_a_duplicate_and_disables_nothing(
    http,  # noqa: F811
    root,
    clock,
    source,
    doc,
    first,
    forged,
):
    created = source_trigger(root, clock, source)
    body, signed, (status, answer) = _deliver(http, created, source, doc, first, clock)
    assert status == 202 and answer["event_id"], answer
    status, again = post(http, created, body, {**signed, **UNSIGNED_CHANGED, **forged})
    assert (status, again) == (200, {**answer, "duplicate": True})
    assert triggers.get_trigger_view(root, created["id"])["status"] == "active"


@pytest.mark.parametrize(
    ("source", "doc", "forged"),
    [
        ("shopify", {"id": 1, "financial_status": "paid"}, {"X-Shopify-Topic": "app/uninstalled"}),
        ("github", {"action": "deleted", "label": {"name": "x"}}, {"X-GitHub-Event": "meta"}),
    ],
)
def test_a_signed_body_that_is_no_goodbye_never_disables_whatever_its_headers(
    http,  # noqa: F811
    root,
    clock,
    source,
    doc,
    forged,
):
    created = source_trigger(root, clock, source)
    _, _, (status, answer) = _deliver(http, created, source, doc, forged, clock)
    assert status == 202 and answer["event_id"], answer  # an ordinary event
    assert triggers.get_trigger_view(root, created["id"])["status"] == "active"


def test_a_filtered_out_shop_body_sent_again_as_app_uninstalled_is_a_duplicate(
    http,  # noqa: F811
    root,
    clock,
):
    created = source_trigger(root, clock, "shopify", filter={"topic": "orders/create"})
    body, signed, (status, answer) = _deliver(
        http, created, "shopify", SHOP, {"X-Shopify-Topic": "shop/update"}, clock
    )
    assert (status, answer) == (202, {"event_id": None, "run_id": None, "ignored": "filter"})
    forged = {**signed, **UNSIGNED_CHANGED, "X-Shopify-Topic": "app/uninstalled"}
    status, again = post(http, created, body, forged)
    assert (status, again) == (200, {"event_id": None, "run_id": None, "duplicate": True})
    assert triggers.get_trigger_view(root, created["id"])["status"] == "active"
    assert events.list_events(root, created["id"], {})["items"] == []


@pytest.mark.parametrize(
    ("source", "headers", "doc"),
    [
        ("github", {"X-GitHub-Event": "meta"}, {"action": "created", "hook_id": 1, "hook": {}}),
        ("github", {"X-GitHub-Event": "push"}, GONE["github"][0]),
        ("github", {"X-GitHub-Event": "meta"}, {"action": "deleted"}),
        ("github", {"X-GitHub-Event": "meta"}, {"action": "deleted", "hook_id": 1, "hook": 7}),
        ("slack", {}, {"type": "event_callback", "event": {"type": "app_mention"}}),
        ("slack", {}, {"type": "app_uninstalled"}),
        ("shopify", {"X-Shopify-Topic": "orders/paid"}, SHOP),
        ("shopify", {"X-Shopify-Topic": "app/uninstalled"}, {"id": 548380009, "name": "x"}),
        ("shopify", {"X-Shopify-Topic": "app/uninstalled"}, None),
        ("stripe", {}, {"type": "account.application.deauthorized"}),
        ("webhook", {}, {"type": "app_uninstalled"}),
    ],
)
def test_other_deliveries_are_not_a_goodbye(source, headers, doc):
    assert filters.source_gone(source, headers=headers, body_json=doc) is None


@pytest.mark.parametrize(
    ("source", "doc", "expected"),
    [
        ("github", GONE["github"][0], True),
        ("github", {"action": "deleted", "label": {}}, False),
        ("slack", GONE["slack"][0], True),
        ("shopify", SHOP, True),
        ("shopify", {"id": 1, "line_items": []}, False),
        ("stripe", {"type": "account.application.deauthorized"}, False),
        ("shopify", ["not", "an", "object"], False),
    ],
)
def test_only_the_signed_body_decides_whether_a_delivery_may_be_a_goodbye(source, doc, expected):
    assert filters.may_be_goodbye(source, body_json=doc) is expected


def test_goodbyes_are_recognised_whatever_the_header_case():
    assert filters.source_gone(
        "github", headers={"x-github-event": "meta"}, body_json=GONE["github"][0]
    )
    assert filters.source_gone(
        "shopify", headers={"X-SHOPIFY-TOPIC": "app/uninstalled"}, body_json=SHOP
    )
