"""Rotated webhook secrets (``domain/secret_grace``): which previous ones still verify."""

from __future__ import annotations

import json

import pytest

from chalicelib.domain.secret_grace import (
    MAX_PREVIOUS_SECRETS,
    previous_after_rotation,
    previous_in_grace,
)

NOW = 1_000_000


@pytest.mark.parametrize(
    ("prev", "until", "older", "expected"),
    [
        (None, None, None, []),
        ("p", NOW + 1, None, [("p", NOW + 1)]),
        ("p", NOW, None, []),  # its grace ends at the instant
        (
            "p",
            NOW + 5,
            json.dumps([["o1", NOW + 3], ["o2", NOW - 1]]),
            [("p", NOW + 5), ("o1", NOW + 3)],
        ),
        (None, None, json.dumps([["o1", NOW + 3]]), [("o1", NOW + 3)]),
        ("p", NOW + 5, "not json", [("p", NOW + 5)]),
        ("p", NOW + 5, json.dumps({"o": 1}), [("p", NOW + 5)]),
        (None, None, json.dumps([["o1"], [1, NOW + 9], "x", ["o3", NOW + 9]]), [("o3", NOW + 9)]),
    ],
)
def test_the_previous_secrets_in_their_grace_newest_first(prev, until, older, expected):
    assert (
        previous_in_grace(prev_sealed=prev, prev_until=until, older=older, now_ms=NOW) == expected
    )


@pytest.mark.parametrize(
    ("current", "previous", "grace_s", "expected"),
    [
        ("c", [], 60, [("c", NOW + 60_000)]),
        ("c", [("p", NOW + 5)], 60, [("c", NOW + 60_000), ("p", NOW + 5)]),
        ("c", [("p", NOW + 5)], 0, []),  # "it leaked": every older secret stops now
        (None, [("p", NOW + 5)], 60, [("p", NOW + 5)]),  # nothing to keep but what was kept
        (
            "c",
            [(f"p{i}", NOW + i) for i in range(5)],
            60,
            [("c", NOW + 60_000), ("p0", NOW), ("p1", NOW + 1)],
        ),
    ],
)
def test_a_rotation_keeps_the_replaced_secret_for_its_grace(current, previous, grace_s, expected):
    kept = previous_after_rotation(current=current, previous=previous, grace_s=grace_s, now_ms=NOW)
    assert kept == expected
    assert len(kept) <= MAX_PREVIOUS_SECRETS
