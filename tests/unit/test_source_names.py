"""How a cadence names an event source (pure)."""

from __future__ import annotations

import pytest

from chalicelib.domain.event_sources import EVENT_SOURCES
from chalicelib.domain.source_names import SOURCE_NAMES, describe_event, source_label


def test_every_named_source_is_a_source():
    assert set(SOURCE_NAMES) <= set(EVENT_SOURCES)


@pytest.mark.parametrize(
    ("source", "label"),
    [
        ("github", "GitHub"),
        ("standard", "Standard Webhooks"),
        ("linkedin", "LinkedIn"),
        ("s3", "S3"),
        ("nosuch", "nosuch"),  # not named: its key
        (None, "event"),
    ],
)
def test_source_label(source, label):
    assert source_label(source) == label


@pytest.mark.parametrize(
    ("event", "text"),
    [
        ({"source": "webhook"}, "On webhook"),
        ({"source": "stripe"}, "On Stripe webhook"),
        (
            {"source": "github", "filter": {"github_event": ["push", "release"]}},
            "On GitHub push, release",
        ),
        ({"source": "stripe", "filter": {"type": "invoice.paid"}}, "On Stripe invoice.paid"),
        ({"source": "shopify", "filter": {"topic": "orders/create"}}, "On Shopify orders/create"),
        ({"source": "github", "filter": {"github_event": [], "type": "x"}}, "On GitHub x"),
        ({"source": "slack", "filter": {"github_event": []}}, "On Slack webhook"),
        ({"source": "linkedin"}, "On LinkedIn webhook"),
        ({"source": "eventbridge", "pattern": {"source": ["shop"]}}, "On EventBridge event"),
        (
            {"source": "eventbridge", "pattern": {"detail-type": ["Order Placed"]}},
            "On EventBridge Order Placed",
        ),
        ({"source": "s3", "bucket": "inbox", "prefix": "in/"}, "On S3 object created in inbox/in"),
        ({"source": "s3", "bucket": "inbox"}, "On S3 object created in inbox"),
        ({"source": "email", "address": "a@in.example"}, "On email to a@in.example"),
        ({}, "On event webhook"),
        (None, "On event webhook"),
    ],
)
def test_describe_event(event, text):
    assert describe_event(event) == text
