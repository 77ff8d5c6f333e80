"""``verify`` across every signed source (accepted, rotation, rejected, fail-closed) and
``generate_secret``. Each provider's own quirks are in ``test_signatures_<provider>.py``."""

from __future__ import annotations

import base64
import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chalicelib.domain.errors import InvalidSignature, ValidationError
from chalicelib.domain.signatures import (
    SECRET_REQUIRED,
    SOURCES,
    TOLERANCE_S,
    generate_secret,
    verify,
)
from tests.unit.signature_cases import (
    BODY,
    NOW,
    OTHER_SECRETS,
    SECRETS,
    TIMESTAMPED,
    check,
    rejected,
    signed_headers,
)

# --- accepted -----------------------------------------------------------------------------


@pytest.mark.parametrize("source", SOURCES)
def test_verify_accepts_a_delivery_signed_by_the_provider_recipe(source):
    check(source, signed_headers(source, SECRETS[source], BODY))


@pytest.mark.parametrize("source", SOURCES)
def test_verify_accepts_header_names_in_any_case(source):
    headers = signed_headers(source, SECRETS[source], BODY)
    check(source, {name.upper(): value for name, value in headers.items()})
    check(source, {name.lower(): value for name, value in headers.items()})


@pytest.mark.parametrize("source", TIMESTAMPED)
@pytest.mark.parametrize("offset_s", [-TOLERANCE_S, TOLERANCE_S])
def test_verify_accepts_timestamp_exactly_at_the_tolerance(source, offset_s):
    headers = signed_headers(source, SECRETS[source], BODY, ts=int(NOW) + offset_s)
    check(source, headers)


# --- rotation -----------------------------------------------------------------------------


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


# --- rejected -----------------------------------------------------------------------------


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


# --- generate_secret ----------------------------------------------------------------------


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
