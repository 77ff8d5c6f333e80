"""Event filters: what each key reads, how values compare, and what validation refuses."""

from __future__ import annotations

import pytest

from chalicelib.domain.errors import ValidationError
from chalicelib.domain.filters import FILTER_KEYS, event_type, matches, validate_filter
from chalicelib.domain.signatures import SOURCES

GITHUB_PUSH_HEADERS = {"X-GitHub-Event": "push", "X-GitHub-Delivery": "d-1"}
GITHUB_PUSH = {
    "ref": "refs/heads/main",
    "repository": {"full_name": "Acme/Widgets"},
    "head_commit": {"id": "abc", "message": "fix"},
    "commits": [{"id": "abc", "distinct": True}],
    "forced": False,
    "size": 1,
}
GITHUB_PR_HEADERS = {"x-github-event": "pull_request"}
GITHUB_PR = {
    "action": "closed",
    "pull_request": {"merged": True, "base": {"ref": "release/2.x"}, "number": 7},
    "repository": {"full_name": "acme/widgets"},
}
STRIPE_EVENT = {"id": "evt_1", "type": "invoice.paid", "data": {"object": {"amount_paid": 500}}}
SLACK_CALLBACK = {"type": "event_callback", "event_id": "Ev1", "event": {"type": "app_mention"}}
SHOPIFY_HEADERS = {"X-Shopify-Topic": "orders/create", "X-Shopify-Webhook-Id": "w"}
SHOPIFY_ORDER = {"id": 820982911946154508, "currency": "EUR", "test": False}


# --- event_type -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "headers", "body_json", "expected"),
    [
        ("github", GITHUB_PUSH_HEADERS, GITHUB_PUSH, "push"),
        ("github", {"X-GITHUB-EVENT": "ping"}, {}, "ping"),
        ("github", {}, {"type": "push"}, None),
        ("stripe", {}, STRIPE_EVENT, "invoice.paid"),
        ("stripe", {}, None, None),
        ("slack", {}, SLACK_CALLBACK, "app_mention"),
        ("slack", {}, {"type": "url_verification", "challenge": "c"}, "url_verification"),
        ("slack", {}, {"type": "event_callback", "event": "not-an-object"}, "event_callback"),
        ("shopify", SHOPIFY_HEADERS, SHOPIFY_ORDER, "orders/create"),
        ("standard", {}, {"type": "user.created", "data": {}}, "user.created"),
        ("webhook", {}, {"type": "build.done"}, "build.done"),
        ("webhook", {}, {"type": 3}, None),
        ("webhook", {}, [1, 2], None),
        ("webhook", {}, "text", None),
    ],
)
def test_event_type_reads_the_providers_event_name(source, headers, body_json, expected):
    assert event_type(source, headers=headers, body_json=body_json) == expected


# --- matches --------------------------------------------------------------------------


MATCHES = [
    # no filter passes everything
    ("github", None, GITHUB_PUSH_HEADERS, GITHUB_PUSH, True),
    ("github", {}, GITHUB_PUSH_HEADERS, GITHUB_PUSH, True),
    ("webhook", None, {}, None, True),
    # github_event, casefold, any-of lists
    ("github", {"github_event": "push"}, GITHUB_PUSH_HEADERS, GITHUB_PUSH, True),
    ("github", {"github_event": "PUSH"}, GITHUB_PUSH_HEADERS, GITHUB_PUSH, True),
    ("github", {"github_event": ["release", "push"]}, GITHUB_PUSH_HEADERS, GITHUB_PUSH, True),
    ("github", {"github_event": ["release", "issues"]}, GITHUB_PUSH_HEADERS, GITHUB_PUSH, False),
    ("github", {"github_event": "push"}, {}, GITHUB_PUSH, False),
    # branch from ref
    ("github", {"branch": "main"}, GITHUB_PUSH_HEADERS, GITHUB_PUSH, True),
    ("github", {"branch": "Main"}, GITHUB_PUSH_HEADERS, GITHUB_PUSH, True),
    ("github", {"branch": "refs/heads/main"}, GITHUB_PUSH_HEADERS, GITHUB_PUSH, False),
    ("github", {"branch": "dev"}, GITHUB_PUSH_HEADERS, GITHUB_PUSH, False),
    ("github", {"branch": "feature/x"}, {}, {"ref": "refs/heads/feature/x"}, True),
    ("github", {"branch": "v1"}, {}, {"ref": "refs/tags/v1"}, False),
    ("github", {"branch": "main"}, {}, {"ref": "main", "ref_type": "branch"}, True),
    ("github", {"branch": "v1"}, {}, {"ref": "v1", "ref_type": "tag"}, False),
    ("github", {"branch": "release/2.x"}, GITHUB_PR_HEADERS, GITHUB_PR, True),
    ("github", {"branch": "main"}, {}, {}, False),
    # repository, action, AND of keys
    ("github", {"repository": "acme/widgets"}, GITHUB_PUSH_HEADERS, GITHUB_PUSH, True),
    ("github", {"repository": "acme/gadgets"}, GITHUB_PUSH_HEADERS, GITHUB_PUSH, False),
    ("github", {"action": ["opened", "closed"]}, GITHUB_PR_HEADERS, GITHUB_PR, True),
    ("github", {"action": "opened"}, GITHUB_PR_HEADERS, GITHUB_PR, False),
    ("github", {"github_event": "push", "branch": "main"}, GITHUB_PUSH_HEADERS, GITHUB_PUSH, True),
    ("github", {"github_event": "push", "branch": "dev"}, GITHUB_PUSH_HEADERS, GITHUB_PUSH, False),
    (
        "github",
        {
            "github_event": "pull_request",
            "action": "closed",
            "fields": {"pull_request.merged": True},
        },
        GITHUB_PR_HEADERS,
        GITHUB_PR,
        True,
    ),
    # the other sources' named keys
    ("stripe", {"type": "invoice.paid"}, {}, STRIPE_EVENT, True),
    ("stripe", {"type": ["charge.refunded", "INVOICE.PAID"]}, {}, STRIPE_EVENT, True),
    ("stripe", {"type": "invoice.payment_failed"}, {}, STRIPE_EVENT, False),
    ("slack", {"type": "app_mention"}, {}, SLACK_CALLBACK, True),
    ("slack", {"type": "message"}, {}, SLACK_CALLBACK, False),
    ("shopify", {"topic": "orders/create"}, SHOPIFY_HEADERS, SHOPIFY_ORDER, True),
    ("shopify", {"topic": ["orders/paid"]}, SHOPIFY_HEADERS, SHOPIFY_ORDER, False),
    ("standard", {"type": "user.created"}, {}, {"type": "user.created"}, True),
    ("webhook", {"type": "build.done"}, {}, {"type": "build.failed"}, False),
    # fields: dotted paths, list indices, exact numbers and bools, casefold strings
    ("stripe", {"fields": {"data.object.amount_paid": 500}}, {}, STRIPE_EVENT, True),
    ("stripe", {"fields": {"data.object.amount_paid": 500.0}}, {}, STRIPE_EVENT, True),
    ("stripe", {"fields": {"data.object.amount_paid": "500"}}, {}, STRIPE_EVENT, False),
    ("stripe", {"fields": {"data.object.amount_paid": [1, 500]}}, {}, STRIPE_EVENT, True),
    ("stripe", {"fields": {"data.object.missing": None}}, {}, STRIPE_EVENT, False),
    ("webhook", {"fields": {"deleted_at": None}}, {}, {"deleted_at": None}, True),
    ("github", {"fields": {"commits.0.distinct": True}}, {}, GITHUB_PUSH, True),
    ("github", {"fields": {"commits.1.distinct": True}}, {}, GITHUB_PUSH, False),
    ("github", {"fields": {"forced": False}}, {}, GITHUB_PUSH, True),
    ("github", {"fields": {"forced": 0}}, {}, GITHUB_PUSH, False),
    ("github", {"fields": {"size": True}}, {}, GITHUB_PUSH, False),
    ("github", {"fields": {"head_commit.message": "FIX"}}, {}, GITHUB_PUSH, True),
    ("shopify", {"fields": {"currency": ["usd", "eur"]}}, {}, SHOPIFY_ORDER, True),
    ("shopify", {"fields": {"currency": "eur", "test": True}}, {}, SHOPIFY_ORDER, False),
    ("webhook", {"fields": {"a.b": "x"}}, {}, None, False),
    ("webhook", {"fields": {"a.b": "x"}}, {}, {"a": "not-an-object"}, False),
]

# Filters validate_filter refuses; should one reach matches() anyway, it must not pass.
FAIL_CLOSED = [
    ("stripe", {"branch": "main"}, {}, {"ref": "refs/heads/main"}),
    ("webhook", {"fields": {"a": {"b": 1}}}, {}, {"a": {"b": 1}}),
    ("webhook", {"fields": ["a"]}, {}, {"a": 1}),
    ("webhook", ["type"], {}, {"type": "x"}),
    ("nope", {"type": "x"}, {}, {"type": "x"}),
]


@pytest.mark.parametrize(("source", "flt", "headers", "body_json", "expected"), MATCHES)
def test_matches_applies_every_key_of_the_filter(source, flt, headers, body_json, expected):
    assert matches(source, flt, headers=headers, body_json=body_json) is expected


@pytest.mark.parametrize(("source", "flt", "headers", "body_json"), FAIL_CLOSED)
def test_matches_fails_closed_on_a_filter_validation_would_refuse(source, flt, headers, body_json):
    with pytest.raises(ValidationError):
        validate_filter(source, flt)
    assert matches(source, flt, headers=headers, body_json=body_json) is False


@pytest.mark.parametrize(("source", "flt", "headers", "body_json", "expected"), MATCHES)
def test_every_filter_in_the_matches_table_is_valid(source, flt, headers, body_json, expected):
    validate_filter(source, flt)


# --- validate_filter ------------------------------------------------------------------


VALID = [
    ("github", None),
    ("github", {}),
    ("github", {"github_event": ["push", "pull_request"], "branch": "main"}),
    ("github", {"action": "opened", "repository": "acme/widgets"}),
    ("stripe", {"type": ["invoice.paid"]}),
    ("slack", {"type": "app_mention"}),
    ("shopify", {"topic": "orders/create"}),
    ("standard", {"type": "user.created"}),
    ("webhook", {"fields": {"data.status": ["ok", "done"], "count": 3, "live": True}}),
    ("webhook", {"fields": {"ratio": 0.5, "deleted_at": None, "note": ""}}),
    ("stripe", {"fields": {}}),
]


@pytest.mark.parametrize(("source", "flt"), VALID)
def test_validate_filter_accepts_documented_keys(source, flt):
    validate_filter(source, flt)


INVALID = [
    ("github", {"type": "push"}, "event.filter.type"),
    ("github", {"event": "push"}, "event.filter.event"),
    ("stripe", {"branch": "main"}, "event.filter.branch"),
    ("slack", {"topic": "x"}, "event.filter.topic"),
    ("shopify", {"type": "orders/create"}, "event.filter.type"),
    ("github", {"github_event": 3}, "event.filter.github_event"),
    ("github", {"github_event": True}, "event.filter.github_event"),
    ("github", {"github_event": None}, "event.filter.github_event"),
    ("github", {"branch": ["main", 1]}, "event.filter.branch"),
    ("github", {"branch": []}, "event.filter.branch"),
    ("github", {"branch": " "}, "event.filter.branch"),
    ("github", {"branch": {"eq": "main"}}, "event.filter.branch"),
    ("github", {"branch": [["main"]]}, "event.filter.branch"),
    ("github", {"branch": "x" * 257}, "event.filter.branch"),
    ("github", {"branch": ["b"] * 51}, "event.filter.branch"),
    ("stripe", {"type": "invoice.paid", "fields": []}, "event.filter.fields"),
    ("webhook", {"fields": {"": 1}}, "event.filter.fields"),
    ("webhook", {"fields": {"a..b": 1}}, "event.filter.fields"),
    ("webhook", {"fields": {".a": 1}}, "event.filter.fields"),
    ("webhook", {"fields": {".".join("a" * 17): 1}}, "event.filter.fields"),
    ("webhook", {"fields": {f"f{i}": 1 for i in range(21)}}, "event.filter.fields"),
    ("webhook", {"fields": {"a.b": {"c": 1}}}, "event.filter.fields.a.b"),
    ("webhook", {"fields": {"a": [1, [2]]}}, "event.filter.fields.a"),
    ("webhook", {"fields": {"a": []}}, "event.filter.fields.a"),
    ("webhook", {"fields": {"a": float("nan")}}, "event.filter.fields.a"),
    ("webhook", {"fields": {"a": float("inf")}}, "event.filter.fields.a"),
    ("github", ["push"], "event.filter"),
    ("github", "push", "event.filter"),
]


@pytest.mark.parametrize(("source", "flt", "field"), INVALID)
def test_validate_filter_names_the_offending_field(source, flt, field):
    with pytest.raises(ValidationError) as info:
        validate_filter(source, flt)
    assert info.value.field == field
    assert info.value.STATUS_CODE == 422


def test_validate_filter_lists_the_allowed_keys_in_its_message():
    with pytest.raises(ValidationError) as info:
        validate_filter("github", {"evnt": "push"})
    assert "github_event, action, branch, repository, fields" in info.value.message


def test_validate_filter_refuses_unknown_source():
    with pytest.raises(ValidationError) as info:
        validate_filter("gitlab", {"type": "push"})
    assert info.value.field == "event.source"


def test_every_source_has_filter_keys():
    from chalicelib.domain.spec import EVENT_SOURCES

    assert set(SOURCES) <= set(FILTER_KEYS)
    assert set(FILTER_KEYS) == set(EVENT_SOURCES)


MAIL = {
    "from": "alice@example.com",
    "to": ["reports@inbox.example.com", "bob@example.com"],
    "subject": "Weekly Report",
}


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        ({"from": "ALICE@example.com"}, True),
        ({"from": "mallory@example.com"}, False),
        ({"to": "Bob@Example.com"}, True),  # any recipient, casefolded
        ({"to": ["nobody@example.com", "reports@inbox.example.com"]}, True),
        ({"to": "carol@example.com"}, False),
        ({"subject": "weekly report"}, True),
        ({"subject": "monthly report"}, False),
        ({"from": "alice@example.com", "subject": "other"}, False),
    ],
)
def test_email_filters_casefold_both_sides_and_to_matches_any_recipient(flt, expected):
    validate_filter("email", flt)
    assert matches("email", flt, headers={}, body_json=MAIL) is expected


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        ({"detail-type": "orderplaced"}, True),
        ({"source": ["shop.orders", "shop.refunds"]}, True),
        ({"source": "billing"}, False),
        ({"fields": {"detail.region": "EU"}}, True),
    ],
)
def test_eventbridge_filters_read_the_event_as_aws_sends_it(flt, expected):
    event = {"source": "shop.orders", "detail-type": "OrderPlaced", "detail": {"region": "eu"}}
    validate_filter("eventbridge", flt)
    assert matches("eventbridge", flt, headers={}, body_json=event) is expected


def test_an_s3_filter_takes_only_fields():
    with pytest.raises(ValidationError) as info:
        validate_filter("s3", {"type": "x"})
    assert info.value.field == "event.filter.type"


# An array of objects reads as EventBridge flattens it: a.b is every element's b.
_ORDERS = {"a": [{"b": 2}, {"b": 7, "c": [{"d": "x"}, {"d": "y"}]}], "n": [[1, 2], [3]]}


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"a.b": 2}, True),
        ({"a.b": 7}, True),
        ({"a.b": 3}, False),
        ({"a.b": [{"numeric": [">", 5]}]}, True),
        ({"a.b": [{"numeric": [">", 8]}]}, False),
        ({"a.b": [{"exists": True}]}, True),
        ({"a.b": [{"exists": False}]}, False),
        ({"a.z": [{"exists": False}]}, True),
        ({"a.c.d": "y"}, True),  # two levels of arrays
        ({"a.c.d": [{"prefix": "z"}]}, False),
        ({"a.1.b": 7}, True),  # a number still picks one element
        ({"a.0.b": 7}, False),
        ({"n": 3}, True),  # nested arrays of values flatten too
    ],
)
def test_a_path_through_an_array_of_objects_reads_every_element(fields, expected):
    validate_filter("webhook", {"fields": fields})
    assert matches("webhook", {"fields": fields}, headers={}, body_json=_ORDERS) is expected
