"""What a workflow sees of request headers: no credential, no signature, size-capped."""

from __future__ import annotations

import pytest

from chalicelib.domain.signatures import (
    SENSITIVE_HEADERS,
    SOURCES,
    clip_headers,
)
from tests.unit.signature_cases import (
    BODY,
    SECRETS,
    SIGNED_AT,
    signed_headers,
)

# --- clip_headers -------------------------------------------------------------------------


def test_clip_headers_drops_every_signature_and_credential_header():
    headers = {name.title(): "secret-value" for name in SENSITIVE_HEADERS}
    for source in SOURCES:
        headers.update(signed_headers(source, SECRETS[source], BODY))
    headers.update({"X-Twilio-Signature": "s", "X-Gitlab-Token": "t", "X-Auth-User": "u"})
    headers.update({"Content-Type": "application/json", "X-GitHub-Event": "push"})
    clipped = clip_headers(headers)
    assert clipped == {
        "content-type": "application/json",
        "x-github-event": "push",
        "x-github-delivery": "d-1",
        "webhook-id": "msg_2mVvRj8NhC2bbmdyEQkKwyZlCtH",
        "webhook-timestamp": str(SIGNED_AT),
        "x-slack-request-timestamp": str(SIGNED_AT),
    }


@pytest.mark.parametrize(
    "name",
    [
        "authorization",
        "cookie",
        "x-api-key",
        "proxy-authorization",
        "x-hub-signature-256",
        "stripe-signature",
        "x-slack-signature",
        "webhook-signature",
        "x-shopify-hmac-sha256",
        "x-signature-256",
    ],
)
def test_sensitive_headers_name_every_credential_and_signature_header(name):
    assert name in SENSITIVE_HEADERS


def test_clip_headers_lower_cases_names_and_clips_long_values():
    clipped = clip_headers({"User-Agent": "u" * 5000})
    assert clipped == {"user-agent": "u" * 1024}


def test_clip_headers_caps_the_total_size():
    headers = {f"x-h{i:03}": "v" * 100 for i in range(100)}
    clipped = clip_headers(headers, max_total=1000)
    assert sum(len(k) + len(v) for k, v in clipped.items()) <= 1000
    assert list(clipped) == [f"x-h{i:03}" for i in range(len(clipped))]
    assert len(clipped) == 1000 // 106


def test_clip_headers_keeps_a_short_header_after_one_that_did_not_fit():
    clipped = clip_headers({"x-big": "b" * 1000, "x-small": "s"}, max_total=100)
    assert clipped == {"x-small": "s"}
