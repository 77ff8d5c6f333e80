"""Standard Webhooks: the spec's example, secrets and versions, and ``sign_outbound``."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from datetime import datetime

import pytest
import standardwebhooks
import standardwebhooks.webhooks

from chalicelib.domain.signatures import (
    SOURCES,
    generate_secret,
    sign_outbound,
    verify,
)
from tests.unit.signature_cases import (
    BODY,
    NOW,
    OTHER_SECRETS,
    SECRETS,
    SIGNED_AT,
    check,
    rejected,
    signed_headers,
)

# --- accepted -----------------------------------------------------------------------------


def test_verify_accepts_the_standard_webhooks_spec_example():
    headers = {
        "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
        "webhook-timestamp": "1614265330",
        "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    }
    verify(
        "standard",
        secrets=["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],
        headers=headers,
        body=b'{"test": 2432232314}',
        now=1614265330.0,
    )


def test_verify_accepts_standard_signature_list_with_other_versions_and_a_good_v1():
    headers = signed_headers("standard", SECRETS["standard"], BODY)
    bogus = base64.b64encode(b"x" * 32).decode()
    headers["webhook-signature"] = f"v1a,{bogus} v1,{bogus} {headers['webhook-signature']}"
    check("standard", headers)


def test_verify_accepts_unpadded_standard_secret_like_the_reference_library():
    secret = "whsec_" + base64.b64encode(b"0123456789abcdef01234").decode().rstrip("=")
    assert not secret.endswith("=")
    check("standard", signed_headers("standard", secret, BODY), secrets=[secret])


# --- rejected -----------------------------------------------------------------------------


def test_verify_rejects_a_standard_secret_that_decodes_to_an_empty_key():
    # HMAC with an empty key is computable by anyone: "whsec_" alone must never verify.
    msg_id, ts = "msg_1", str(SIGNED_AT)
    mac = hmac.new(b"", f"{msg_id}.{ts}.".encode() + BODY, hashlib.sha256).digest()
    headers = {
        "webhook-id": msg_id,
        "webhook-timestamp": ts,
        "webhook-signature": "v1," + base64.b64encode(mac).decode(),
    }
    rejected("standard", headers, secrets=["whsec_"])
    with pytest.raises(ValueError):
        sign_outbound("whsec_", msg_id=msg_id, timestamp=SIGNED_AT, body=BODY)


@pytest.mark.parametrize("version", ["v1a", "v2", "V1", ""])
def test_verify_rejects_a_correct_standard_mac_under_another_version(version):
    headers = signed_headers("standard", SECRETS["standard"], BODY)
    headers["webhook-signature"] = headers["webhook-signature"].replace("v1,", f"{version},")
    rejected("standard", headers)


def test_verify_rejects_standard_signature_for_another_message_id():
    headers = signed_headers("standard", SECRETS["standard"], BODY)
    headers["webhook-id"] = "msg_someone_else"
    rejected("standard", headers)


@pytest.mark.parametrize("source", SOURCES)
def test_verify_rejects_a_standard_secret_that_is_not_base64_without_crashing(source):
    headers = signed_headers(source, SECRETS[source], BODY)
    rejected(source, headers, secrets=["whsec_%%%"] if source == "standard" else ["%%%"])


# --- sign_outbound ------------------------------------------------------------------------


class _FrozenDatetime(datetime):
    """standardwebhooks reads the clock; pin it to NOW."""

    @classmethod
    def now(cls, tz=None):
        return datetime.fromtimestamp(NOW, tz)


def test_sign_outbound_verifies_with_the_standard_webhooks_library(monkeypatch):
    monkeypatch.setattr(standardwebhooks.webhooks, "datetime", _FrozenDatetime)
    secret = generate_secret("standard")
    headers = sign_outbound(secret, msg_id="fire_01J", timestamp=int(NOW), body=BODY)
    assert set(headers) == {"webhook-id", "webhook-timestamp", "webhook-signature"}
    assert headers["webhook-id"] == "fire_01J"
    assert headers["webhook-timestamp"] == str(int(NOW))
    assert standardwebhooks.Webhook(secret).verify(BODY, headers) == json.loads(BODY)


def test_sign_outbound_is_rejected_by_the_library_with_another_secret(monkeypatch):
    monkeypatch.setattr(standardwebhooks.webhooks, "datetime", _FrozenDatetime)
    headers = sign_outbound(SECRETS["standard"], msg_id="m", timestamp=int(NOW), body=BODY)
    with pytest.raises(standardwebhooks.webhooks.WebhookVerificationError):
        standardwebhooks.Webhook(OTHER_SECRETS["standard"]).verify(BODY, headers)


def test_sign_outbound_round_trips_through_verify():
    headers = sign_outbound(SECRETS["standard"], msg_id="m", timestamp=int(NOW), body=BODY)
    check("standard", headers)


def test_sign_outbound_refuses_a_secret_that_is_not_base64():
    with pytest.raises(ValueError):
        sign_outbound("whsec_%%%", msg_id="m", timestamp=int(NOW), body=BODY)
