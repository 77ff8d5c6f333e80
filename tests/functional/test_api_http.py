"""What a client can send that is wrong, and the lists: never a 500, always the error shape."""

from __future__ import annotations

import json

import pytest

import app as app_module
from chalicelib import assembly, openapi
from chalicelib.services import triggers
from devstack.gateway import contract_client as Client
from tests.functional.api_client import Api


@pytest.fixture
def api(aws):
    with Client(app_module.app, stage_name="test") as client:
        yield Api(client)


CRON = {"workflow": "echo", "schedule": {"cron": "0 8 * * 1"}}


@pytest.mark.parametrize(
    ("raw", "status", "field"),
    [
        (b"{not json", 400, None),
        (b'{"workflow": "echo", "schedule": {"interval_s": NaN}}', 400, None),
        (b'{"workflow": "echo", "schedule": {"interval_s": Infinity}}', 400, None),
        (b'{"workflow": "echo", "concurrency": 1e999}', 422, "concurrency"),
        (b"\xff\xfe", 400, None),
        (b"[]", 422, None),
        (b'"a string"', 422, None),
        (json.dumps({**CRON, "colour": "red"}).encode(), 422, "colour"),
        (
            json.dumps({**CRON, "schedule": {"cron": "0 8 * * 1", "jitter": 5}}).encode(),
            422,
            "schedule.jitter",
        ),
        (json.dumps({**CRON, "title": "x" * 100_000}).encode(), 422, "title"),
        (json.dumps({**CRON, "tags": "not-a-list"}).encode(), 422, "tags"),
        (json.dumps({**CRON, "concurrency": "many"}).encode(), 422, "concurrency"),
        (json.dumps({**CRON, "limits": {"max_usd": -1}}).encode(), 422, "limits.max_usd"),
        (
            json.dumps({"workflow": "echo", "schedule": {"cron": "x" * 5000}}).encode(),
            422,
            "schedule.cron",
        ),
        (json.dumps({**CRON, "state": {"blob": "x" * 70_000}}).encode(), 413, "state"),
        (json.dumps({"workflow": "echo"}).encode(), 422, "schedule"),
    ],
)
def test_bad_create_bodies_answer_4xx_in_the_error_shape(api, raw, status, field):
    answer = api.call("POST", "/v1/triggers", raw=raw)
    assert answer.status == status, answer.body
    assert answer.error["code"] and answer.error["message"]
    assert answer.error.get("field") == field


def test_wrong_content_type_is_415_in_the_contract_shape(api):
    answer = api.call(
        "POST", "/v1/triggers", raw=json.dumps(CRON), headers={"Content-Type": "text/plain"}
    )
    assert answer.status == 415
    assert answer.body["error"]["code"] == "unsupported_media_type"
    assert "Code" not in answer.body


def test_method_not_allowed_is_405_in_the_contract_shape(api):
    answer = api.call("PUT", "/v1/triggers")
    assert answer.status == 405
    assert answer.body["error"]["code"] == "method_not_allowed"
    assert "POST" in answer.headers.get("allow", answer.headers.get("Allow", ""))


def test_patch_accepts_merge_patch_json(api):
    trigger = api.create_trigger()
    answer = api.call(
        "PATCH",
        f"/v1/triggers/{trigger['id']}",
        {"title": "merged"},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert answer.status == 200 and answer.body["title"] == "merged"


@pytest.mark.parametrize(
    ("path", "status", "field"),
    [
        ("/v1/triggers?limit=0", 422, "limit"),
        ("/v1/triggers?limit=abc", 422, "limit"),
        ("/v1/triggers?limit=201", 422, "limit"),
        ("/v1/triggers?status=paused", 422, "status"),
        ("/v1/triggers?cursor=%%%", 422, "cursor"),
        ("/v1/triggers?cursor=eyJhIjoxfQ", 422, "cursor"),
        ("/v1/runs?status=exploded", 422, "status"),
        ("/v1/runs?surface=carrier-pigeon", 422, "surface"),
        ("/v1/runs?cursor=eyJhIjoxfQ", 422, "cursor"),
        ("/v1/runs/" + "x" * 2000, 404, None),
        ("/v1/runs/trg_" + "1" * 300 + ".0000000000000sx", 404, None),
        ("/v1/triggers/" + "trg_" + "a" * 3000, 404, None),
        ("/v1/triggers/trg_nope/preview?count=0", 404, None),
        ("/v1/workflows?limit=-1", 422, "limit"),
    ],
)
def test_bad_query_parameters_are_4xx_naming_the_parameter(api, path, status, field):
    answer = api.call("GET", path)
    assert answer.status == status, answer.body
    assert answer.error.get("field") == field


def test_trigger_list_pages_newest_first_with_filters_and_loses_nothing(api):
    made = []
    for n in range(7):
        tags = ["even"] if n % 2 == 0 else ["odd"]
        made.append(api.create_trigger({**CRON, "tags": tags, "title": f"t{n}"})["id"])
    api.call("POST", f"/v1/triggers/{made[0]}/disable")

    def walk(query: str, limit: int) -> list[list[str]]:
        pages, cursor = [], None
        for _ in range(20):
            suffix = f"&cursor={cursor}" if cursor else ""
            page = api.call("GET", f"/v1/triggers?limit={limit}{query}{suffix}").body
            pages.append([t["id"] for t in page["items"]])
            cursor = page["next_cursor"]
            if not cursor:
                return pages
        raise AssertionError("pagination did not end")

    assert sum(walk("", 3), []) == list(reversed(made))
    evens = sum(walk("&tag=even", 2), [])
    assert evens == [made[6], made[4], made[2], made[0]]
    assert sum(walk("&tag=even&status=active", 1), []) == [made[6], made[4], made[2]]
    assert sum(walk("&status=disabled", 5), []) == [made[0]]
    assert walk("&workflow=fail", 5) == [[]]


def test_runs_list_newest_first_filtered_by_status_surface_and_trigger(aws, api):
    ok = api.create_trigger()
    bad = api.create_trigger({"workflow": "fail", "schedule": {"cron": "0 8 * * 1"}})
    runner = assembly.build_runner()
    run_ids = []
    for trigger in (ok, bad, ok):
        run_ids.append(api.call("POST", f"/v1/triggers/{trigger['id']}/fire").body["run_id"])
        aws.drain(runner)
    all_runs = api.call("GET", "/v1/runs").body
    assert [r["id"] for r in all_runs["items"]] == list(reversed(run_ids))
    failed = api.call("GET", "/v1/runs?status=failed").body["items"]
    assert [r["id"] for r in failed] == [run_ids[1]]
    manual = api.call("GET", "/v1/runs?surface=manual&limit=1").body
    assert [r["id"] for r in manual["items"]] == [run_ids[2]]
    assert manual["next_cursor"]
    rest = api.call("GET", f"/v1/runs?surface=manual&limit=5&cursor={manual['next_cursor']}").body
    assert [r["id"] for r in rest["items"]] == [run_ids[1], run_ids[0]]
    assert rest["next_cursor"] is None
    mine = api.call("GET", f"/v1/runs?trigger_id={ok['id']}").body["items"]
    assert [r["id"] for r in mine] == [run_ids[2], run_ids[0]]
    one = api.call("GET", f"/v1/runs/{run_ids[1]}").body
    assert one["status"] == "failed" and one["surface"] == "manual"


def test_workflows_are_listed_with_their_state_schema(api):
    body = api.call("GET", "/v1/workflows").body
    names = [w["name"] for w in body["items"]]
    assert {"echo", "fail", "sleep"} <= set(names)
    assert names == sorted(names)
    echo = next(w for w in body["items"] if w["name"] == "echo")
    assert set(echo) >= {"name", "description", "state_schema"}
    assert "payload" in echo["description"]
    first = api.call("GET", "/v1/workflows?limit=1").body
    assert len(first["items"]) == 1 and first["next_cursor"]
    second = api.call("GET", f"/v1/workflows?limit=1&cursor={first['next_cursor']}").body
    assert second["items"][0]["name"] == names[1]


def test_deleting_a_workflows_triggers_counts_them_and_keeps_the_others(api):
    echoes = [api.create_trigger()["id"] for _ in range(3)]
    failing = api.create_trigger({"workflow": "fail", "schedule": {"interval_s": 3600}})
    answer = api.call("DELETE", "/v1/workflows/echo/triggers")
    assert answer.status == 200 and answer.body == {"deleted": 3}
    for trigger_id in echoes:
        assert api.call("GET", f"/v1/triggers/{trigger_id}").status == 404
    assert api.call("GET", f"/v1/triggers/{failing['id']}").status == 200
    audit = api.call("GET", "/v1/audit?action=delete").body["items"]
    assert sorted(e["trigger_id"] for e in audit) == sorted(echoes)
    assert api.call("DELETE", "/v1/workflows/echo/triggers").body == {"deleted": 0}


def test_openapi_document_is_served_without_a_key_and_names_every_route(api):
    answer = api.call("GET", "/v1/openapi.json", key=None)
    assert answer.status == 200
    doc = answer.body
    assert doc["openapi"].startswith("3.1")
    routes = {
        (method.lower(), path)
        for path, methods in app_module.app.routes.items()
        for method in methods
    }
    documented = {(m, p) for p, item in doc["paths"].items() for m in item}
    assert documented == routes
    create = doc["paths"]["/v1/triggers"]["post"]
    assert create["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/TriggerIn"
    }
    trigger_in = doc["components"]["schemas"]["TriggerIn"]
    assert trigger_in["additionalProperties"] is False
    assert "workflow" in trigger_in["required"]


def test_docs_api_md_is_generated_from_the_current_document():
    expected = openapi.render_markdown(openapi.build_document(app_module.app.routes))
    current = openapi.DOCS_PATH.read_text() if openapi.DOCS_PATH.exists() else ""
    assert current == expected, (
        "docs/api.md is out of date: run .venv/bin/python -m chalicelib.openapi"
    )


def test_every_route_that_takes_a_body_documents_the_answers_to_a_bad_body():
    # A missing or malformed body is a 400 and a non-JSON one a 415, on every route that
    # reads one (schemathesis reported POST /v1/schedules/simulate's 400 as undocumented).
    document = openapi.build_document(app_module.app.routes)
    missing = [
        f"{method.upper()} {path} {status}"
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        if isinstance(operation, dict) and "requestBody" in operation
        for status in ("400", "415")
        if status not in operation["responses"]
    ]
    assert missing == []


def test_a_cursor_from_another_list_is_refused():
    cursor = triggers.encode_cursor({"trigger_id": {"S": "trg_x"}, "run_id": {"S": "r"}})
    with pytest.raises(Exception) as caught:
        triggers.decode_cursor(cursor, shape=triggers.TRIGGER_CURSOR, fixed={"tenant": "local"})
    assert getattr(caught.value, "field", None) == "cursor"


@pytest.mark.parametrize(
    "authorization",
    [
        "Bearer chk_key_" + "a" * 5000 + "_tail",
        "Bearer " + "x" * 10_000,
        "Bearer chk_key__empty_id",
        "Basic dXNlcjpwYXNz",
        "Bearer",
        "",
    ],
)
def test_malformed_keys_are_401_never_500(api, authorization):
    answer = api.call("GET", "/v1/triggers", key=None, headers={"Authorization": authorization})
    assert answer.status == 401, answer.body
    assert answer.error["code"] == "unauthorized"


def test_an_answer_with_a_field_its_model_lacks_is_drift():
    run = {
        "id": "trg_x.0000000000000s",
        "trigger_id": "trg_x",
        "surface": "schedule",
        "status": "succeeded",
        "scheduled_for": None,
        "started_at": None,
        "finished_at": None,
        "lateness_ms": None,
        "error": None,
        "cost_usd": 0.0,
        "event_id": None,
        "attempt": 1,
    }
    assert openapi.response_drift(openapi.RunOut, run) == []
    assert openapi.response_drift(openapi.RunOut, {**run, "secret_sauce": 1}) == [
        "secret_sauce: not in RunOut"
    ]
    page = {"items": [{**run, "surface": "teleport"}], "next_cursor": None}
    (problem,) = openapi.response_drift(openapi.RunPage, page)
    assert problem.startswith("items.0.surface")


def test_every_route_declares_itself():
    assert openapi.undeclared(app_module.app.routes) == []


def test_a_route_that_declares_nothing_is_named_and_left_out_of_the_document():
    from chalice import Chalice

    bare = Chalice(app_name="bare")

    @bare.route("/undeclared")
    def undeclared():
        return {}

    assert openapi.undeclared(bare.routes) == ["GET /undeclared"]
    assert openapi.build_document(bare.routes)["paths"] == {}
    with pytest.raises(LookupError, match="declares nothing"):
        openapi.answer_model(bare.routes, "GET", "/undeclared", 200)
