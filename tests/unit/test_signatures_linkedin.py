"""LinkedIn: ``X-LI-Signature`` forms, and the endpoint validation answer."""

from __future__ import annotations

import hashlib
import hmac

from tests.unit.signature_cases import (
    BODY,
    OTHER_SECRETS,
    SECRETS,
    check,
    rejected,
    signed_headers,
)

# --- LinkedIn -----------------------------------------------------------------------------


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
