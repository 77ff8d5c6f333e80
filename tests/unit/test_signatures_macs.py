"""The shared HMAC helpers: strict decoding, the replay window, and a constant-time match."""

from __future__ import annotations

import base64
import math

import pytest

from chalicelib.domain.errors import InvalidSignature
from chalicelib.domain.signatures.macs import (
    TOLERANCE_S,
    Rejected,
    fresh_timestamp,
    hmac_sha256,
    invalid,
    match,
    required,
    unb64,
    unhex,
    utf8,
)

NOW = 1_750_000_000.0
DIGEST = bytes(range(32))


def test_hmac_sha256_is_rfc_4231_test_case_2():
    assert hmac_sha256(b"Jefe", b"what do ya want for nothing?").hex() == (
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (DIGEST.hex(), DIGEST),
        (DIGEST.hex().upper(), DIGEST),
        (f"  {DIGEST.hex()}\t", DIGEST),
        (DIGEST.hex()[:-1], None),  # 63 digits: not a SHA-256
        (DIGEST.hex() + "00", None),
        ("g" * 64, None),
        ("", None),
        ("0x" + DIGEST.hex()[2:], None),
    ],
)
def test_unhex_decodes_only_a_hex_sha256(value, expected):
    assert unhex(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (base64.b64encode(DIGEST).decode(), DIGEST),
        (" " + base64.b64encode(DIGEST).decode() + "\n", DIGEST),
        (base64.b64encode(DIGEST).decode().rstrip("="), None),  # padding is required here
        (base64.urlsafe_b64encode(b"\xfb\xff" * 16).decode(), None),  # "-" and "_" refused
        ("not base64!", None),
        ("", b""),
    ],
)
def test_unb64_is_strict(value, expected):
    assert unb64(value) == expected


@pytest.mark.parametrize(
    ("value", "now", "fresh"),
    [
        (str(int(NOW)), NOW, True),
        (str(int(NOW) - TOLERANCE_S), NOW, True),  # exactly at the edge
        (str(int(NOW) + TOLERANCE_S), NOW, True),
        (str(int(NOW) - TOLERANCE_S - 1), NOW, False),
        (str(int(NOW) + TOLERANCE_S + 1), NOW, False),
        (f" {int(NOW)} ", NOW, True),
        (str(int(NOW)), math.nan, False),  # a NaN clock fails closed
        ("1" * 16, NOW, False),  # more digits than any timestamp
        ("-1", NOW, False),
        ("1.5e9", NOW, False),
        ("", NOW, False),
    ],
)
def test_fresh_timestamp_is_digits_within_the_tolerance_of_now(value, now, fresh):
    if fresh:
        assert fresh_timestamp(value, now) == value.strip()
    else:
        with pytest.raises(Rejected):
            fresh_timestamp(value, now)


@pytest.mark.parametrize(
    ("keys", "candidates", "reason"),
    [
        (["a"], [None, b""], "signature not decodable"),
        (["a"], [b"nope"], "signature mismatch"),
        (["skip"], [b"mac:a"], "signature mismatch"),  # a key with no MAC matches nothing
    ],
)
def test_match_rejects_with_the_reason(keys, candidates, reason):
    with pytest.raises(Rejected) as caught:
        match(keys, candidates, lambda key: None if key == "skip" else f"mac:{key}".encode())
    assert caught.value.reason == reason


@pytest.mark.parametrize(
    ("keys", "candidates"),
    [
        (["a"], [b"mac:a"]),
        (["old", "new"], [b"mac:new"]),  # rotation: any key
        (["a"], [None, b"junk", b"mac:a"]),  # any candidate
        (["skip", "a"], [b"mac:a"]),
    ],
)
def test_match_accepts_any_candidate_under_any_key(keys, candidates):
    match(keys, candidates, lambda key: None if key == "skip" else f"mac:{key}".encode())


@pytest.mark.parametrize("value", [None, "", "   "])
def test_a_missing_or_blank_header_is_rejected_naming_it(value):
    with pytest.raises(Rejected) as caught:
        required(value, "webhook-id")
    assert caught.value.reason == "webhook-id missing"


def test_utf8_keeps_a_lone_surrogate_instead_of_raising():
    assert utf8("a\udcff") == b"a\xed\xb3\xbf"


def test_invalid_is_a_bare_invalid_signature_with_the_reason_for_logs():
    exc = invalid("timestamp outside tolerance")
    assert isinstance(exc, InvalidSignature)
    assert exc.reason == "timestamp outside tolerance"  # type: ignore[attr-defined]
    assert "timestamp" not in str(exc.to_body())
