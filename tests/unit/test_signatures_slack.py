"""Slack: a replayed signature under a fresh timestamp, and the URL handshake."""

from __future__ import annotations

import pytest

from chalicelib.domain.signatures import (
    slack_challenge,
)
from tests.unit.signature_cases import (
    BODY,
    NOW,
    SECRETS,
    rejected,
    signed_headers,
)

# --- rejected -----------------------------------------------------------------------------


def test_verify_rejects_slack_signature_replayed_with_a_fresh_timestamp():
    headers = signed_headers("slack", SECRETS["slack"], BODY, ts=int(NOW) - 3600)
    headers["X-Slack-Request-Timestamp"] = str(int(NOW))
    rejected("slack", headers)


# --- slack_challenge ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body_json", "expected"),
    [
        ({"token": "t", "challenge": "3eZbrw1aBm", "type": "url_verification"}, "3eZbrw1aBm"),
        ({"challenge": "3eZbrw1aBm", "type": "event_callback"}, None),
        ({"type": "url_verification"}, None),
        ({"type": "url_verification", "challenge": 7}, None),
        (None, None),
        ("url_verification", None),
    ],
)
def test_slack_challenge_answers_only_url_verification(body_json, expected):
    assert slack_challenge(body_json) == expected
