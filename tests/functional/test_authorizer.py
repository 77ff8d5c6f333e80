"""The API's custom authorizer and the gateway's own answers, as API Gateway runs them.

In process the app runs behind ``ContractGateway`` (Chalice's local gateway with the
deployed API's gateway responses), which is also what ``make run`` serves; the same
authorizer runs in AWS (``tests/infra`` drives the deployed one).
"""

from __future__ import annotations

import json
import threading
import urllib.request

import pytest

import app as app_module
from chalicelib import wiring
from chalicelib.gateway import AUTH_REFUSED, GATEWAY_RESPONSES
from chalicelib.services import triggers
from chalicelib.store.keys import KeyModel
from devstack.gateway import contract_client
from tests.conftest import ROOT_KEY
from tests.functional.api_client import Api

PUBLIC = {
    ("GET", "/healthz"),
    ("HEAD", "/healthz"),
    ("GET", "/v1/openapi.json"),
    ("POST", "/hooks/{token}"),
    ("GET", "/hooks/{token}"),  # LinkedIn's challenge: answered only for a linkedin token
    ("GET", "/"),
    ("GET", "/console/{name}"),
}
UNAUTHORIZED = GATEWAY_RESPONSES["UNAUTHORIZED"].body()


@pytest.fixture
def api(aws):
    with contract_client(app_module.app, stage_name="test") as client:
        yield Api(client)


def test_every_route_but_the_public_ones_has_the_authorizer_without_caching():
    routes = {
        (method, path): entry
        for path, methods in app_module.app.routes.items()
        for method, entry in methods.items()
    }
    assert PUBLIC <= set(routes)
    for (method, path), entry in routes.items():
        if (method, path) in PUBLIC:
            assert entry.authorizer is None, (method, path)
        else:
            assert entry.authorizer is not None, (method, path)
            assert entry.authorizer.name == "authorizer"
            assert entry.authorizer.config.ttl_seconds == 0  # revocation is immediate


def test_the_authorizer_as_lambda_returns_a_policy_for_every_route_and_the_principal(aws):
    arn = "arn:aws:execute-api:us-east-1:123456789012:abc123/api/GET/v1/triggers"
    event = {"type": "TOKEN", "authorizationToken": f"Bearer {ROOT_KEY}", "methodArn": arn}
    answer = app_module.api_key(event, None)
    assert answer["principalId"] == "root"
    assert answer["context"] == {"key_id": "root", "tenant": "local", "role": "admin"}
    (statement,) = answer["policyDocument"]["Statement"]
    assert statement["Effect"] == "Allow" and statement["Action"] == "execute-api:Invoke"
    # One policy for every route and method: the route checks the role itself.
    assert statement["Resource"] == ["arn:aws:execute-api:us-east-1:123456789012:abc123/api/*/*"]


@pytest.mark.parametrize(
    "token", ["", "Bearer ", "Bearer nope", "Basic abc", f"Bearer {ROOT_KEY}x", "chk_key_a_b"]
)
def test_the_authorizer_refuses_a_bad_key_with_the_message_api_gateway_answers_401_for(aws, token):
    event = {"type": "TOKEN", "authorizationToken": token, "methodArn": "arn:x/api/GET/v1/runs"}
    with pytest.raises(Exception) as refused:
        app_module.api_key(event, None)
    # Lambda reports str(exception) as errorMessage; exactly "Unauthorized" makes it a 401.
    assert str(refused.value) == AUTH_REFUSED == "Unauthorized"


@pytest.mark.parametrize("authorization", [None, "Bearer nope", "Bearer chk_key_x_y", "Token a"])
def test_a_missing_or_bad_key_is_401_in_the_contract_shape_and_the_route_never_runs(
    api, monkeypatch, authorization
):
    def must_not_run(*args, **kwargs):
        raise AssertionError("the route ran")

    monkeypatch.setattr(triggers, "list_triggers", must_not_run)
    headers = {} if authorization is None else {"Authorization": authorization}
    answer = api.call("GET", "/v1/triggers", key=None, headers=headers)
    assert (answer.status, answer.body) == (401, UNAUTHORIZED)
    assert answer.headers["Content-Type"] == "application/json"


def test_the_route_reads_the_principal_from_the_authorizer_and_checks_the_key_once(
    api, monkeypatch
):
    seen = []
    real = wiring.authenticate

    def counting(header):
        seen.append(header)
        return real(header)

    monkeypatch.setattr(wiring, "authenticate", counting)
    api.make_key("viewer", "viewer")
    seen.clear()
    answer = api.call("GET", "/v1/triggers", key="viewer")
    assert answer.status == 200
    assert len(seen) == 1  # the authorizer; the route took the principal from its context
    # The role is still the route's business: a viewer may not create.
    created = api.call(
        "POST",
        "/v1/triggers",
        {"workflow": "echo", "schedule": {"cron": "* * * * *"}},
        key="viewer",
    )
    assert created.status == 403 and created.error["code"] == "forbidden"


def test_a_revoked_key_is_refused_on_its_next_request(api):
    key = api.make_key("ops", "operator")
    assert api.call("GET", "/v1/triggers", key="ops").status == 200
    assert api.call("DELETE", f"/v1/keys/{key['id']}").status == 204
    answer = api.call("GET", "/v1/triggers", key="ops")
    assert (answer.status, answer.body) == (401, UNAUTHORIZED)


def test_an_authorizer_that_cannot_check_the_key_is_503_and_the_route_never_runs(api, monkeypatch):
    def unreachable(key_id, **kwargs):
        raise ConnectionError("DynamoDB is unreachable")

    monkeypatch.setattr(KeyModel, "get", unreachable)
    answer = api.call("GET", "/v1/triggers", key="chk_key_abc_" + "x" * 43)
    assert answer.status == 503
    assert answer.body == GATEWAY_RESPONSES["AUTHORIZER_FAILURE"].body()


def test_a_route_reached_without_the_authorizers_context_is_refused(aws):
    class Request:
        context: dict = {}
        headers = {"authorization": f"Bearer {ROOT_KEY}"}

    with pytest.raises(wiring.Unauthorized):
        wiring.caller(Request())


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/nothing"), ("GET", "/v1/trigger"), ("POST", "/v1/runs/x/y"), ("GET", "/hooks")],
)
def test_an_unknown_route_is_404_in_the_contract_shape_with_or_without_a_key(api, method, path):
    for key in (None, "root"):
        answer = api.call(method, path, key=key)
        assert answer.status == 404, (path, answer.body)
        assert answer.body == GATEWAY_RESPONSES["MISSING_AUTHENTICATION_TOKEN"].body()


def test_public_routes_need_no_key(api):
    assert api.call("GET", "/healthz", key=None).status == 200
    assert api.call("GET", "/v1/openapi.json", key=None).status == 200


def test_gateway_response_templates_render_to_the_contract_shape():
    for response_type, answer in GATEWAY_RESPONSES.items():
        rendered = answer.template().replace("$context.error.messageString", '"as sent"')
        body = json.loads(rendered)
        assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}
        assert body["error"]["message"] == (answer.message or "as sent"), response_type


def test_concurrent_requests_on_the_local_server_each_see_their_own_request(aws):
    """Chalice keeps the current request on the app; the local server runs threads."""
    from devstack.http import serve

    server = serve("127.0.0.1", 0)
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    errors: list[str] = []

    def preview(minute: int) -> dict:
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/schedules/preview",
            data=json.dumps(
                {"cron": f"{minute} * * * *", "from": "2026-01-01T00:00:00Z", "count": 1}
            ).encode(),
            headers={"Authorization": f"Bearer {ROOT_KEY}", "Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=60) as answer:
            return json.loads(answer.read())

    expected = {minute: preview(minute) for minute in range(1, 9)}
    assert len({json.dumps(v) for v in expected.values()}) == 8  # each answer is its own

    def client(n: int) -> None:
        for i in range(12):
            minute = (n + i) % 8 + 1
            got = preview(minute)
            if got != expected[minute]:
                errors.append(f"sent minute {minute}, answered {got!r}")

    threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
    finally:
        server.shutdown()
        server.server_close()
    assert not errors, errors[:3]


def test_each_thread_sees_the_request_it_is_handling():
    from chalice import Chalice

    from devstack.gateway import per_thread_requests

    app = per_thread_requests(Chalice(app_name="probe"))
    assert per_thread_requests(app) is app  # idempotent
    barrier = threading.Barrier(2)
    seen: dict[str, object] = {}

    def handle(name: str) -> None:
        app.current_request = name  # what Chalice does on each request
        barrier.wait()  # both requests are now in flight
        seen[name] = app.current_request

    threads = [threading.Thread(target=handle, args=(n,)) for n in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert seen == {"a": "a", "b": "b"}
