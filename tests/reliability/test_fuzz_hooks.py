"""Fuzz ``POST /hooks/{token}``: every generated request gets exactly the contract's answer.

Hypothesis drives tokens (real, mangled, random), headers (the providers' signature and
delivery headers with random values, random names, random content types) and bodies
(random bytes, JSON of any shape, deeply nested JSON, objects with duplicate keys,
empty). Three deliveries in four are signed properly with the trigger's own secret
(timestamps up to 400 s off), so the fuzzing reaches what lies behind the signature:
dedupe, storing and dispatching events with odd bodies.

The expected answer is worked out here, independently of the code under test (an
oracle): a request is authentic only if it went to the real token, was signed by the
test with the right secret and, for the timestamped schemes, within 300 s; anything else
is the one 401. An authentic delivery is 202 with the event id of its dedupe key the
first time (the provider's signed id, else the SHA-256 of the body) and 200 duplicate
with the first ids after that. ``test_the_fuzz_fails_when_signatures_are_not_checked``
turns signature checking off and requires this fuzz to fail: it can.
Through ``chalice.test.Client`` (the app as API Gateway calls it) on the moto server.
"""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import HealthCheck, Phase, assume, event, given, settings
from hypothesis import strategies as st

import app as app_module
from chalicelib.domain import ids, signatures
from chalicelib.services import triggers
from devstack.gateway import contract_client as Client
from tests.signing import ISSUED_SECRETS, SOURCES, signed_headers

INVALID = {"error": {"code": "invalid_signature", "message": "signature missing or invalid"}}
TIMESTAMPED = ("stripe", "slack", "standard")
TOLERANCE_S = 300
SIGNATURE_HEADERS = (
    "X-Signature-256",
    "X-Hub-Signature-256",
    "X-GitHub-Event",
    "X-GitHub-Delivery",
    "Stripe-Signature",
    "X-Slack-Signature",
    "X-Slack-Request-Timestamp",
    "webhook-id",
    "webhook-timestamp",
    "webhook-signature",
    "X-Shopify-Hmac-Sha256",
    "X-Shopify-Webhook-Id",
    "X-Shopify-Topic",
    "Idempotency-Key",
    "Content-Type",
    "Content-Encoding",
)

printable = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=120)
# A delivery id as a sender would write it: no surrounding blanks (HTTP strips them).
delivery_ids = st.from_regex(r"[!-~]([ -~]{0,100}[!-~])?", fullmatch=True)
header_names = st.one_of(
    st.sampled_from(SIGNATURE_HEADERS),
    st.from_regex(r"[A-Za-z][A-Za-z0-9-]{0,30}", fullmatch=True),
)
header_values = st.one_of(
    printable,
    st.sampled_from(["", "sha256=", "sha256=00", "t=1,v1=00", "v1,AAAA", "application/json"]),
    st.integers().map(str),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
# The keys the schemes read, so duplicates land where they matter (Stripe's "id"...).
telling_keys = st.sampled_from(["id", "event_id", "type", "challenge", "event", "a"])
duplicate_key_objects = st.lists(st.tuples(telling_keys, json_values), min_size=2, max_size=6).map(
    lambda pairs: "{" + ",".join(f"{json.dumps(k)}:{json.dumps(v)}" for k, v in pairs) + "}"
)
deeply_nested = st.tuples(st.integers(1, 5000), st.sampled_from(["list", "object"])).map(
    lambda spec: (
        "[" * spec[0] + "]" * spec[0]
        if spec[1] == "list"
        else '{"a":' * spec[0] + "1" + "}" * spec[0]
    )
)
bodies = st.one_of(
    st.binary(max_size=400),
    json_values.map(lambda v: json.dumps(v).encode()),
    duplicate_key_objects.map(str.encode),
    deeply_nested.map(str.encode),
    st.just(b""),
    st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
)


def _json(body: bytes) -> object:
    """The body as JSON, the way any JSON reader takes it (last duplicate key wins)."""
    if body.lstrip()[:1] not in (b"{", b"["):
        return None
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


def _signed_id(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def expected_key(source: str, headers: dict, body: bytes) -> str:
    """What the contract says names this delivery: the signed id, else the body's digest."""
    doc = _json(body)
    found = None
    if source == "standard":
        found = headers["webhook-id"]
    elif source == "stripe" and isinstance(doc, dict):
        found = _signed_id(doc.get("id"))
    elif source == "slack" and isinstance(doc, dict):
        found = _signed_id(doc.get("event_id"))
    return f"id:{found}" if found is not None else "sha256:" + hashlib.sha256(body).hexdigest()


def is_goodbye_body(source: str, body: bytes) -> bool:
    """Bodies that would disable a trigger: left out here (test_source_gone has them)."""
    doc = _json(body)
    if not isinstance(doc, dict):
        return False
    if source == "github":
        return "hook_id" in doc and doc.get("action") == "deleted"
    if source == "slack":
        return isinstance(doc.get("event"), dict) and doc["event"].get("type") == "app_uninstalled"
    if source == "shopify":
        return "myshopify_domain" in doc
    return False


@pytest.fixture
def hooks(aws, clock, root, monkeypatch):
    """One trigger per source, the in-process client, and what has been accepted so far."""
    monkeypatch.setattr("chalicelib.routes.resource.now_utc", clock)
    made = []
    for source in SOURCES:
        spec = {"source": source}
        if source in ISSUED_SECRETS:
            spec["secret"] = ISSUED_SECRETS[source]
        view = triggers.create_trigger(root, {"workflow": "echo", "event": spec}, now=clock())
        token = view["webhook"]["url"].rsplit("/", 1)[-1]
        made.append((source, view["id"], token, view["webhook"]["secret"]))
    with Client(app_module.app) as client:
        yield {"made": made, "client": client, "clock": clock, "accepted": {}}


def deliver_one(hooks: dict, data: st.DataObject) -> None:
    """Draw one request, send it, and require the answer the contract gives it."""
    client, clock, accepted = hooks["client"], hooks["clock"], hooks["accepted"]
    source, trigger_id, real_token, secret = data.draw(st.sampled_from(hooks["made"]), "trigger")
    token = real_token
    if data.draw(st.integers(0, 3), label="mangle") == 0:
        token = data.draw(
            st.one_of(
                st.sampled_from(
                    [
                        real_token[:-1],
                        real_token.split(".", 1)[0],
                        real_token + "x",
                        real_token.upper(),
                    ]
                ),
                st.from_regex(r"[A-Za-z0-9._~-]{1,80}", fullmatch=True),
            ),
            label="token",
        )
    body = data.draw(bodies, label="body")
    headers = data.draw(st.dictionaries(header_names, header_values, max_size=6), label="headers")
    signed = data.draw(st.integers(0, 3), label="signed") > 0
    fresh = False
    if signed:
        # Providers sign text (JSON): the SDKs that sign here take a str.
        body = body.decode("utf-8", "replace").encode()
        skew = data.draw(st.one_of(st.integers(-60, 60), st.integers(-400, 400)), label="skew")
        fresh = source not in TIMESTAMPED or abs(skew) <= TOLERANCE_S
        ts = int(clock().timestamp()) + skew
        delivery = data.draw(delivery_ids, label="delivery")
        headers.update(signed_headers(source, secret, body, ts=ts, delivery=delivery))
    authentic = token == real_token and signed and fresh
    if authentic:
        assume(not is_goodbye_body(source, body))

    answer = client.http.post(f"/hooks/{token}", headers=headers, body=body)
    status, got = answer.status_code, json.loads(answer.body or b"null")
    event(f"{source} {status}" + (" (authentic)" if authentic else ""))

    if not authentic:
        expected: tuple[int, object] = (401, INVALID)
    else:
        doc = _json(body)
        doc = doc if isinstance(doc, dict) else {}
        challenge = doc.get("challenge")
        if (
            source == "slack"
            and doc.get("type") == "url_verification"
            and isinstance(challenge, str)
        ):
            expected = (200, {"challenge": challenge})
        else:
            lowered = {k.lower(): v for k, v in headers.items()}
            key = expected_key(source, lowered, body)
            # The Idempotency-Key, if sent, is a second key (CONTRACT "Ingress"): the
            # content's own first, else the key's.
            idem = (lowered.get("idempotency-key") or "").strip() and lowered["idempotency-key"]
            first = accepted.get((source, key)) or (
                accepted.get((source, "idem", idem)) if idem else None
            )
            if first is not None:
                expected = (200, {**first, "duplicate": True})
            else:
                assert status == 202, (status, got)
                first = {"event_id": ids.event_id_for(trigger_id, key), "run_id": got["run_id"]}
                assert got["run_id"].startswith(trigger_id + "."), got
                accepted[(source, key)] = first
                if idem:
                    accepted[(source, "idem", idem)] = first
                expected = (202, first)
    assert (status, got) == expected, (source, token == real_token, signed, fresh)


FUZZ = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@FUZZ
@given(data=st.data())
def test_each_delivery_to_a_hook_gets_the_contracts_answer(hooks, data):
    deliver_one(hooks, data)


def test_the_fuzz_fails_when_signatures_are_not_checked(hooks, monkeypatch):
    """The planted defect: with verification a no-op, the property above must fail."""
    monkeypatch.setattr(signatures, "verify", lambda *args, **kwargs: None)

    @settings(
        max_examples=60,
        phases=[Phase.generate],
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(data=st.data())
    def unchecked(data):
        deliver_one(hooks, data)

    with pytest.raises(AssertionError) as caught:
        unchecked()
    assert "202" in str(caught.value) or "200" in str(caught.value)
