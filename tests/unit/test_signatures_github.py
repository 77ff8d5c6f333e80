"""GitHub's scheme: the documented test vector."""

from __future__ import annotations

from chalicelib.domain.signatures import (
    verify,
)
from tests.unit.signature_cases import (
    NOW,
)

# --- accepted -----------------------------------------------------------------------------


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
