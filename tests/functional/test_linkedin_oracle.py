"""LinkedIn's challenge endpoint is no signing oracle (issue 26, item 1).

``GET /hooks/{token}?challengeCode=X`` answers hex HMAC-SHA256(client secret, X), and a
notification's ``X-LI-Signature`` is HMAC-SHA256(client secret, "hmacsha256=" + body):
the same key. Answering any X would sign any body; only LinkedIn's format (a UUID) is
answered, which can never start with "hmacsha256=".
"""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from urllib.parse import quote

import pytest

from chalicelib.store.events import EventModel
from tests.scenarios import post, runs_of, source_trigger, token_of

INVALID = {"error": {"code": "invalid_signature", "message": "signature missing or invalid"}}
SECRET = "WPL_AP1.li-client-secret.AbC123=="


def _challenge(http, token: str, code: str):
    response = http.get(f"/hooks/{token}?challengeCode={quote(code, safe='')}")
    return response.status_code, json.loads(response.body or b"null")


def test_the_forged_delivery_of_the_audit_gets_401_and_no_run(aws, clock, root, http):
    created = source_trigger(root, clock, "linkedin", secret=SECRET, workflow="echo")
    token = token_of(created)
    forged = json.dumps(
        {"notificationId": "forged-1", "type": "FORGED", "cmd": "attacker payload"}
    ).encode()
    # The attack: have the challenge endpoint sign the notification's signing input,
    # then send the notification with that answer as its signature.
    asked, answer = _challenge(http, token, "hmacsha256=" + forged.decode())
    signature = answer.get("challengeResponse", "") if isinstance(answer, dict) else ""
    sent, delivered = post(http, token, forged, {"X-LI-Signature": signature or "0" * 64})
    assert (asked, answer) == (401, INVALID)
    assert (sent, delivered) == (401, INVALID)
    assert list(EventModel.scan()) == []
    assert runs_of(created["id"]) == []
    # Sanity: the value the oracle used to give is exactly what verifies a notification.
    real = hmac.new(SECRET.encode(), b"hmacsha256=" + forged, hashlib.sha256).hexdigest()
    assert post(http, token, forged, {"X-LI-Signature": real})[0] == 202


@pytest.mark.parametrize(
    "code",
    [
        "hmacsha256={}",
        "HMACSHA256={}",
        '{"notificationId":1}',
        "x" * 36,
        "890e4665-4dfe-4ab1-b689-ed553bceeed0\n",
        " 890e4665-4dfe-4ab1-b689-ed553bceeed0",
        "890e4665-4dfe-4ab1-b689-ed553bceeed0x",
        "890e46654dfe4ab1b689ed553bceeed0",
        "{890e4665-4dfe-4ab1-b689-ed553bceeed0}",
        "",
    ],
)
def test_a_challenge_code_that_is_not_a_uuid_gets_the_401_of_a_bad_signature(
    aws, clock, root, http, code
):
    created = source_trigger(root, clock, "linkedin", secret=SECRET)
    assert _challenge(http, token_of(created), code) == (401, INVALID)


def test_linkedins_uuid_challenge_is_still_answered(aws, clock, root, http):
    created = source_trigger(root, clock, "linkedin", secret=SECRET)
    for code in ("890e4665-4dfe-4ab1-b689-ed553bceeed0", str(uuid.uuid4()).upper()):
        expected = hmac.new(SECRET.encode(), code.encode(), hashlib.sha256).hexdigest()
        status, answer = _challenge(http, token_of(created), code)
        assert (status, answer) == (200, {"challengeCode": code, "challengeResponse": expected})
