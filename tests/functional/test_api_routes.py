"""Every route × {no key, bad key, viewer, operator, admin, another tenant's admin}.

Each route's role is the one its ``route(...)`` declares (``chalicelib/routes/``), read
from the declaration here, as the OpenAPI document reads it (``docs/api.md`` shows it, and
is checked against the routes): the table says what each route needs to answer, not who.

Through ``chalice.test.Client`` (the app as API Gateway calls it) against the moto
server. Each call gets fresh resources, so a write by one caller never changes what the
next one sees. Another tenant's resources answer 404 on every route, never 403; a role
too low answers 403 before anything is looked up.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

import app as app_module
from chalicelib import assembly
from chalicelib.declare import Declared, declared_of
from devstack.gateway import contract_client as Client
from tests.functional.api_client import Api

CALLERS = ("none", "bad", "viewer", "operator", "admin", "other")
RANK = {"viewer": 0, "operator": 1, "admin": 2}
WEBHOOK_SECRET = "whsec_table_test_secret"


@pytest.fixture
def api(aws, monkeypatch):
    from chalicelib.settings import reset_settings
    from chalicelib.store.aws import client as aws_client

    alerts = aws_client("sqs").create_queue(QueueName="cronhook-alerts")["QueueUrl"]
    monkeypatch.setenv("CRONHOOK_ALERTS_QUEUE_URL", alerts)
    reset_settings()
    with Client(app_module.app, stage_name="test") as client:
        api = Api(client)
        for role in ("viewer", "operator", "admin"):
            api.make_key(role, role)
        api.make_key("other", "admin", tenant="acme")
        api.aws = aws
        yield api


def _trigger(api: Api) -> dict:
    return {"trigger_id": api.create_trigger()["id"]}


def _event_trigger(api: Api) -> dict:
    created = api.create_trigger(
        {"workflow": "echo", "event": {"source": "webhook", "secret": WEBHOOK_SECRET}}
    )
    token = created["webhook"]["url"].rsplit("/", 1)[-1]
    return {"trigger_id": created["id"], "token": token}


def send_webhook(api: Api, token: str, payload: dict) -> dict:
    raw = json.dumps(payload).encode()
    signature = hmac.new(WEBHOOK_SECRET.encode(), raw, hashlib.sha256).hexdigest()
    answer = api.call(
        "POST",
        f"/hooks/{token}",
        raw=raw,
        key=None,
        headers={"X-Signature-256": f"sha256={signature}", "Idempotency-Key": secrets.token_hex(8)},
    )
    assert answer.status == 202, answer.body
    return answer.body


def _event(api: Api) -> dict:
    ctx = _event_trigger(api)
    sent = send_webhook(api, ctx["token"], {"n": 1})
    api.aws.drain(assembly.build_runner())
    return {**ctx, "event_id": sent["event_id"]}


def _run(api: Api) -> dict:
    ctx = _trigger(api)
    fired = api.call("POST", f"/v1/triggers/{ctx['trigger_id']}/fire")
    assert fired.status == 202, fired.body
    api.aws.drain(assembly.build_runner())
    return {**ctx, "run_id": fired.body["run_id"]}


SKIPPED = "2030-01-07T08:00:00Z"  # a Monday 08:00: a slot of CRON
# The app reads the real clock here: an extra run two days from now.
EXTRA_AT = (datetime.now(UTC) + timedelta(days=2)).isoformat()


def _skipped(api: Api) -> dict:
    ctx = _trigger(api)
    answer = api.call("POST", f"/v1/triggers/{ctx['trigger_id']}/skip", {"slot": SKIPPED})
    assert answer.status == 200, answer.body
    return {**ctx, "slot": SKIPPED.replace(":", "%3A")}


def _key(api: Api) -> dict:
    return {"key_id": api.make_key(f"k{secrets.token_hex(3)}", "viewer")["id"]}


def _alert(api: Api) -> dict:
    body = {"name": "ops", "on": ["failed"], "channels": [{"type": "email", "to": ["a@b.example"]}]}
    answer = api.call("POST", "/v1/alerts", body)
    assert answer.status == 201, answer.body
    return {"alert_id": answer.body["id"]}


ALERT = {"name": "ops", "on": ["failed", "recovered"], "failures_in_a_row": 2}


def _nothing(api: Api) -> dict:
    return {}


def _new_key(api: Api) -> dict:
    return {"key": f"k-{secrets.token_hex(4)}"}


def _keyed(api: Api) -> dict:
    ctx = _new_key(api)
    answer = api.call("PUT", f"/v1/triggers/by-key/{ctx['key']}", CRON)
    assert answer.status == 201, answer.body
    return ctx


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    ok: int
    setup: Callable[[Api], dict] = _nothing
    body: dict | None = None
    # A collection of the caller's own tenant: another tenant gets an answer, just not
    # the first tenant's things (checked by `isolated`).
    collection: bool = False

    @property
    def declared(self) -> Declared:
        """What the route declares (its role, its answers), from the app's route table."""
        entry = app_module.app.routes[self.path.replace("/echo/", "/{name}/")][self.method]
        declared = declared_of(entry.view_function)
        assert declared is not None, (self.method, self.path)
        return declared

    @property
    def role(self) -> str | None:
        return self.declared.role


CRON = {"workflow": "echo", "schedule": {"cron": "0 8 * * 1"}}
ROUTES = (
    Route("GET", "/healthz", 200),
    Route("HEAD", "/healthz", 200),
    Route("GET", "/v1/openapi.json", 200),
    Route("GET", "/", 200),
    Route("GET", "/console/{name}", 200, lambda api: {"name": "console.js"}),
    Route("GET", "/v1/health", 200, collection=True),
    Route("GET", "/v1/triggers/{trigger_id}/deliveries", 200, _event),
    Route("POST", "/v1/triggers", 201, body=CRON, collection=True),
    Route("GET", "/v1/triggers", 200, _trigger, collection=True),
    Route("GET", "/v1/triggers/{trigger_id}", 200, _trigger),
    Route("PATCH", "/v1/triggers/{trigger_id}", 200, _trigger, {"title": "x"}),
    Route("DELETE", "/v1/triggers/{trigger_id}", 204, _trigger),
    Route("POST", "/v1/triggers/{trigger_id}/fire", 202, _trigger),
    Route("PUT", "/v1/triggers/by-key/{key}", 201, _new_key, CRON, True),
    Route("POST", "/v1/triggers/by-key/{key}/plan", 200, _new_key, CRON, True),
    Route("GET", "/v1/triggers/by-key/{key}", 200, _keyed),
    Route("DELETE", "/v1/triggers/by-key/{key}", 204, _keyed),
    Route("POST", "/v1/triggers/{trigger_id}/enable", 200, _trigger),
    Route("POST", "/v1/triggers/{trigger_id}/disable", 200, _trigger),
    Route("POST", "/v1/triggers/disable", 200, _trigger, {"tag": "t"}, True),
    Route("POST", "/v1/triggers/enable", 200, _trigger, {"tag": "t"}, True),
    Route(
        "POST",
        "/v1/triggers/{trigger_id}/backfill",
        200,
        _trigger,
        {"from": "2026-01-05T00:00:00Z", "to": "2026-02-05T00:00:00Z", "dry_run": True},
    ),
    Route("POST", "/v1/triggers/{trigger_id}/rotate-secret", 200, _event_trigger),
    Route("POST", "/v1/triggers/{trigger_id}/skip", 200, _trigger, {"slot": SKIPPED}),
    Route("DELETE", "/v1/triggers/{trigger_id}/skip/{slot}", 200, _skipped),
    Route(
        "POST",
        "/v1/triggers/{trigger_id}/extra",
        200,
        _trigger,
        {"at": EXTRA_AT},
    ),
    Route(
        "POST",
        "/v1/schedules/simulate",
        200,
        body={"trigger": CRON, "from": "2030-01-01T00:00:00Z", "to": "2030-02-01T00:00:00Z"},
        collection=True,
    ),
    Route("GET", "/v1/triggers/{trigger_id}/preview", 200, _trigger),
    Route(
        "POST",
        "/v1/schedules/preview",
        200,
        body={"cron": "0 8 * * *", "from": "2030-01-01T00:00:00Z", "count": 2},
        collection=True,
    ),
    Route("GET", "/v1/triggers/{trigger_id}/runs", 200, _run),
    Route("GET", "/v1/runs", 200, _run, collection=True),
    Route("GET", "/v1/runs/{run_id}", 200, _run),
    Route("GET", "/v1/runs/{run_id}/logs", 200, _run),
    Route("POST", "/v1/runs/{run_id}/rerun", 202, _run),
    Route("GET", "/v1/triggers/{trigger_id}/events", 200, _event),
    Route("POST", "/v1/events/{event_id}/replay", 202, _event),
    Route("GET", "/v1/workflows", 200, collection=True),
    Route("DELETE", "/v1/workflows/echo/triggers", 200, _trigger, collection=True),
    Route("GET", "/v1/audit", 200, _trigger, collection=True),
    Route("POST", "/v1/keys", 201, body={"role": "viewer"}, collection=True),
    Route("GET", "/v1/keys", 200, _key, collection=True),
    Route("DELETE", "/v1/keys/{key_id}", 204, _key),
    Route("POST", "/v1/alerts", 201, body=ALERT, collection=True),
    Route("GET", "/v1/alerts", 200, _alert, collection=True),
    Route("GET", "/v1/alerts/{alert_id}", 200, _alert),
    Route("PATCH", "/v1/alerts/{alert_id}", 200, _alert, {"quiet_s": 60}),
    Route("DELETE", "/v1/alerts/{alert_id}", 204, _alert),
    Route("POST", "/v1/alerts/{alert_id}/test", 202, _alert),
    Route("GET", "/v1/alerts/{alert_id}/notifications", 200, _alert),
)


def expected_status(route: Route, who: str) -> int:
    """The table: 401 before 403 before 404 before the answer."""
    if route.role is None:
        return route.ok
    if who in ("none", "bad"):
        return 401
    role = "admin" if who == "other" else who
    if RANK[role] < RANK[route.role]:
        return 403
    if who == "other" and not route.collection:
        return 404
    return route.ok


def _headers_for(api: Api, who: str) -> str | None:
    if who == "none":
        return None
    if who == "bad":
        return "chk_key_doesnotexist_" + secrets.token_urlsafe(16)
    return who


def test_the_table_covers_every_registered_route():
    registered = {
        (method, path)
        for path, methods in app_module.app.routes.items()
        for method in methods
        if path != "/hooks/{token}"
    }
    covered = {(r.method, r.path.replace("/echo/", "/{name}/")) for r in ROUTES}
    assert registered <= covered, f"routes missing from the table: {registered - covered}"


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: f"{r.method} {r.path}")
def test_route_answers_each_caller_as_the_table_says(api, route):
    seen = {}
    for who in CALLERS:
        ctx = route.setup(api)
        path = route.path.format(**ctx)
        answer = api.call(route.method, path, route.body, key=_headers_for(api, who))
        seen[who] = answer.status
        want = expected_status(route, who)
        assert answer.status == want, (who, answer.status, answer.body)
        if answer.status >= 400:
            error = answer.error
            assert error.get("code") and error.get("message"), answer.body
            if answer.status == 404:
                # The same answer as for an id that never existed: nothing to probe.
                assert "acme" not in json.dumps(answer.body)
        if who == "other" and route.collection and route.method == "GET":
            isolated(api, answer.body, ctx)
        if who == "other" and route.path.startswith("/v1/workflows/"):
            assert answer.body == {"deleted": 0}
            still = api.call("GET", f"/v1/triggers/{ctx['trigger_id']}")
            assert still.status == 200
    assert seen["none"] == seen["bad"]


def isolated(api: Api, body: dict, ctx: dict) -> None:
    """Another tenant's list shows none of the first tenant's things."""
    text = json.dumps(body)
    for value in ctx.values():
        assert value not in text
    if "items" in body and body["items"]:
        assert all(item.get("tenant") in (None, "acme") for item in body["items"])


def test_each_route_declares_a_known_role_and_the_answer_this_table_checks():
    for route in ROUTES:
        assert route.role in (None, *RANK), (route.method, route.path, route.role)
        assert route.ok in route.declared.answers, (route.method, route.path)
