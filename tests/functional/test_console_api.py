"""What the console needs from the API: deliveries, health, pause notes, its own files.

Through ``chalice.test.Client`` (the app as API Gateway calls it) against the moto
server; the routes read the test's clock.
"""

from __future__ import annotations

import json

import pytest

import app as app_module
from chalicelib import assembly, wiring
from chalicelib.services import deliveries, health, offpath
from chalicelib.store.deliveries import DeliveryModel
from chalicelib.store.tables import TTL_ATTRIBUTES
from devstack.gateway import contract_client as Client
from tests.functional.api_client import Api
from tests.signing import delivery_body, signed_headers

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"  # a valid Standard Webhooks key too


@pytest.fixture
def api(aws, clock, monkeypatch):
    monkeypatch.setattr("chalicelib.routes.resource.now_utc", clock)
    with Client(app_module.app, stage_name="test") as client:
        api = Api(client)
        api.aws = aws
        api.clock = clock
        yield api


def _hook(api: Api, source: str = "github", **event) -> tuple[str, str]:
    created = api.create_trigger(
        {"workflow": "echo", "event": {"source": source, "secret": SECRET, **event}}
    )
    return created["id"], created["webhook"]["url"].rsplit("/", 1)[-1]


def _send(api: Api, token: str, body: bytes, headers: dict) -> int:
    return api.call("POST", f"/hooks/{token}", raw=body, key=None, headers=headers).status


def _deliveries(api: Api, trigger_id: str, query: str = "") -> dict:
    answer = api.call("GET", f"/v1/triggers/{trigger_id}/deliveries{query}")
    assert answer.status == 200, answer.body
    return answer.body


def _ts(api: Api) -> int:
    return int(api.clock().timestamp())


def test_every_delivery_to_a_known_token_is_recorded_with_its_cause_newest_first(api):
    trigger_id, token = _hook(api, filter={"github_event": ["push"]})
    body = delivery_body("github", "d-1")
    push = signed_headers("github", SECRET, body, ts=_ts(api), delivery="d-1")
    assert _send(api, token, body, push) == 202
    api.clock.advance(1)
    assert _send(api, token, body, push) == 200  # the same delivery id again
    api.clock.advance(1)
    issues = {**signed_headers("github", SECRET, body, ts=_ts(api), delivery="d-2")}
    issues["X-GitHub-Event"] = "issues"
    assert _send(api, token, body, issues) == 202  # filtered out
    api.clock.advance(1)
    forged = {**push, "X-Hub-Signature-256": "sha256=" + "0" * 64}
    assert _send(api, token, body, forged) == 401
    api.clock.advance(1)
    huge = b'{"blob": "' + b"x" * (1024 * 1024) + b'"}'
    assert _send(api, token, huge, push) == 413

    items = _deliveries(api, trigger_id)["items"]
    assert [d["outcome"] for d in items] == [
        "too_large",
        "invalid_signature",
        "filtered",
        "duplicate",
        "accepted",
    ]
    accepted, duplicate = items[4], items[3]
    event_id = api.call("GET", f"/v1/triggers/{trigger_id}/events").body["items"][0]["id"]
    assert accepted["event_id"] == duplicate["event_id"] == event_id
    assert accepted["received_at"] == "2026-11-30T12:00:00.000Z"
    assert accepted["size"] == len(body) and items[0]["size"] == len(huge)
    assert [d["status"] for d in items] == [413, 401, 202, 200, 202]
    assert items[1]["detail"] == "signature mismatch"
    for delivery in items:
        assert delivery["headers"]["x-github-event"] in ("push", "issues")
        assert not any("signature" in name for name in delivery["headers"]), delivery


def test_a_stale_timestamp_is_told_apart_from_a_bad_signature(api):
    trigger_id, token = _hook(api, source="standard")
    body = delivery_body("standard", "msg_1")
    old = signed_headers("standard", SECRET, body, ts=_ts(api) - 600, delivery="msg_1")
    assert _send(api, token, body, old) == 401
    (stale,) = _deliveries(api, trigger_id)["items"]
    assert (stale["outcome"], stale["detail"]) == ("stale", "timestamp outside tolerance")


def test_a_wrong_token_for_a_real_trigger_records_nothing(api):
    trigger_id, token = _hook(api)
    body = delivery_body("github", "d-1")
    headers = signed_headers("github", SECRET, body, ts=_ts(api))
    assert _send(api, token[:-4] + "AAAA", body, headers) == 401
    assert _send(api, "trg_nope.abc", body, headers) == 401
    assert _deliveries(api, trigger_id)["items"] == []


def test_rejected_deliveries_are_recorded_up_to_a_cap_per_trigger_and_hour(api, monkeypatch):
    monkeypatch.setattr(deliveries, "REJECTED_PER_HOUR", 3)
    trigger_id, token = _hook(api, source="webhook")
    body = b'{"n": 1}'
    bad = {"Content-Type": "application/json", "X-Signature-256": "sha256=" + "0" * 64}
    for _ in range(6):
        assert _send(api, token, body, bad) == 401
    api.clock.advance(1)
    good = signed_headers("webhook", SECRET, body, ts=_ts(api), delivery="k-1")
    assert _send(api, token, body, good) == 202  # accepted ones are never capped
    outcomes = [d["outcome"] for d in _deliveries(api, trigger_id)["items"]]
    assert outcomes == ["accepted"] + ["invalid_signature"] * 3
    api.clock.advance(3600)  # a new hour: recorded again
    assert _send(api, token, body, bad) == 401
    assert len(_deliveries(api, trigger_id, "?outcome=invalid_signature")["items"]) == 4
    rows = [r for r in DeliveryModel.query(trigger_id) if r.sk.startswith("#n#")]
    assert sorted(int(r.n) for r in rows) == [1, 6]  # the flood is counted, not stored


def test_deliveries_expire_after_seven_days_and_page_with_a_cursor(api):
    assert TTL_ATTRIBUTES["deliveries"] == "expires"
    trigger_id, token = _hook(api, source="webhook")
    for n in range(3):
        api.clock.advance(1)
        body = json.dumps({"n": n}).encode()  # distinct content: dedupe is on signed content
        headers = signed_headers("webhook", SECRET, body, ts=_ts(api), delivery=f"k-{n}")
        assert _send(api, token, body, headers) == 202
    first = _deliveries(api, trigger_id, "?limit=2")
    assert len(first["items"]) == 2 and first["next_cursor"]
    rest = _deliveries(api, trigger_id, f"?limit=2&cursor={first['next_cursor']}")
    assert len(rest["items"]) == 1 and rest["next_cursor"] is None
    ids = [d["id"] for d in first["items"] + rest["items"]]
    assert len(set(ids)) == 3
    for row in DeliveryModel.query(trigger_id, DeliveryModel.sk >= "0"):
        assert row.expires == row.received_ms // 1000 + 7 * 86400
    bad = api.call("GET", f"/v1/triggers/{trigger_id}/deliveries?outcome=lost")
    assert (bad.status, bad.error["field"]) == (422, "outcome")
    forged = api.call("GET", f"/v1/triggers/{trigger_id}/deliveries?cursor=eyJ4IjoxfQ")
    assert (forged.status, forged.error["field"]) == (422, "cursor")


def test_an_accepted_delivery_is_its_event_and_pages_merge_it_with_the_recorded_ones(api):
    trigger_id, token = _hook(api, source="webhook")
    bad = {"Content-Type": "application/json", "X-Signature-256": "sha256=" + "0" * 64}
    sent = []
    for n in range(7):
        api.clock.advance(1)
        body = json.dumps({"n": n}).encode()
        if n % 3 == 1:
            assert _send(api, token, body, bad) == 401
            sent.append("invalid_signature")
        else:
            good = signed_headers("webhook", SECRET, body, ts=_ts(api), delivery=f"m-{n}")
            assert _send(api, token, body, good) == 202
            sent.append("accepted")
    # Only the refused ones are written as rows: an accepted one is its event's item.
    offpath.refusals.flush()  # written off the answer's path (read here without the route)
    rows = [r for r in DeliveryModel.query(trigger_id) if not r.sk.startswith("#n#")]
    assert sorted(r.outcome for r in rows) == ["invalid_signature"] * 2
    seen, cursor = [], ""
    for _ in range(10):
        page = _deliveries(api, trigger_id, f"?limit=2{cursor}")
        assert len(page["items"]) <= 2
        seen += page["items"]
        if not page["next_cursor"]:
            break
        cursor = f"&cursor={page['next_cursor']}"
    assert [d["outcome"] for d in seen] == sent[::-1]  # newest first, across both sources
    received = [d["received_at"] for d in seen]
    assert received == sorted(received, reverse=True) and len(set(received)) == 7
    events = api.call("GET", f"/v1/triggers/{trigger_id}/events").body["items"]
    accepted = [d for d in seen if d["outcome"] == "accepted"]
    assert [d["event_id"] for d in accepted] == [e["id"] for e in events]
    assert all(d["status"] == 202 and d["size"] == len(b'{"n": 0}') for d in accepted)
    only = _deliveries(api, trigger_id, "?outcome=accepted")["items"]
    assert only == accepted
    refused = _deliveries(api, trigger_id, "?outcome=invalid_signature")["items"]
    assert len(refused) == 2
    path = f"/v1/triggers/{trigger_id}/events"
    assert api.call("GET", path + "?status=pending").body["items"] == [
        e for e in events if e["status"] == "pending"
    ]
    bad = api.call("GET", path + "?status=bogus")
    assert (bad.status, bad.error["field"]) == (422, "status")


def test_health_tells_whether_the_scheduler_ticks_and_counts_queues_and_fires(api):
    answer = api.call("GET", "/v1/health")
    assert answer.status == 200, answer.body
    assert answer.body["last_tick_at"] is None and answer.body["stale"] is True
    assert answer.body["caller"] == {"tenant": "local", "role": "admin"}
    assert (answer.body["queue_depth"], answer.body["dlq_depth"]) == (0, 0)

    wiring.heartbeat_once(api.clock())
    trigger = api.create_trigger()
    assert api.call("POST", f"/v1/triggers/{trigger['id']}/fire").status == 202
    ticked = api.call("GET", "/v1/health").body
    assert ticked["last_tick_at"] == "2026-11-30T12:00:00.000Z" and ticked["stale"] is False
    assert ticked["queue_depth"] == 1  # the manual fire, not yet run
    assert ticked["fires_last_hour"] == 0  # a queued fire has no run record yet

    api.aws.drain(assembly.build_runner(clock=api.clock))
    api.clock.advance(2 * 60 + 1)  # two heartbeat periods (60 s) and a second: stale
    late = api.call("GET", "/v1/health").body
    assert late["stale"] is True and late["queue_depth"] == 0
    assert late["heartbeat_s"] == 60 and late["fires_last_hour"] == 1  # the run, settled
    api.aws.sqs().send_message(QueueUrl=api.aws.dlq_url, MessageBody="{}")
    assert api.call("GET", "/v1/health").body["dlq_depth"] == 1


def test_health_is_open_to_viewers_and_shows_their_role(api):
    api.make_key("viewer", "viewer")
    answer = api.call("GET", "/v1/health", key="viewer")
    assert answer.status == 200 and answer.body["caller"]["role"] == "viewer"


@pytest.mark.parametrize(
    ("values", "p99"),
    [([], None), ([5], 5), (list(range(1, 101)), 99), (list(range(1, 201)), 198), ([3, 1, 2], 3)],
)
def test_lateness_p99_is_the_nearest_rank(values, p99):
    assert health.lateness_p99_ms(values) == p99


def test_a_pause_note_is_kept_shown_and_cleared_on_resume(api):
    trigger = api.create_trigger()
    path = f"/v1/triggers/{trigger['id']}"
    paused = api.call("POST", f"{path}/disable", {"note": "  deploy freeze  "})
    assert paused.status == 200, paused.body
    assert (paused.body["disabled_reason"], paused.body["disabled_note"]) == (
        "manual",
        "deploy freeze",
    )
    listed = api.call("GET", "/v1/triggers").body["items"]
    assert [t["disabled_note"] for t in listed if t["id"] == trigger["id"]] == ["deploy freeze"]
    resumed = api.call("POST", f"{path}/enable")
    assert resumed.body["disabled_note"] is None
    assert api.call("POST", f"{path}/disable").body["disabled_note"] is None  # no body: no note
    too_long = api.call("POST", f"{path}/disable", {"note": "x" * 501})
    assert (too_long.status, too_long.error["field"]) == (422, "note")
    unknown = api.call("POST", f"{path}/disable", {"reason": "x"})
    assert (unknown.status, unknown.error["field"]) == (422, "reason")
    not_text = api.call("POST", f"{path}/disable", {"note": 5})
    assert (not_text.status, not_text.error["field"]) == (422, "note")


def test_a_budget_shows_the_newest_period_spent(api):
    trigger = api.create_trigger(
        {
            "workflow": "echo",
            "schedule": {"cron": "0 8 * * 1"},
            "limits": {"max_usd": 5.0, "budget_period": "month"},
        }
    )
    assert trigger["budget"] == {
        "max_usd": 5.0,
        "budget_period": "month",
        "period": None,
        "spent_usd": 0.0,
        "reserved_usd": 0.0,
    }
    assert api.call("POST", f"/v1/triggers/{trigger['id']}/fire").status == 202
    api.aws.drain(assembly.build_runner(clock=api.clock))
    budget = api.call("GET", f"/v1/triggers/{trigger['id']}").body["budget"]
    assert budget["period"] == "month:2026-11" and budget["reserved_usd"] == 0.0
    assert "budget" not in api.create_trigger()  # no cap, no ledger read


def test_the_console_is_served_at_the_root_with_its_files_and_nothing_else(api):
    index = api.call("GET", "/", key=None)
    assert index.status == 200 and index.headers["Content-Type"].startswith("text/html")
    assert b"<title>cronhook console</title>" in index.body
    assert "script-src 'self'" in index.headers["Content-Security-Policy"]
    script = api.call("GET", "/console/console.js", key=None)
    assert script.status == 200 and script.headers["Content-Type"].startswith("text/javascript")
    style = api.call("GET", "/console/console.css", key=None)
    assert style.status == 200 and style.headers["Content-Type"].startswith("text/css")
    for name in ("__init__.py", "nope.js", ".hidden.js", "..%2Fapp.py"):
        missing = api.call("GET", f"/console/{name}", key=None)
        assert missing.status == 404, name
        assert missing.error["code"] == "not_found"
    doc = json.dumps(api.call("GET", "/v1/openapi.json", key=None).body)
    assert '"/v1/health"' in doc and '"/v1/triggers/{trigger_id}/deliveries"' in doc


def test_the_stack_wide_queue_depths_are_shown_to_the_root_key_only(api):
    """The fire queue is shared by every tenant: its depth is the stack's, not a tenant's
    (issue 26, item 10). Another tenant's admin, and a non-root admin of the root's own
    tenant, get null there; the tenant's own figures stay."""
    trigger = api.create_trigger()
    assert api.call("POST", f"/v1/triggers/{trigger['id']}/fire").status == 202
    api.make_key("other-admin", "admin", tenant="acme")
    api.make_key("local-admin", "admin")
    assert api.call("GET", "/v1/health").body["queue_depth"] == 1
    for key in ("other-admin", "local-admin"):
        answer = api.call("GET", "/v1/health", key=key)
        assert answer.status == 200, answer.body
        assert (answer.body["queue_depth"], answer.body["dlq_depth"]) == (None, None), key
        assert answer.body["heartbeat_s"] == 60 and answer.body["fires_last_hour"] == 0
