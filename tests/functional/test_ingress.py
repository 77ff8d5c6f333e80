"""``POST /hooks/{token}`` through the real Chalice route, against the moto server.

Deliveries are signed with the providers' own SDKs (see ``tests/signing.py``); time is
the test's ``Clock``, which the route reads through ``chalicelib.routes.resource.now_utc``.
"""

from __future__ import annotations

import hashlib
import json
import logging
from datetime import timedelta

import boto3
import pytest

from chalicelib import assembly
from chalicelib.domain.spec import ROTATION_GRACE_S
from chalicelib.services import audit as audit_log
from chalicelib.services import events, switch, triggers
from chalicelib.services.auth import Principal
from chalicelib.store import kms
from chalicelib.store.audit import AuditModel
from chalicelib.store.deliveries import DeliveryModel
from chalicelib.store.events import EventModel
from chalicelib.store.triggers import TriggerModel
from chalicelib.workflows import REGISTRY, Fire, Result, Workflow
from tests.conftest import ROOT_KEY
from tests.scenarios import now_s, post, source_trigger, token_of
from tests.signing import GITHUB_VECTOR, ISSUED_SECRETS, SOURCES, delivery_body, signed_headers

TIMESTAMPED = ("stripe", "slack", "standard")
INVALID = {"error": {"code": "invalid_signature", "message": "signature missing or invalid"}}
SIGNATURE_HEADERS = {
    "webhook": ("X-Signature-256",),
    "github": ("X-Hub-Signature-256",),
    "stripe": ("Stripe-Signature",),
    "slack": ("X-Slack-Signature", "X-Slack-Request-Timestamp"),
    "standard": ("webhook-signature", "webhook-timestamp", "webhook-id"),
    "shopify": ("X-Shopify-Hmac-Sha256",),
}


@pytest.fixture
def fires(monkeypatch):
    """A workflow ``record-fire`` that keeps every Fire it gets and returns a digest of it."""
    seen: list[Fire] = []

    def record(fire: Fire) -> Result:
        seen.append(fire)
        text = json.dumps(fire.payload, sort_keys=True) if fire.payload is not None else ""
        return Result(output={"sha256": hashlib.sha256(text.encode()).hexdigest()})

    monkeypatch.setitem(REGISTRY, "record-fire", Workflow(name="record-fire", func=record))
    return seen


def stored_events() -> list[EventModel]:
    """The events table's items, but the aliases of ``Idempotency-Key`` headers."""
    return [e for e in EventModel.scan() if e.alias_of is None]


def stored_aliases() -> list[EventModel]:
    return [e for e in EventModel.scan() if e.alias_of is not None]


# --- each scheme, through the route ---------------------------------------------------


@pytest.mark.parametrize("source", SOURCES)
def test_each_source_is_accepted_and_every_bad_signature_gets_the_same_401(
    aws, clock, root, http, fires, source
):
    created = source_trigger(root, clock, source, workflow="record-fire")
    secret = created["webhook"]["secret"]
    body = delivery_body(source, "delivery-1")
    good = signed_headers(source, secret, body, ts=now_s(clock), delivery="delivery-1")

    rejected = {
        "tampered body": (body.replace(b"}", b',"x":1}', 1), good),
        "wrong secret": (
            body,
            signed_headers(source, secret[:-4] + "AAA=", body, ts=now_s(clock), delivery="d"),
        ),
        "missing signature": (
            body,
            {k: v for k, v in good.items() if k not in SIGNATURE_HEADERS[source]},
        ),
        "garbage signature": (
            body,
            {**good, **{h: "garbage,,=\u00e9" for h in SIGNATURE_HEADERS[source]}},
        ),
        "unknown token": (body, good),
    }
    if source in TIMESTAMPED:
        for label, offset in (("stale", -301), ("future", 301)):
            rejected[label] = (
                body,
                signed_headers(source, secret, body, ts=now_s(clock) + offset, delivery="d"),
            )
    for label, (sent_body, headers) in rejected.items():
        token = token_of(created)
        if label == "unknown token":
            token = token.split(".")[0] + ".not-the-token"
        status, answer = post(http, token, sent_body, headers)
        assert (status, answer) == (401, INVALID), label
    assert stored_events() == []

    status, answer = post(http, created, body, good)
    assert status == 202, answer
    assert answer["event_id"].startswith("evt_")
    assert answer["run_id"].startswith(created["id"] + ".")
    assert aws.drain(assembly.build_runner(clock=clock)) == ["succeeded"]
    assert len(fires) == 1
    assert fires[0].payload == json.loads(body)
    assert fires[0].event_id == answer["event_id"]
    assert fires[0].surface == "event"
    # What the workflow sees of the headers: no signature, no credential.
    seen_headers = {name.lower() for name in fires[0].headers}
    assert seen_headers
    assert not seen_headers & {h.lower() for h in SIGNATURE_HEADERS[source]} - {
        "webhook-id",
        "webhook-timestamp",
        "x-slack-request-timestamp",
    }


def test_githubs_documented_vector_is_accepted(aws, clock, root, http, fires):
    created = source_trigger(root, clock, "github", workflow="record-fire")
    rotated = events.rotate_secret(
        root, created["id"], {"secret": GITHUB_VECTOR["secret"], "grace_s": 0}, now=clock()
    )
    assert rotated["secret"] == GITHUB_VECTOR["secret"]
    headers = {
        "X-Hub-Signature-256": GITHUB_VECTOR["signature"],
        "X-GitHub-Event": "ping",
        "X-GitHub-Delivery": "vector-1",
        "Content-Type": "text/plain",
    }
    status, answer = post(http, created, GITHUB_VECTOR["body"], headers)
    assert status == 202, answer
    assert aws.drain(assembly.build_runner(clock=clock)) == ["succeeded"]
    assert fires[0].payload == "Hello, World!"  # not JSON: the workflow gets the text


# --- size, store, dedupe --------------------------------------------------------------


def test_a_body_over_1_mib_is_413_before_anything_else(aws, clock, root, http):
    created = source_trigger(root, clock, "webhook")
    body = b"x" * (1024 * 1024 + 1)
    headers = signed_headers("webhook", created["webhook"]["secret"], body, ts=now_s(clock))
    assert post(http, created, body, headers)[0] == 413
    assert post(http, "trg_unknown.token", body, {})[0] == 413
    assert stored_events() == []


def test_a_700_kb_body_goes_to_s3_encrypted_and_the_workflow_sees_it_whole(
    aws, clock, root, http, fires
):
    created = source_trigger(root, clock, "webhook", workflow="record-fire")
    doc = {"type": "bulk", "rows": [f"r{i:06d}-{'é' * 20}" for i in range(13_500)]}
    body = json.dumps(doc, ensure_ascii=False).encode()
    assert 690_000 < len(body) < 1024 * 1024
    headers = signed_headers("webhook", created["webhook"]["secret"], body, ts=now_s(clock))
    status, answer = post(http, created, body, headers)
    assert status == 202, answer

    (event,) = stored_events()
    assert event.body is None and event.body_s3_key
    assert event.body_size == len(body)
    s3 = boto3.client("s3", endpoint_url=aws.endpoint, region_name="us-east-1")
    head = s3.head_object(Bucket=aws.bucket, Key=event.body_s3_key)
    assert head["ServerSideEncryption"] == "aws:kms"

    assert aws.drain(assembly.build_runner(clock=clock)) == ["succeeded"]
    assert fires[0].payload == doc
    run = triggers.get_run_view(root, answer["run_id"])
    digest = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()
    assert run["output"] == {"sha256": digest}


def test_an_event_item_stays_under_1_kb_its_larger_body_in_s3_and_the_run_sees_it_whole(
    aws, clock, root, http, fires
):
    from chalicelib.services.events.accept import HOT_ITEM_BYTES, item_bytes

    created = source_trigger(root, clock, "webhook", workflow="record-fire")
    secret = created["webhook"]["secret"]
    small = json.dumps({"type": "small", "n": 1}).encode()
    # 900 bytes: under any body limit of old (100 KB), but the item would pass 1 KB.
    medium = json.dumps({"type": "medium", "pad": "m" * 860}).encode()
    for n, body in enumerate((small, medium)):
        clock.advance(1)
        headers = signed_headers("webhook", secret, body, ts=now_s(clock), delivery=f"h{n}")
        assert post(http, created, body, headers)[0] == 202
    stored = {json.loads(e.body or "{}").get("type") or "s3": e for e in stored_events()}
    assert set(stored) == {"small", "s3"}
    assert stored["small"].body_s3_key is None
    assert stored["s3"].body is None and stored["s3"].body_size == len(medium)
    assert all(item_bytes(e) <= HOT_ITEM_BYTES for e in stored.values())
    # Both were sent (the trigger had room each time): the second message may find the
    # first event's run done and be dropped; each event runs once, in arrival order.
    assert aws.drain(assembly.build_runner(clock=clock)).count("succeeded") == 2
    assert [f.payload for f in fires] == [json.loads(small), json.loads(medium)]


def test_a_duplicate_delivery_answers_200_with_the_original_ids_and_runs_once(
    aws, clock, root, http
):
    created = source_trigger(root, clock, "github", dedupe_window_s=3600)
    secret = created["webhook"]["secret"]
    body = delivery_body("github", "guid-1")
    first = post(http, created, body, signed_headers("github", secret, body, ts=0, delivery="g1"))
    assert first[0] == 202
    clock.advance(30)
    again = post(http, created, body, signed_headers("github", secret, body, ts=0, delivery="g1"))
    assert again == (200, {**first[1], "duplicate": True})
    # GitHub signs no delivery id: a new X-GitHub-Delivery on the same body is a replay.
    moved = post(http, created, body, signed_headers("github", secret, body, ts=0, delivery="g9"))
    assert moved == (200, {**first[1], "duplicate": True})
    body2 = delivery_body("github", "guid-2", after="abc123")
    other = post(http, created, body2, signed_headers("github", secret, body2, ts=0, delivery="g2"))
    assert other[0] == 202 and other[1]["event_id"] != first[1]["event_id"]

    statuses = aws.drain(assembly.build_runner(clock=clock))
    assert statuses.count("succeeded") == 2
    runs = triggers.list_trigger_runs(root, created["id"], {})["items"]
    assert sorted(r["id"] for r in runs) == sorted([first[1]["run_id"], other[1]["run_id"]])

    # After the window the same delivery id is a new event.
    clock.advance(3600)
    later = post(http, created, body, signed_headers("github", secret, body, ts=0, delivery="g1"))
    assert later[0] == 202 and later[1]["run_id"] != first[1]["run_id"]


def test_a_disabled_or_expired_trigger_answers_410_and_stores_nothing(aws, clock, root, http):
    created = source_trigger(root, clock, "webhook")
    secret = created["webhook"]["secret"]
    body = b'{"type": "x"}'
    headers = signed_headers("webhook", secret, body, ts=now_s(clock))
    triggers.set_enabled(root, created["id"], enabled=False, now=clock())
    assert post(http, created, body, headers) == (
        410,
        {"error": {"code": "gone", "message": "trigger is disabled (manual)"}},
    )
    # A bad signature still gets the 401: the token does not reveal the trigger's status.
    assert post(http, created, body, {"X-Signature-256": "sha256=" + "0" * 64})[0] == 401

    expiring = triggers.create_trigger(
        root,
        {
            "workflow": "echo",
            "event": {"source": "webhook"},
            "limits": {"expires_at": (clock() + timedelta(hours=1)).isoformat()},
        },
        now=clock(),
    )
    clock.advance(3601)
    headers = signed_headers("webhook", expiring["webhook"]["secret"], body, ts=now_s(clock))
    assert post(http, expiring, body, headers)[0] == 410
    assert triggers.get_trigger_view(root, expiring["id"])["disabled_reason"] == "expired"
    assert stored_events() == []


def test_triggers_switched_off_answer_503_and_store_nothing(aws, clock, root, http):
    created = source_trigger(root, clock, "webhook")
    body = b'{"type": "x"}'
    headers = signed_headers("webhook", created["webhook"]["secret"], body, ts=now_s(clock))
    switch.set_override(False)
    assert post(http, created, body, headers)[0] == 503
    assert stored_events() == []
    switch.set_override(None)
    assert post(http, created, body, headers)[0] == 202


def test_a_filtered_out_delivery_answers_202_ignored_and_stores_nothing(aws, clock, root, http):
    created = source_trigger(
        root, clock, "github", filter={"github_event": "push", "branch": "MAIN"}
    )
    secret = created["webhook"]["secret"]
    body = delivery_body("github", "x", ref="refs/heads/feature")
    headers = signed_headers("github", secret, body, ts=0, delivery="f1")
    assert post(http, created, body, headers) == (
        202,
        {"event_id": None, "run_id": None, "ignored": "filter"},
    )
    assert stored_events() == []
    body = delivery_body("github", "x", ref="refs/heads/main")
    headers = signed_headers("github", secret, body, ts=0, delivery="f2")
    assert post(http, created, body, headers)[0] == 202  # branch matches casefolded
    assert len(stored_events()) == 1


def test_operator_filters_route_signed_deliveries_as_eventbridge_would(aws, clock, root, http):
    created = source_trigger(
        root, clock, "github", filter={"branch": [{"prefix": "release/"}, {"suffix": "-hotfix"}]}
    )
    secret = created["webhook"]["secret"]
    outcomes = []
    for n, ref in enumerate(("refs/heads/main", "refs/heads/release/2.1", "refs/heads/x-hotfix")):
        body = delivery_body("github", "x", ref=ref)
        headers = signed_headers("github", secret, body, ts=0, delivery=f"op{n}")
        outcomes.append(post(http, created, body, headers)[1].get("ignored"))
    assert outcomes == ["filter", None, None]  # prefix is case-sensitive, as in EventBridge
    assert len(stored_events()) == 2


def test_slacks_url_verification_is_answered_with_its_challenge_only_when_signed(
    aws, clock, root, http
):
    created = source_trigger(root, clock, "slack")
    body = json.dumps(
        {
            "token": "legacy",
            "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
            "type": "url_verification",
        }
    ).encode()
    headers = signed_headers("slack", ISSUED_SECRETS["slack"], body, ts=now_s(clock))
    assert post(http, created, body, headers) == (
        200,
        {"challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"},
    )
    unsigned = {"X-Slack-Request-Timestamp": str(now_s(clock)), "X-Slack-Signature": "v0=00"}
    assert post(http, created, body, unsigned)[0] == 401
    assert stored_events() == []


# --- secrets ----------------------------------------------------------------------------


def test_event_triggers_need_the_providers_secret_and_a_valid_filter(aws, clock, root):
    from chalicelib.domain.errors import ValidationError

    for source in ISSUED_SECRETS:
        with pytest.raises(ValidationError) as caught:
            triggers.create_trigger(
                root, {"workflow": "echo", "event": {"source": source}}, now=clock()
            )
        assert caught.value.field == "event.secret"
    with pytest.raises(ValidationError) as caught:
        source_trigger(root, clock, "standard", secret="not-a-standard-secret")
    assert caught.value.field == "event.secret"
    with pytest.raises(ValidationError) as caught:
        source_trigger(root, clock, "github", filter={"branches": "main"})
    assert caught.value.field == "event.filter.branches"
    # No trigger was stored (the table also holds the heartbeat's own items, ids from "#").
    assert [t.id for t in TriggerModel.scan() if not t.id.startswith("#")] == []


def test_a_rotated_secret_keeps_the_old_one_valid_for_the_grace_period(aws, clock, root, http):
    created = source_trigger(root, clock, "standard")
    old = created["webhook"]["secret"]
    rotated = http.post(
        f"/v1/triggers/{created['id']}/rotate-secret",
        headers={"Authorization": f"Bearer {ROOT_KEY}"},
    )
    assert rotated.status_code == 200
    new = json.loads(rotated.body)["secret"]
    assert new != old and new.startswith("whsec_")

    def delivery(secret: str, n: int) -> tuple[int, dict]:
        body = delivery_body("standard", f"m{n}")
        return post(
            http,
            created,
            body,
            signed_headers("standard", secret, body, ts=now_s(clock), delivery=f"m{n}"),
        )

    assert delivery(old, 1)[0] == 202
    assert delivery(new, 2)[0] == 202
    clock.advance(ROTATION_GRACE_S - 60)  # the default grace is short
    assert delivery(old, 3)[0] == 202
    clock.advance(120)
    assert delivery(old, 4) == (401, INVALID)
    assert delivery(new, 5)[0] == 202

    # Provider-issued secrets are passed in; without one the rotation is refused.
    stripe_trigger = source_trigger(root, clock, "stripe")
    refused = http.post(
        f"/v1/triggers/{stripe_trigger['id']}/rotate-secret",
        headers={"Authorization": f"Bearer {ROOT_KEY}"},
    )
    assert refused.status_code == 422
    assert json.loads(refused.body)["error"]["field"] == "secret"
    given = http.post(
        f"/v1/triggers/{stripe_trigger['id']}/rotate-secret",
        headers={"Authorization": f"Bearer {ROOT_KEY}", "Content-Type": "application/json"},
        body=json.dumps({"secret": "whsec_rolled_secret_2"}).encode(),
    )
    assert given.status_code == 200
    body = delivery_body("stripe", "evt_rolled")
    for secret in (ISSUED_SECRETS["stripe"], "whsec_rolled_secret_2"):
        headers = signed_headers("stripe", secret, body, ts=now_s(clock))
        assert post(http, stripe_trigger, body, headers)[0] in (200, 202)


def test_a_secret_appears_only_in_the_create_and_rotate_answers(
    aws, clock, root, http, caplog, monkeypatch
):
    audited: list[str] = []
    original_audit = audit_log.record

    def recording_audit(*args, **kwargs):
        audited.append(json.dumps([args[1:], kwargs], default=str))
        return original_audit(*args, **kwargs)

    monkeypatch.setattr(audit_log, "record", recording_audit)
    caplog.set_level(logging.DEBUG)
    auth = {"Authorization": f"Bearer {ROOT_KEY}", "Content-Type": "application/json"}
    answers: list[str] = []

    def call(method: str, path: str, body: object = None) -> dict:
        raw = b"" if body is None else json.dumps(body).encode()
        response = getattr(http, method)(path, headers=auth, body=raw)
        answers.append(response.body.decode())
        return json.loads(response.body or b"null")

    created = call("post", "/v1/triggers", {"workflow": "echo", "event": {"source": "webhook"}})
    secret = created["webhook"]["secret"]
    trigger_id = created["id"]
    shown_once = [answers.pop()]
    body = b'{"type": "build.finished"}'
    good = signed_headers("webhook", secret, body, ts=now_s(clock), delivery="h1")
    for headers in (good, good, {**good, "X-Signature-256": "sha256=" + "1" * 64}):
        answers.append(
            http.post(f"/hooks/{token_of(created)}", headers=headers, body=body).body.decode()
        )
    event_id = json.loads(answers[-3])["event_id"]
    aws.drain(assembly.build_runner(clock=clock))
    call("get", f"/v1/triggers/{trigger_id}")
    call("get", "/v1/triggers")
    call("get", f"/v1/triggers/{trigger_id}/events")
    call("get", f"/v1/triggers/{trigger_id}/runs")
    replayed = http.post(f"/v1/events/{event_id}/replay", headers=auth)
    answers.append(replayed.body.decode())
    assert replayed.status_code == 202
    rotated = call("post", f"/v1/triggers/{trigger_id}/rotate-secret", {})
    shown_once.append(answers.pop())
    call("get", f"/v1/triggers/{trigger_id}")
    call("post", f"/v1/triggers/{trigger_id}/rotate-secret", {"secret": "short"})  # 422
    call(
        "post",
        "/v1/triggers",
        {"workflow": "echo", "event": {"source": "standard", "secret": secret + "!"}},
    )
    call("get", "/v1/audit")

    secrets = [secret, rotated["secret"], secret + "!"]
    assert secret in shown_once[0] and rotated["secret"] in shown_once[1]
    logs = "\n".join(json.dumps(r.__dict__, default=str) + r.getMessage() for r in caplog.records)
    items = json.dumps(
        [
            boto3.client("dynamodb", endpoint_url=aws.endpoint, region_name="us-east-1").scan(
                TableName=model.Meta.table_name
            )["Items"]
            for model in (TriggerModel, EventModel, AuditModel)
        ],
        default=str,
    )
    from chalicelib.observability import metric_counts

    metrics = json.dumps([list(k) for k in metric_counts()], default=str)
    for s in secrets:
        for where, text in (
            ("answers", "\n".join(answers)),
            ("logs", logs),
            ("audit", "\n".join(audited)),
            ("stored items", items),
            ("metrics", metrics),
        ):
            assert s not in text, f"a secret leaked into {where}"
    assert audited, "the scenario was audited"


def test_the_accepted_path_makes_three_aws_calls_its_event_item_the_deliverys_record(
    aws, clock, root, http
):
    created = source_trigger(root, clock, "github")
    secret = created["webhook"]["secret"]
    calls: list[str] = []

    def count(model=None, params=None, **kwargs):
        calls.append(kwargs.get("event_name", "").removeprefix("before-call."))

    from chalicelib.store.aws import client

    found = [client(name) for name in ("dynamodb", "sqs", "kms", "s3", "ssm")]
    found += [
        m._get_connection().connection.client for m in (TriggerModel, EventModel, DeliveryModel)
    ]
    clients = list({id(c): c for c in found}.values())
    for c in clients:
        c.meta.events.register("before-call", count)
    try:
        per_delivery = []
        for n in range(3):
            clock.advance(1)  # arrival order is by received time
            body = delivery_body("github", f"c{n}", after=f"sha-{n}")
            calls.clear()
            status, _ = post(
                http, created, body, signed_headers("github", secret, body, ts=0, delivery=f"c{n}")
            )
            assert status == 202
            per_delivery.append(list(calls))
    finally:
        for c in clients:
            c.meta.events.unregister("before-call", count)
    # The first delivery unseals the secret (KMS Decrypt); later ones use the cache. The
    # accepted path is the token's GetItem, the event's PutItem (the dedupe, and the
    # delivery's record: GET /v1/triggers/{id}/deliveries lists accepted ones from the
    # events) and the message. The trigger's queue is not read: no runner here, so the
    # trigger stays idle and each delivery is sent (a runner runs them in arrival order).
    assert per_delivery[0] == [
        "dynamodb.GetItem",
        "kms.Decrypt",
        "dynamodb.PutItem",
        "sqs.SendMessageBatch",
    ]
    assert (
        per_delivery[1]
        == per_delivery[2]
        == ["dynamodb.GetItem", "dynamodb.PutItem", "sqs.SendMessageBatch"]
    )
    assert DeliveryModel.count(created["id"]) == 0


def test_another_tenants_events_and_secrets_are_not_found(aws, clock, root, http):
    from chalicelib.domain.errors import NotFound

    created = source_trigger(root, clock, "webhook")
    body = b'{"type": "x"}'
    headers = signed_headers("webhook", created["webhook"]["secret"], body, ts=0, delivery="t1")
    event_id = post(http, created, body, headers)[1]["event_id"]
    aws.drain(assembly.build_runner(clock=clock))
    stranger = Principal("key_other", "other-tenant", "admin")
    with pytest.raises(NotFound):
        events.list_events(stranger, created["id"], {})
    with pytest.raises(NotFound):
        events.rotate_secret(stranger, created["id"], {}, now=clock())
    with pytest.raises(NotFound):
        events.replay_event(stranger, event_id, now=clock())


def test_a_sealed_secret_opens_only_for_its_own_trigger(aws, clock):
    sealed = kms.seal("whsec_c2VjcmV0", trigger_id="trg_a")
    assert "whsec_c2VjcmV0" not in sealed and sealed.startswith("k1:" + aws.kms_key_id + ":")
    kms.clear_cache()
    assert kms.unseal(sealed, trigger_id="trg_a", now_s=0) == "whsec_c2VjcmV0"
    kms.clear_cache()
    with pytest.raises(ValueError):
        kms.unseal(sealed, trigger_id="trg_b", now_s=0)


# --- replays: only signed content names a delivery --------------------------------------

# Per source, headers a replayer may change without breaking the signature, with the
# values a replay would carry. Everything else in the captured request stays as it was.
UNSIGNED_CHANGES = {
    "webhook": {"Idempotency-Key": "replay-{n}", "User-Agent": "replayer/{n}"},
    "github": {
        "X-GitHub-Delivery": "00000000-0000-0000-0000-{n:012d}",
        "X-GitHub-Event": "issues",
        "X-GitHub-Hook-ID": "{n}",
        "Idempotency-Key": "replay-{n}",
    },
    "stripe": {"Idempotency-Key": "replay-{n}", "User-Agent": "Stripe/1.0 (+replay-{n})"},
    "slack": {
        "X-Slack-Retry-Num": "{n}",
        "X-Slack-Retry-Reason": "http_timeout",
        "Idempotency-Key": "replay-{n}",
    },
    "standard": {"Idempotency-Key": "replay-{n}", "User-Agent": "replayer/{n}"},
    "shopify": {
        "X-Shopify-Webhook-Id": "ffffffff-0000-0000-0000-{n:012d}",
        "X-Shopify-Topic": "orders/create",
        "X-Shopify-Shop-Domain": "other-{n}.myshopify.com",
        "X-Shopify-Triggered-At": "2026-01-0{n}T00:00:00Z",
        "Idempotency-Key": "replay-{n}",
    },
}


def replayed(captured: dict, source: str, n: int) -> dict:
    """``captured`` with every unsigned header changed (and Content-Type too)."""
    changes = {k: v.format(n=n) for k, v in UNSIGNED_CHANGES[source].items()}
    out = {k: v for k, v in captured.items() if k.lower() not in {c.lower() for c in changes}}
    signed = {h.lower() for h in SIGNATURE_HEADERS[source]}
    assert set(k.lower() for k in captured) - signed - {"content-type"} <= {
        c.lower() for c in changes
    }, "a captured header is left unchanged"
    return {**out, **changes, "Content-Type": f"text/plain; n={n}"}


@pytest.mark.parametrize("source", SOURCES)
def test_a_captured_request_replayed_with_every_unsigned_header_changed_runs_once(
    aws, clock, root, http, fires, source
):
    created = source_trigger(root, clock, source, workflow="record-fire")
    secret = created["webhook"]["secret"]
    body = delivery_body(source, "captured-1")
    captured = signed_headers(source, secret, body, ts=now_s(clock), delivery="captured-1")
    status, first = post(http, created, body, captured)
    assert status == 202, first
    for n in range(1, 6):
        clock.advance(20)  # still inside the 300 s window of the timestamped schemes
        assert post(http, created, body, replayed(captured, source, n)) == (
            200,
            {**first, "duplicate": True},
        )
    assert aws.drain(assembly.build_runner(clock=clock)) == ["succeeded"]
    assert len(fires) == 1
    assert len(stored_events()) == 1


def test_a_generic_request_sent_600_times_with_fresh_idempotency_keys_runs_once(
    aws, clock, root, http, fires
):
    created = source_trigger(root, clock, "webhook", workflow="record-fire")
    body = b'{"type": "deploy", "sha": "5e1f"}'
    headers = signed_headers("webhook", created["webhook"]["secret"], body, ts=0, delivery="k0")
    answers = [
        post(http, created, body, {**headers, "Idempotency-Key": f"k{n}"})[0] for n in range(600)
    ]
    assert answers.count(202) == 1 and answers.count(200) == 599
    assert aws.drain(assembly.build_runner(clock=clock)) == ["succeeded"]
    assert len(fires) == 1


@pytest.mark.parametrize("source", SOURCES)
def test_a_replay_cannot_take_the_key_of_a_delivery_still_to_come(
    aws, clock, root, http, fires, source
):
    created = source_trigger(root, clock, source, workflow="record-fire")
    secret = created["webhook"]["secret"]
    body = delivery_body(source, "now-1")
    captured = signed_headers(source, secret, body, ts=now_s(clock), delivery="now-1")
    assert post(http, created, body, captured)[0] == 202
    # The replay carries, in every unsigned header, what the next real delivery will carry.
    future_body = delivery_body(source, "next-2", seq=2)
    future = signed_headers(source, secret, future_body, ts=now_s(clock), delivery="next-2")
    unsigned_of_future = {
        k: v
        for k, v in future.items()
        if k.lower() not in {h.lower() for h in SIGNATURE_HEADERS[source]}
    }
    taking = {**captured, **unsigned_of_future, "Idempotency-Key": "next-2"}
    assert post(http, created, body, taking)[0] == 200
    status, answer = post(http, created, future_body, {**future, "Idempotency-Key": "next-2"})
    assert status == 202 and "duplicate" not in answer, answer
    assert aws.drain(assembly.build_runner(clock=clock)).count("succeeded") == 2
    ran = sorted(json.dumps(f.payload, sort_keys=True) for f in fires)
    assert ran == sorted(json.dumps(json.loads(b), sort_keys=True) for b in (body, future_body))


def test_a_generic_sender_sends_identical_content_twice_by_making_the_bytes_differ(
    aws, clock, root, http, fires
):
    created = source_trigger(root, clock, "webhook", workflow="record-fire")
    secret = created["webhook"]["secret"]
    sent = []
    for body in (
        b'{"type": "ping"}',
        b'{"type": "ping"}',  # the same bytes: the same delivery
        b'{"type": "ping", "id": "ping-2"}',  # a field of its own: a new delivery
        b'{"type": "ping", "id": "ping-3"}',
    ):
        sent.append(post(http, created, body, signed_headers("webhook", secret, body, ts=0))[0])
    assert sent == [202, 200, 202, 202]
    assert aws.drain(assembly.build_runner(clock=clock)).count("succeeded") == 3


def test_signed_ids_longer_than_256_characters_that_share_a_prefix_are_two_deliveries(
    aws, clock, root, http
):
    created = source_trigger(root, clock, "standard")
    secret = created["webhook"]["secret"]
    answers = []
    for tail in ("a", "b"):
        msg_id = "msg_" + "x" * 400 + tail
        body = delivery_body("standard", msg_id)
        headers = signed_headers("standard", secret, body, ts=now_s(clock), delivery=msg_id)
        answers.append(post(http, created, body, headers))
    assert [a[0] for a in answers] == [202, 202]
    assert answers[0][1]["event_id"] != answers[1][1]["event_id"]
    keys = sorted(e.dedupe_key for e in stored_events())
    assert len(keys) == 2 and keys[0] != keys[1] and all(len(k) <= 256 for k in keys)


def test_an_idempotency_key_seen_before_makes_a_duplicate_whatever_the_body(
    aws, clock, root, http, fires
):
    # CONTRACT "Ingress": the dedupe key is the Idempotency-Key header if sent. Unsigned,
    # it is a second key beside the signed content, never instead of it.
    created = source_trigger(root, clock, "webhook", workflow="record-fire")
    secret = created["webhook"]["secret"]

    def send(body: bytes, key: str | None) -> tuple[int, dict]:
        headers = signed_headers("webhook", secret, body, ts=0)
        if key is not None:
            headers["Idempotency-Key"] = key
        return post(http, created, body, headers)

    first, rebuilt = b'{"order": 42, "at": 1}', b'{"order": 42, "at": 2}'
    status, answer = send(first, "order-42")
    assert status == 202, answer
    assert send(rebuilt, "order-42") == (200, {**answer, "duplicate": True})
    # The same content under a new key is still the same delivery (a replay), and a
    # cancelled put leaves no alias behind: the key is free for its real delivery.
    assert send(first, "order-43") == (200, {**answer, "duplicate": True})
    assert [a.dedupe_key for a in stored_aliases()] == ["idempotency-key:order-42"]
    assert send(b'{"order": 43}', "order-43")[0] == 202
    assert send(rebuilt, None)[0] == 202  # no key: its own content, a new delivery
    assert aws.drain(assembly.build_runner(clock=clock)).count("succeeded") == 3
    assert sorted(json.dumps(f.payload, sort_keys=True) for f in fires) == sorted(
        json.dumps(json.loads(b), sort_keys=True) for b in (first, b'{"order": 43}', rebuilt)
    )
    # The window over, the key names nothing any more.
    clock.advance(8 * 86400)
    assert send(b'{"order": 42, "at": 3}', "order-42")[0] == 202


def test_an_idempotency_key_whose_event_is_gone_answers_a_duplicate_of_nothing(
    aws, clock, root, http, fires
):
    created = source_trigger(root, clock, "webhook", workflow="record-fire")
    secret = created["webhook"]["secret"]
    body = b'{"job": 1}'
    headers = {**signed_headers("webhook", secret, body, ts=0), "Idempotency-Key": "job-1"}
    status, answer = post(http, created, body, headers)
    assert status == 202
    EventModel(answer["event_id"]).delete()
    other = b'{"job": 1, "retry": true}'
    again = {**signed_headers("webhook", secret, other, ts=0), "Idempotency-Key": "job-1"}
    assert post(http, created, other, again) == (
        200,
        {"event_id": None, "run_id": None, "duplicate": True},
    )


# --- the waiting-events quota ------------------------------------------------------------


def test_a_full_trigger_with_its_cap_of_waiting_events_answers_429_quota_and_stores_nothing(
    aws, clock, root, http, monkeypatch
):
    from chalicelib.settings import reset_settings

    monkeypatch.setenv("CRONHOOK_MAX_WAITING_EVENTS", "3")
    reset_settings()
    created: dict = {}
    during: list[tuple[int, dict, dict]] = []

    def deliver_while_running(fire: Fire) -> Result:
        # The trigger (concurrency 1) is full while this runs: deliveries can only wait.
        if fire.payload.get("n") == 0:
            secret = created["webhook"]["secret"]
            for n in (1, 2, 3, 4, 5, 1, 7):
                body = json.dumps({"type": "job", "n": n}).encode()
                headers = signed_headers("webhook", secret, body, ts=0)
                if n in (2, 7):  # 7 is a retry of 2 that rebuilt its body: the same key
                    headers["Idempotency-Key"] = "job-2"
                answer = http.post(f"/hooks/{token_of(created)}", headers=headers, body=body)
                during.append((answer.status_code, json.loads(answer.body), answer.headers))
        return Result(output={"n": fire.payload.get("n")})

    monkeypatch.setitem(REGISTRY, "deliver", Workflow(name="deliver", func=deliver_while_running))
    created.update(source_trigger(root, clock, "webhook", workflow="deliver"))
    first = json.dumps({"type": "job", "n": 0}).encode()
    secret = created["webhook"]["secret"]
    assert post(http, created, first, signed_headers("webhook", secret, first, ts=0))[0] == 202
    assert aws.drain(assembly.build_runner(clock=clock)) == ["succeeded"] * 4

    statuses = [status for status, _, _ in during]
    assert statuses == [202, 202, 202, 429, 429, 200, 200]
    for _, answer, headers in during[3:5]:
        assert answer["error"]["code"] == "quota"
        assert "3 events waiting" in answer["error"]["message"]
        assert headers["Retry-After"] == str(events.QUOTA_RETRY_AFTER_S)
    # The duplicate of a waiting event is told so, not refused: by its content, or by
    # the Idempotency-Key it was sent with.
    assert during[5][1] == {**during[0][1], "duplicate": True}
    assert during[6][1] == {**during[1][1], "duplicate": True}
    ran = sorted(json.loads(e.body)["n"] for e in stored_events())
    assert ran == [0, 1, 2, 3]  # the refused ones left nothing behind


def test_a_trigger_with_room_never_counts_its_queue(aws, clock, root, http, monkeypatch):
    from chalicelib.store import event_reads

    counted: list[str] = []
    original = event_reads.waiting_count
    monkeypatch.setattr(
        event_reads,
        "waiting_count",
        lambda *a, **k: counted.append("count") or original(*a, **k),
    )
    created = source_trigger(root, clock, "webhook")
    body = b'{"type": "x"}'
    headers = signed_headers("webhook", created["webhook"]["secret"], body, ts=0)
    assert post(http, created, body, headers)[0] == 202
    assert counted == []


def test_a_queue_longer_than_the_cap_is_counted_only_up_to_the_cap(aws, clock, root):
    from bench.calls import CallLog
    from chalicelib.store import event_reads

    created = source_trigger(root, clock, "webhook")
    for n in range(7):  # seven events waiting in the trigger's queue
        EventModel(
            f"evt_{n}",
            trigger_id=created["id"],
            tenant="local",
            received_ms=n,
            received_sk=f"{n:013d}",
            run_id=f"run_{n}",
            source="webhook",
            status="pending",
            pending_trigger=created["id"],
            pending_sk=f"{n:013d}#run_{n}",
        ).save()
    assert event_reads.waiting_count(created["id"], cap=100) == 7
    with CallLog() as log:
        assert event_reads.waiting_count(created["id"], cap=3) == 3
    [query] = [c for c in log.since() if c.operation == "Query"]
    assert query.items_read == 3  # the reading stopped at the cap


# --- one point per delivery ----------------------------------------------------------------


def test_every_delivery_reaches_the_delivery_hooks_once_with_its_outcome(
    aws, clock, root, http, monkeypatch
):
    seen: list[tuple[str | None, str, int]] = []

    def record(trigger_id, *, outcome, status, **delivery):
        seen.append((trigger_id, outcome, status))

    def broken(trigger_id, **delivery):
        raise RuntimeError("a recorder that fails")

    monkeypatch.setattr(events.ingress, "delivery_hooks", [broken, record])
    created = source_trigger(root, clock, "standard", filter={"type": "wanted"})
    secret = created["webhook"]["secret"]
    tid = created["id"]

    def send(doc: dict, *, ts: int | None = None, delivery: str = "m1", token=None):
        body = json.dumps(doc).encode()
        at = now_s(clock) if ts is None else ts
        headers = signed_headers("standard", secret, body, ts=at, delivery=delivery)
        return post(http, token or created, body, headers)[0]

    assert send({"type": "wanted"}) == 202
    assert send({"type": "wanted"}) == 200
    assert send({"type": "other"}, delivery="m2") == 202
    assert send({"type": "wanted"}, ts=now_s(clock) - 400, delivery="m3") == 401
    bad = {
        "webhook-id": "m4",
        "webhook-timestamp": str(now_s(clock)),
        "webhook-signature": "v1,AA==",
    }
    assert post(http, created, b"{}", bad)[0] == 401
    assert send({"type": "wanted"}, token=tid + ".wrong", delivery="m5") == 401
    assert post(http, created, b"x" * (1024 * 1024 + 1), {})[0] == 413
    triggers.set_enabled(root, tid, enabled=False, now=clock())
    assert send({"type": "wanted"}, delivery="m6") == 410
    assert seen == [
        (tid, "accepted", 202),
        (tid, "duplicate", 200),
        (tid, "filtered", 202),
        (tid, "stale", 401),
        (tid, "invalid_signature", 401),
        (None, "invalid_signature", 401),
        (None, "too_large", 413),
        (tid, "gone", 410),
    ]


# --- bodies that outlive their S3 copy ------------------------------------------------------


def test_replaying_an_event_whose_large_body_is_no_longer_kept_is_410_naming_why(
    aws, clock, root, http
):
    created = source_trigger(root, clock, "webhook", dedupe_window_s=30 * 86400)
    secret = created["webhook"]["secret"]
    large = json.dumps({"type": "bulk", "rows": ["r" * 100] * 2000}).encode()
    small = b'{"type": "small"}'
    ids = {}
    for name, body in (("large", large), ("small", small)):
        status, answer = post(http, created, body, signed_headers("webhook", secret, body, ts=0))
        assert status == 202
        ids[name] = answer["event_id"]
    aws.drain(assembly.build_runner(clock=clock))
    auth = {"Authorization": f"Bearer {ROOT_KEY}"}

    def replay(name: str) -> tuple[int, dict]:
        answer = http.post(f"/v1/events/{ids[name]}/replay", headers=auth)
        return answer.status_code, json.loads(answer.body)

    assert replay("large")[0] == 202  # within the body's days: it runs again
    aws.drain(assembly.build_runner(clock=clock))
    clock.advance(8 * 86400)  # past CRONHOOK_EVENT_RETENTION_DAYS (7), inside the window
    status, answer = replay("large")
    assert status == 410 and answer["error"]["code"] == "gone"
    assert "no longer kept" in answer["error"]["message"]
    assert "7 days" in answer["error"]["message"]
    assert replay("small")[0] == 202  # a body kept in the item replays all window long
    # The event is still the dedupe record of its delivery.
    again = post(http, created, large, signed_headers("webhook", secret, large, ts=0))
    assert again == (
        200,
        {"event_id": ids["large"], "run_id": again[1]["run_id"], "duplicate": True},
    )


def test_replaying_an_event_whose_body_object_vanished_is_410_not_a_failed_run(
    aws, clock, root, http
):
    created = source_trigger(root, clock, "webhook")
    body = json.dumps({"type": "bulk", "blob": "x" * 150_000}).encode()
    headers = signed_headers("webhook", created["webhook"]["secret"], body, ts=0)
    event_id = post(http, created, body, headers)[1]["event_id"]
    aws.drain(assembly.build_runner(clock=clock))
    (event,) = stored_events()
    s3 = boto3.client("s3", endpoint_url=aws.endpoint, region_name="us-east-1")
    s3.delete_object(Bucket=aws.bucket, Key=event.body_s3_key)
    answer = http.post(
        f"/v1/events/{event_id}/replay", headers={"Authorization": f"Bearer {ROOT_KEY}"}
    )
    assert answer.status_code == 410, answer.body
    assert aws.drain(assembly.build_runner(clock=clock)) == []
