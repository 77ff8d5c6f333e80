"""Webhook signature schemes, checked against the providers' own SDKs and documented vectors."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
from datetime import UTC, datetime

import pytest
import standardwebhooks
import standardwebhooks.webhooks
import stripe
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from slack_sdk.signature import SignatureVerifier

from chalicelib.domain.errors import InvalidSignature, ValidationError
from chalicelib.domain.ids import event_id_for
from chalicelib.domain.signatures import (
    SECRET_REQUIRED,
    SENSITIVE_HEADERS,
    SOURCES,
    TOLERANCE_S,
    clip_headers,
    dedupe_key,
    delivery_id,
    generate_secret,
    shown_key,
    sign_outbound,
    slack_challenge,
    verify,
)

NOW = 1_750_000_000.0  # 2025-06-15T15:06:40Z, a constant: the domain never reads the clock
SIGNED_AT = int(NOW) - 42
BODY = json.dumps({"id": "evt_1", "type": "push", "note": "café ☕"}).encode()
BODY_IDS = json.dumps({"id": "evt_1", "event_id": "Ev1", "type": "x"}).encode()

SECRETS = {
    "webhook": "whsec_generic-cronhook-secret",
    "github": "It's a Secret to Everybody",
    "stripe": "whsec_test_5bZy3nSfO2iNrR1ZyQd3Zc9G",
    "slack": "8f742231b10e8888abcd99yyyzzz85a5",
    "standard": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    "shopify": "shpss_0123456789abcdef0123456789abcdef",
    "linkedin": "WPL_AP1.li-client-secret.AbC123==",
}
OTHER_SECRETS = {
    "webhook": "whsec_another-secret",
    "github": "not the secret",
    "stripe": "whsec_test_otherOtherOtherOther",
    "slack": "00000000000000000000000000000000",
    "standard": "whsec_" + base64.b64encode(b"k" * 32).decode(),
    "shopify": "shpss_ffffffffffffffffffffffffffffffff",
    "linkedin": "WPL_AP1.another-client-secret==",
}
TIMESTAMPED = ("stripe", "slack", "standard")


def signed_headers(source: str, secret: str, body: bytes, *, ts: int = SIGNED_AT) -> dict[str, str]:
    """Headers as the provider would send them, signed with the provider's own tooling."""
    if source == "webhook":
        digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        return {"X-Signature-256": f"sha256={digest}"}
    if source == "github":
        # GitHub docs, "Validating webhook deliveries": sha256= + hex HMAC of the payload.
        digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        return {"X-Hub-Signature-256": f"sha256={digest}", "X-GitHub-Delivery": "d-1"}
    if source == "stripe":
        header = stripe.WebhookSignature.generate_signature_header(
            payload=body.decode(), secret=secret, timestamp=ts
        )
        return {"Stripe-Signature": header}
    if source == "slack":
        signature = SignatureVerifier(secret).generate_signature(timestamp=str(ts), body=body)
        assert signature is not None
        return {"X-Slack-Request-Timestamp": str(ts), "X-Slack-Signature": signature}
    if source == "standard":
        msg_id = "msg_2mVvRj8NhC2bbmdyEQkKwyZlCtH"
        signature = standardwebhooks.Webhook(secret).sign(
            msg_id, datetime.fromtimestamp(ts, UTC), body.decode()
        )
        return {"webhook-id": msg_id, "webhook-timestamp": str(ts), "webhook-signature": signature}
    if source == "shopify":
        # Shopify docs, "Verify a webhook": base64 of the HMAC-SHA256 digest of the raw body.
        digest = hmac.new(secret.encode(), body, hashlib.sha256).digest()
        return {"X-Shopify-Hmac-Sha256": base64.b64encode(digest).decode()}
    if source == "linkedin":
        # LinkedIn, "Webhook validation": hex HMAC-SHA256 of "hmacsha256=" + the POST body,
        # keyed with the app's clientSecret.
        digest = hmac.new(secret.encode(), b"hmacsha256=" + body, hashlib.sha256).hexdigest()
        return {"X-LI-Signature": digest}
    raise AssertionError(source)


def check(source: str, headers: dict[str, str], *, body: bytes = BODY, secrets=None, now=NOW):
    verify(
        source,
        secrets=[SECRETS[source]] if secrets is None else secrets,
        headers=headers,
        body=body,
        now=now,
    )


def rejected(source: str, headers: dict[str, str], **kwargs) -> InvalidSignature:
    with pytest.raises(InvalidSignature) as info:
        check(source, headers, **kwargs)
    return info.value


# --- accepted -------------------------------------------------------------------------


@pytest.mark.parametrize("source", SOURCES)
def test_verify_accepts_a_delivery_signed_by_the_provider_recipe(source):
    check(source, signed_headers(source, SECRETS[source], BODY))


@pytest.mark.parametrize("source", SOURCES)
def test_verify_accepts_header_names_in_any_case(source):
    headers = signed_headers(source, SECRETS[source], BODY)
    check(source, {name.upper(): value for name, value in headers.items()})
    check(source, {name.lower(): value for name, value in headers.items()})


def test_verify_accepts_githubs_documented_test_vector():
    headers = {
        "X-Hub-Signature-256": "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    }
    verify(
        "github",
        secrets=["It's a Secret to Everybody"],
        headers=headers,
        body=b"Hello, World!",
        now=NOW,
    )


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


def test_verify_accepts_stripe_header_with_several_v1_when_any_matches():
    good = signed_headers("stripe", SECRETS["stripe"], BODY)["Stripe-Signature"]
    t, v1 = good.split(",")
    header = f"{t},v1={'0' * 64},{v1},v0={'1' * 64}"
    check("stripe", {"Stripe-Signature": header})


def test_verify_accepts_standard_signature_list_with_other_versions_and_a_good_v1():
    headers = signed_headers("standard", SECRETS["standard"], BODY)
    bogus = base64.b64encode(b"x" * 32).decode()
    headers["webhook-signature"] = f"v1a,{bogus} v1,{bogus} {headers['webhook-signature']}"
    check("standard", headers)


def test_verify_accepts_unpadded_standard_secret_like_the_reference_library():
    secret = "whsec_" + base64.b64encode(b"0123456789abcdef01234").decode().rstrip("=")
    assert not secret.endswith("=")
    check("standard", signed_headers("standard", secret, BODY), secrets=[secret])


@pytest.mark.parametrize("source", TIMESTAMPED)
@pytest.mark.parametrize("offset_s", [-TOLERANCE_S, TOLERANCE_S])
def test_verify_accepts_timestamp_exactly_at_the_tolerance(source, offset_s):
    headers = signed_headers(source, SECRETS[source], BODY, ts=int(NOW) + offset_s)
    check(source, headers)


# --- rotation -------------------------------------------------------------------------


@pytest.mark.parametrize("source", SOURCES)
def test_verify_accepts_old_and_new_secret_during_rotation(source):
    old, new = OTHER_SECRETS[source], SECRETS[source]
    for signing_secret in (old, new):
        headers = signed_headers(source, signing_secret, BODY)
        check(source, headers, secrets=[new, old])
        check(source, headers, secrets=[old, new])


@pytest.mark.parametrize("source", SOURCES)
def test_verify_rejects_old_secret_once_rotation_grace_is_over(source):
    headers = signed_headers(source, OTHER_SECRETS[source], BODY)
    rejected(source, headers, secrets=[SECRETS[source]])


# --- rejected -------------------------------------------------------------------------


@pytest.mark.parametrize("source", SOURCES)
def test_verify_rejects_tampered_body(source):
    headers = signed_headers(source, SECRETS[source], BODY)
    rejected(source, headers, body=BODY.replace(b"push", b"pull"))


@pytest.mark.parametrize("source", SOURCES)
def test_verify_rejects_wrong_secret(source):
    headers = signed_headers(source, OTHER_SECRETS[source], BODY)
    rejected(source, headers)


@pytest.mark.parametrize("source", TIMESTAMPED)
@pytest.mark.parametrize("offset_s", [-TOLERANCE_S - 1, TOLERANCE_S + 1, -86_400, 86_400])
def test_verify_rejects_stale_and_future_timestamps(source, offset_s):
    headers = signed_headers(source, SECRETS[source], BODY, ts=int(NOW) + offset_s)
    exc = rejected(source, headers)
    assert exc.reason == "timestamp outside tolerance"


@pytest.mark.parametrize("source", TIMESTAMPED)
def test_verify_rejects_when_now_is_not_a_number(source):
    rejected(source, signed_headers(source, SECRETS[source], BODY), now=float("nan"))


@pytest.mark.parametrize("source", SOURCES)
def test_verify_rejects_when_no_secret_is_configured(source):
    rejected(source, signed_headers(source, SECRETS[source], BODY), secrets=[])


@pytest.mark.parametrize("source", sorted(set(SOURCES) - {"standard"}))
def test_verify_rejects_a_bare_string_instead_of_a_secret_list(source):
    # Iterating "abc" would try "a", "b", "c" as keys, and a one-character key is forgeable.
    headers = signed_headers(source, "a", BODY)
    check(source, headers, secrets=["a"])
    rejected(source, headers, secrets="abc")


def test_verify_rejects_unknown_source():
    rejected("gitlab", {"X-Gitlab-Token": "x"}, secrets=["x"])


def test_verify_rejects_stripe_header_with_only_a_v0_signature():
    good = signed_headers("stripe", SECRETS["stripe"], BODY)["Stripe-Signature"]
    rejected("stripe", {"Stripe-Signature": good.replace("v1=", "v0=")})


def test_verify_rejects_stripe_header_with_two_timestamps():
    good = signed_headers("stripe", SECRETS["stripe"], BODY)["Stripe-Signature"]
    # The first t is the signed one; a parser that ignored the second would accept.
    rejected("stripe", {"Stripe-Signature": f"{good},t={int(NOW)}"})


@pytest.mark.parametrize(
    ("source", "header", "label", "wrong_label"),
    [
        ("webhook", "X-Signature-256", "sha256=", "sha1="),
        ("github", "X-Hub-Signature-256", "sha256=", "sha512="),
        ("slack", "X-Slack-Signature", "v0=", "v1="),
    ],
)
def test_verify_rejects_a_correct_mac_under_another_scheme_label(
    source, header, label, wrong_label
):
    headers = signed_headers(source, SECRETS[source], BODY)
    headers[header] = headers[header].replace(label, wrong_label)
    rejected(source, headers)


@pytest.mark.parametrize("source", ["webhook", "github", "stripe", "slack", "shopify"])
def test_verify_keys_string_sources_with_the_whole_secret_prefix_included(source):
    # For HMAC-keyed-by-string sources "whsec_" is just a (weak) string, still a key.
    check(source, signed_headers(source, "whsec_", BODY), secrets=["whsec_"])


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


def test_verify_rejects_slack_signature_replayed_with_a_fresh_timestamp():
    headers = signed_headers("slack", SECRETS["slack"], BODY, ts=int(NOW) - 3600)
    headers["X-Slack-Request-Timestamp"] = str(int(NOW))
    rejected("slack", headers)


MISSING = [
    (source, name)
    for source in SOURCES
    for name in signed_headers(source, SECRETS[source], BODY)
    if name != "X-GitHub-Delivery"
]


@pytest.mark.parametrize(("source", "header"), MISSING)
def test_verify_rejects_when_a_signed_header_is_missing(source, header):
    headers = signed_headers(source, SECRETS[source], BODY)
    del headers[header]
    rejected(source, headers)


@pytest.mark.parametrize("source", SOURCES)
def test_verify_rejects_no_headers_at_all(source):
    rejected(source, {})


def _garbage() -> list[tuple[str, str, str]]:
    """(source, header, value): malformed values for each signed header."""
    good = {s: signed_headers(s, SECRETS[s], BODY) for s in SOURCES}
    hexsig = "a" * 64
    b64sig = base64.b64encode(b"a" * 32).decode()
    stripe_t = good["stripe"]["Stripe-Signature"].split(",")[0]
    stripe_v1 = good["stripe"]["Stripe-Signature"].split(",")[1]
    return [
        ("webhook", "X-Signature-256", ""),
        ("webhook", "X-Signature-256", "   "),
        ("webhook", "X-Signature-256", hexsig),
        ("webhook", "X-Signature-256", f"sha1={hexsig[:40]}"),
        ("webhook", "X-Signature-256", "sha256=zz" + hexsig[2:]),
        ("webhook", "X-Signature-256", "sha256=" + hexsig[:-2]),
        ("webhook", "X-Signature-256", "sha256=é" + hexsig[1:]),
        ("github", "X-Hub-Signature-256", "sha256="),
        ("github", "X-Hub-Signature-256", "=" * 70),
        ("github", "X-Hub-Signature-256", "sha256=" + "é" * 64),
        ("stripe", "Stripe-Signature", ""),
        ("stripe", "Stripe-Signature", "garbage"),
        ("stripe", "Stripe-Signature", f"t=soon,{stripe_v1}"),
        ("stripe", "Stripe-Signature", f"t=1e9,{stripe_v1}"),
        ("stripe", "Stripe-Signature", f"t=-{int(NOW)},{stripe_v1}"),
        ("stripe", "Stripe-Signature", f"t=,{stripe_v1}"),
        ("stripe", "Stripe-Signature", f"{stripe_t}"),
        ("stripe", "Stripe-Signature", f"{stripe_t},v1="),
        ("stripe", "Stripe-Signature", f"{stripe_t},v1=xyz"),
        ("stripe", "Stripe-Signature", f"{stripe_t},{stripe_v1},"),
        ("stripe", "Stripe-Signature", f"t=١٧٥٠٠٠٠٠٠٠,{stripe_v1}"),
        ("slack", "X-Slack-Request-Timestamp", ""),
        ("slack", "X-Slack-Request-Timestamp", "yesterday"),
        ("slack", "X-Slack-Request-Timestamp", f"{NOW}"),
        ("slack", "X-Slack-Request-Timestamp", "9" * 40),
        ("slack", "X-Slack-Signature", ""),
        ("slack", "X-Slack-Signature", hexsig),
        ("slack", "X-Slack-Signature", f"v1={hexsig}"),
        ("slack", "X-Slack-Signature", "v0=not-hex"),
        ("standard", "webhook-id", "   "),
        ("standard", "webhook-timestamp", "NaN"),
        ("standard", "webhook-timestamp", "0x10"),
        ("standard", "webhook-signature", ""),
        ("standard", "webhook-signature", b64sig),
        ("standard", "webhook-signature", "v1,"),
        ("standard", "webhook-signature", "v1,%%%not-base64%%%"),
        ("standard", "webhook-signature", "v1,é"),
        ("standard", "webhook-signature", f"v2,{b64sig}"),
        ("shopify", "X-Shopify-Hmac-Sha256", ""),
        ("shopify", "X-Shopify-Hmac-Sha256", "!!not base64!!"),
        ("shopify", "X-Shopify-Hmac-Sha256", "YQ="),
        ("shopify", "X-Shopify-Hmac-Sha256", good["webhook"]["X-Signature-256"]),
    ]


@pytest.mark.parametrize(("source", "header", "value"), _garbage())
def test_verify_rejects_garbage_header_values(source, header, value):
    headers = signed_headers(source, SECRETS[source], BODY)
    headers[header] = value
    rejected(source, headers)


@pytest.mark.parametrize("source", SOURCES)
def test_verify_rejects_a_standard_secret_that_is_not_base64_without_crashing(source):
    headers = signed_headers(source, SECRETS[source], BODY)
    rejected(source, headers, secrets=["whsec_%%%"] if source == "standard" else ["%%%"])


def test_every_rejection_gives_the_client_the_same_answer():
    causes = [
        rejected("github", {}),
        rejected("github", signed_headers("github", "wrong", BODY)),
        rejected("slack", signed_headers("slack", SECRETS["slack"], BODY, ts=0)),
        rejected("stripe", {"Stripe-Signature": "t=x"}),
        rejected("nope", {}, secrets=["x"]),
    ]
    assert {json.dumps(exc.to_body()) for exc in causes} == {
        json.dumps(InvalidSignature().to_body())
    }
    assert {exc.STATUS_CODE for exc in causes} == {401}
    assert len({exc.reason for exc in causes}) == len(causes)


@pytest.mark.parametrize("source", SOURCES)
def test_rejection_never_carries_the_secret_or_a_signature(source):
    good = signed_headers(source, SECRETS[source], BODY)
    exc = rejected(source, good, body=b"tampered")
    assert str(exc) == InvalidSignature().message
    assert exc.to_body() == InvalidSignature().to_body()
    # The log-only reason is a short fixed phrase: no room for a 64-char hex or base64 MAC.
    assert re.fullmatch(r"[a-z0-9 -]{1,50}", exc.reason)
    assert SECRETS[source] not in repr(exc)
    # Nothing chained that a traceback logger could print.
    assert exc.__cause__ is None and exc.__suppress_context__


header_names = st.sampled_from(
    [
        "X-Signature-256",
        "X-Hub-Signature-256",
        "Stripe-Signature",
        "X-Slack-Signature",
        "X-Slack-Request-Timestamp",
        "webhook-id",
        "webhook-timestamp",
        "webhook-signature",
        "X-Shopify-Hmac-Sha256",
    ]
) | st.text(max_size=20)
header_values = (
    st.text(max_size=120)
    | st.builds(lambda ts, sig: f"t={ts},v1={sig}", st.integers(), st.text(max_size=70))
    | st.builds(lambda sig: f"sha256={sig}", st.text(alphabet="0123456789abcdefé", max_size=70))
    | st.builds(lambda sig: f"v1,{sig}", st.text(max_size=50))
    | st.integers().map(str)
)


@settings(
    max_examples=400, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(
    source=st.sampled_from((*SOURCES, "", "unknown")),
    headers=st.dictionaries(header_names, header_values, max_size=6),
    body=st.binary(max_size=200),
    secrets=st.lists(st.text(max_size=40), max_size=3),
    now=st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12),
)
def test_verify_on_arbitrary_input_raises_only_invalid_signature(
    source, headers, body, secrets, now
):
    with pytest.raises(InvalidSignature):
        verify(source, secrets=secrets, headers=headers, body=body, now=now)


# --- generate_secret ------------------------------------------------------------------


@pytest.mark.parametrize("source", sorted(set(SOURCES) - SECRET_REQUIRED))
def test_generate_secret_is_whsec_base64_of_32_random_bytes(source):
    first, second = generate_secret(source), generate_secret(source)
    assert first != second
    assert first.startswith("whsec_")
    assert len(base64.b64decode(first.removeprefix("whsec_"), validate=True)) == 32


@pytest.mark.parametrize("source", sorted(set(SOURCES) - SECRET_REQUIRED))
def test_generated_secret_verifies_its_own_scheme(source):
    secret = generate_secret(source)
    check(source, signed_headers(source, secret, BODY), secrets=[secret])


@pytest.mark.parametrize("source", sorted(SECRET_REQUIRED))
def test_generate_secret_refuses_sources_that_issue_their_own(source):
    with pytest.raises(ValidationError) as info:
        generate_secret(source)
    assert info.value.field == "event.secret"


def test_generate_secret_refuses_unknown_source():
    with pytest.raises(ValidationError) as info:
        generate_secret("gitlab")
    assert info.value.field == "event.source"


# --- delivery_id and dedupe_key ------------------------------------------------------


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


# --- slack_challenge ------------------------------------------------------------------


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


# --- sign_outbound --------------------------------------------------------------------


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


# --- clip_headers ---------------------------------------------------------------------


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


# --- LinkedIn -------------------------------------------------------------------------


def test_linkedin_signature_header_may_carry_the_hmacsha256_prefix_too():
    digest = signed_headers("linkedin", SECRETS["linkedin"], BODY)["X-LI-Signature"]
    check("linkedin", {"X-LI-Signature": "hmacsha256=" + digest})


def test_linkedin_signature_over_the_bare_body_is_rejected():
    # The prefix is part of what is signed: an HMAC of the body alone must not verify.
    bare = hmac.new(SECRETS["linkedin"].encode(), BODY, hashlib.sha256).hexdigest()
    rejected("linkedin", {"X-LI-Signature": bare})


def test_linkedin_challenge_answers_the_hex_hmac_of_the_code_with_the_client_secret():
    from chalicelib.domain.signatures import linkedin_challenge

    code = "890e4665-4dfe-4ab1-b689-ed553bceeed0"  # the code in LinkedIn's guide
    answer = linkedin_challenge(code, secrets=[SECRETS["linkedin"], OTHER_SECRETS["linkedin"]])
    expected = hmac.new(SECRETS["linkedin"].encode(), code.encode(), hashlib.sha256).hexdigest()
    assert answer == {"challengeCode": code, "challengeResponse": expected}
    assert linkedin_challenge(code, secrets=[]) is None
    assert linkedin_challenge("", secrets=[SECRETS["linkedin"]]) is None


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
