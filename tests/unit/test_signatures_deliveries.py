"""What names a delivery: only a signed id, else the digest of the signed body."""

from __future__ import annotations

import hashlib
import json

import pytest

from chalicelib.domain.ids import event_id_for
from chalicelib.domain.signatures import (
    SOURCES,
    dedupe_key,
    delivery_id,
    shown_key,
)
from tests.unit.signature_cases import (
    BODY_IDS,
)

# --- delivery_id and dedupe_key -----------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "headers", "body_json", "expected"),
    [
        ("standard", {"Webhook-Id": "msg_1"}, None, "msg_1"),
        ("stripe", {}, {"id": "evt_1NG8Du", "type": "invoice.paid"}, "evt_1NG8Du"),
        ("slack", {}, {"type": "event_callback", "event_id": "Ev08MFMKH6"}, "Ev08MFMKH6"),
        # Not signed, so not an id: GitHub's and Shopify's delivery headers.
        ("github", {"X-GitHub-Delivery": "72d3162e-cc78"}, {"id": "x"}, None),
        ("shopify", {"x-shopify-webhook-id": "b54557e4"}, {"id": 1}, None),
        ("webhook", {"X-GitHub-Delivery": "d", "Idempotency-Key": "k"}, {"id": "evt"}, None),
        ("stripe", {}, None, None),
        ("stripe", {}, ["not", "an", "object"], None),
        ("stripe", {}, {"id": 17}, None),
        ("stripe", {}, {"id": "   "}, None),
        ("slack", {}, {"type": "url_verification", "challenge": "c"}, None),
        # As signed, not stripped: the signature covers these exact bytes.
        ("standard", {"webhook-id": " msg_1 "}, None, " msg_1 "),
    ],
)
def test_delivery_id_is_only_an_id_the_provider_signs(source, headers, body_json, expected):
    assert delivery_id(source, headers=headers, body_json=body_json) == expected


UNSIGNED = {
    "Idempotency-Key": "order-42",
    "X-GitHub-Delivery": "d",
    "X-Shopify-Webhook-Id": "s",
    "X-GitHub-Event": "push",
    "X-Shopify-Topic": "orders/paid",
    "User-Agent": "curl/8",
}


@pytest.mark.parametrize("source", SOURCES)
def test_no_unsigned_header_changes_the_dedupe_key(source):
    body = json.dumps({"id": "evt_1", "event_id": "Ev1", "n": 1}).encode()
    signed = {"webhook-id": "msg_1"}
    keys = {
        dedupe_key(source, headers={**signed, **extra}, body=body, body_json=json.loads(body))
        for extra in ({}, UNSIGNED, {k: v + "-changed" for k, v in UNSIGNED.items()})
    }
    assert len(keys) == 1


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("standard", "id:msg_1"),
        ("stripe", "id:evt_1"),
        ("slack", "id:Ev1"),
        ("github", "sha256:" + hashlib.sha256(BODY_IDS).hexdigest()),
        ("shopify", "sha256:" + hashlib.sha256(BODY_IDS).hexdigest()),
        ("webhook", "sha256:" + hashlib.sha256(BODY_IDS).hexdigest()),
    ],
)
def test_dedupe_key_is_the_signed_id_else_the_digest_of_the_signed_body(source, expected):
    headers = {"webhook-id": "msg_1", "X-GitHub-Delivery": "d", "Idempotency-Key": "k"}
    key = dedupe_key(source, headers=headers, body=BODY_IDS, body_json=json.loads(BODY_IDS))
    assert key == expected


def test_a_body_without_its_providers_id_is_keyed_by_its_digest():
    body = b"payload=%7B%22type%22%3A%22block_actions%22%7D"  # Slack interactivity: a form
    assert dedupe_key("slack", headers={}, body=body, body_json=None) == (
        "sha256:" + hashlib.sha256(body).hexdigest()
    )
    assert dedupe_key("stripe", headers={}, body=b"{}", body_json={}) == (
        "sha256:" + hashlib.sha256(b"{}").hexdigest()
    )


def test_bodies_that_differ_by_one_byte_have_different_keys():
    keys = {
        dedupe_key("github", headers={}, body=body, body_json=None)
        for body in (b'{"n":1}', b'{"n":2}', b'{"n":1} ', b"")
    }
    assert len(keys) == 4


def test_long_signed_ids_are_never_cut_into_one_another():
    # Two ids that share their first 1,000 characters are two deliveries.
    first = dedupe_key(
        "standard", headers={"webhook-id": "m" * 1000 + "a"}, body=b"", body_json=None
    )
    second = dedupe_key(
        "standard", headers={"webhook-id": "m" * 1000 + "b"}, body=b"", body_json=None
    )
    assert first != second
    assert event_id_for("trg_x", first) != event_id_for("trg_x", second)
    shown = shown_key(first)
    assert len(shown) <= 256 and shown != shown_key(second)
    assert shown_key("id:msg_1") == "id:msg_1"


# --- LinkedIn -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"type": "LEAD_ACTION", "notificationId": 1234}, "1234"),
        ({"notifications": [{"notificationId": 7}, {"notificationId": "8"}]}, "7,8"),
        ({"type": "LEAD_ACTION"}, None),
    ],
)
def test_linkedin_dedupe_key_is_the_notification_id(body, expected):
    assert delivery_id("linkedin", headers={}, body_json=body) == expected


@pytest.mark.parametrize(
    ("source", "payload", "expected"),
    [
        (
            "eventbridge",
            {"id": "6a7e8feb-b491-4cf7-a9f1-bf3703467718"},
            "6a7e8feb-b491-4cf7-a9f1-bf3703467718",
        ),
        (
            "s3",
            {"bucket": "b", "key": "in/a.csv", "sequencer": "0055AED6DCD90281E5"},
            "b/in/a.csv#0055AED6DCD90281E5",
        ),
        ("s3", {"bucket": "b", "key": "in/a.csv"}, None),
        ("email", {"message_id": "<m1@example.com>"}, "<m1@example.com>"),
        ("file", {"path": "/in/a.csv", "size": 3, "mtime_ns": 17}, "/in/a.csv:3:17"),
    ],
)
def test_delivered_sources_dedupe_on_what_the_contract_names(source, payload, expected):
    assert delivery_id(source, headers={}, body_json=payload) == expected
