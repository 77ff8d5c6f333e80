"""Stripe's ``Stripe-Signature``: several v1, no v0-only, one timestamp."""

from __future__ import annotations

from tests.unit.signature_cases import (
    BODY,
    NOW,
    SECRETS,
    check,
    rejected,
    signed_headers,
)

# --- accepted -----------------------------------------------------------------------------


def test_verify_accepts_stripe_header_with_several_v1_when_any_matches():
    good = signed_headers("stripe", SECRETS["stripe"], BODY)["Stripe-Signature"]
    t, v1 = good.split(",")
    header = f"{t},v1={'0' * 64},{v1},v0={'1' * 64}"
    check("stripe", {"Stripe-Signature": header})


# --- rejected -----------------------------------------------------------------------------


def test_verify_rejects_stripe_header_with_only_a_v0_signature():
    good = signed_headers("stripe", SECRETS["stripe"], BODY)["Stripe-Signature"]
    rejected("stripe", {"Stripe-Signature": good.replace("v1=", "v0=")})


def test_verify_rejects_stripe_header_with_two_timestamps():
    good = signed_headers("stripe", SECRETS["stripe"], BODY)["Stripe-Signature"]
    # The first t is the signed one; a parser that ignored the second would accept.
    rejected("stripe", {"Stripe-Signature": f"{good},t={int(NOW)}"})
