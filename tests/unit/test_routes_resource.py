"""chalicelib/routes/resource.py: a route's role, written once, is what the route enforces,
what its entry carries (the app's authorizer) and what its declaration says."""

from __future__ import annotations

import json

import pytest
from chalice import AuthResponse, Chalice
from chalice.test import Client

from chalicelib.declare import declared_of
from chalicelib.routes.resource import PATCH_TYPES, Resource, route


def _resource() -> Resource:
    bp = Resource(__name__)

    @route(bp, "/open", "GET", role=None, summary="Open", answers={200: None})
    def open_route():
        return {"who": None}

    @route(bp, "/things/{thing_id}", "POST", role="operator", summary="Do", answers={200: None})
    def do_thing(who, thing_id):
        return {"who": who.role, "thing_id": thing_id, "body": bp.json(required=False)}

    @route(
        bp,
        "/things/{thing_id}",
        "PATCH",
        role="admin",
        summary="Edit",
        answers={200: None},
        body="X",
    )
    def edit_thing(who, thing_id):
        return {"who": who.role}

    @route(bp, "/in", "POST", role=None, summary="In", answers={200: None}, raw_body=True)
    def take():
        return {}

    return bp


def _app(bp: Resource) -> Chalice:
    app = Chalice(app_name="t")

    @app.authorizer(name="authorizer", ttl_seconds=0)
    def api_key(auth_request):  # the token is the role, for the test
        context = {"key_id": "k", "tenant": "t", "role": auth_request.token}
        return AuthResponse(routes=["*"], principal_id="k", context=context)

    app.register_blueprint(bp)
    return app


def _post(client, path: str, role: str) -> tuple[int, dict]:
    answer = client.http.post(path, headers={"Authorization": role}, body=b"")
    return answer.status_code, json.loads(answer.body or b"{}")


def test_the_handler_gets_the_principal_only_with_the_role_the_route_declares():
    with Client(_app(_resource())) as client:
        status, body = _post(client, "/things/a1", "viewer")
        assert status == 403 and "operator" in body["error"]["message"]
        status, body = _post(client, "/things/a1", "operator")
        assert (status, body) == (200, {"who": "operator", "thing_id": "a1", "body": {}})
        assert _post(client, "/things/a1", "admin")[1]["who"] == "admin"


def test_routes_with_a_role_carry_the_apps_authorizer_and_public_ones_none():
    app = _app(_resource())
    authorizer = app.handler_map["authorizer"]
    assert app.routes["/things/{thing_id}"]["POST"].authorizer is authorizer
    assert app.routes["/things/{thing_id}"]["PATCH"].authorizer is authorizer
    assert app.routes["/open"]["GET"].authorizer is None
    assert app.routes["/in"]["POST"].authorizer is None


def test_the_declaration_is_on_the_registered_view_with_the_same_role():
    app = _app(_resource())
    assert declared_of(app.routes["/things/{thing_id}"]["POST"].view_function).role == "operator"
    assert declared_of(app.routes["/things/{thing_id}"]["PATCH"].view_function).role == "admin"
    assert declared_of(app.routes["/open"]["GET"].view_function).role is None


def test_request_content_types_follow_the_declaration():
    app = _app(_resource())
    assert app.routes["/things/{thing_id}"]["PATCH"].content_types == list(PATCH_TYPES)
    assert app.routes["/in"]["POST"].content_types == ["*/*"]
    assert app.routes["/things/{thing_id}"]["POST"].content_types == ["application/json"]


def test_a_resource_registered_before_the_authorizer_is_refused():
    with pytest.raises(RuntimeError, match="authorizer"):
        Chalice(app_name="t").register_blueprint(_resource())


def test_a_resource_registers_with_one_app():
    bp = _resource()
    _app(bp)
    with pytest.raises(RuntimeError, match="already registered"):
        _app(bp)
