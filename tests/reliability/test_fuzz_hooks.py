"""Fuzz ``POST /hooks/{token}``: whatever a client sends, the answer is never a 5xx.

Hypothesis drives tokens (real, mangled, random), headers (the providers' signature
and delivery headers with random values, random names, random content types) and
bodies (random bytes, JSON of any shape, empty). Half the deliveries are signed
properly with the trigger's own secret, so the fuzzing also reaches the paths behind
the signature check: filters, dedupe, storing and dispatching events with odd bodies.
Through ``chalice.test.Client`` (the app as API Gateway calls it) on the moto server.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import app as app_module
from chalicelib.local.gateway import contract_client as Client
from chalicelib.services import triggers
from tests.signing import ISSUED_SECRETS, SOURCES, signed_headers

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
bodies = st.one_of(
    st.binary(max_size=400),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.just(b""),
    st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
)


@pytest.fixture
def hooks(aws, clock, root, monkeypatch):
    """One trigger per source: (source, token, secret), and the in-process client."""
    monkeypatch.setattr(app_module, "now_utc", clock)
    made = []
    for source in SOURCES:
        event = {"source": source}
        if source in ISSUED_SECRETS:
            event["secret"] = ISSUED_SECRETS[source]
        view = triggers.create_trigger(root, {"workflow": "echo", "event": event}, now=clock())
        made.append((source, view["webhook"]["url"].rsplit("/", 1)[-1], view["webhook"]["secret"]))
    with Client(app_module.app) as client:
        yield made, client


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_no_delivery_to_a_hook_gets_a_5xx(hooks, clock, data):
    made, client = hooks
    source, token, secret = data.draw(st.sampled_from(made), label="trigger")
    # Mostly the real token, so that most deliveries get past the lookup.
    token = data.draw(
        st.one_of(
            st.just(token),
            st.sampled_from([token[:-1], token.split(".", 1)[0], token + "x", token.upper()]),
            st.from_regex(r"[A-Za-z0-9._~-]{1,80}", fullmatch=True),
        )
        if data.draw(st.integers(0, 3), label="mangle") == 0
        else st.just(token),
        label="token",
    )
    body = data.draw(bodies, label="body")
    headers = data.draw(st.dictionaries(header_names, header_values, max_size=6), label="headers")
    if data.draw(st.integers(0, 3), label="signed") > 0:
        # Providers sign text (JSON): the SDKs that sign here take a str.
        body = body.decode("utf-8", "replace").encode()
        skew = st.one_of(st.integers(-60, 60), st.integers(-400, 400))
        ts = int(clock().timestamp()) + data.draw(skew, label="skew")
        headers.update(signed_headers(source, secret, body, ts=ts, delivery=data.draw(printable)))
    answer = client.http.post(f"/hooks/{token}", headers=headers, body=body)
    event(f"{source} {answer.status_code}")
    assert answer.status_code < 500, (answer.status_code, answer.body)
    if answer.status_code >= 400:
        assert "error" in json.loads(answer.body), answer.body
