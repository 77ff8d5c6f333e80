"""Bodies that used to get a 500 or a second meaning (issue 26, items 5, 6 and 7).

Through the whole HTTP path (the app in process, the moto server behind it):

5. an instant whose offset moves it out of years 1-9999 once in UTC
   (``9999-12-31T23:59:59-14:00``, ``0001-01-01T00:00:00+14:00``): 422 naming the field,
   on create, on PATCH and in a backfill's ``from``/``to`` (it was an OverflowError);
6. a number beyond a double (``1e400``): 422 naming the field (it was stored as
   ``Infinity`` in state, which broke every later read, or became ``null`` in a payload);
7. a key given twice in one object: 400 naming the key (the last one used to win, so a
   proxy reading the first saw another request).

Nothing is stored by a refused request.
"""

from __future__ import annotations

import json

import pytest

import app as app_module
from devstack.gateway import contract_client as Client
from tests.functional.api_client import Api

CRON = {"workflow": "echo", "schedule": {"cron": "0 8 * * 1"}}
OVERFLOWING = ["9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00"]


@pytest.fixture
def api(aws, clock, monkeypatch):
    monkeypatch.setattr("chalicelib.routes.resource.now_utc", clock)
    with Client(app_module.app, stage_name="test") as client:
        yield Api(client)


def _raw(api: Api, method: str, path: str, text: str):
    return api.call(method, path, raw=text.encode())


def _triggers(api: Api) -> list:
    answer = api.call("GET", "/v1/triggers")
    assert answer.status == 200, answer.body
    return answer.body["items"]


# -- 5. instants that overflow in UTC -------------------------------------------------------


@pytest.mark.parametrize("instant", OVERFLOWING)
def test_an_expiry_that_overflows_in_utc_is_a_422_on_create(api, instant):
    answer = api.call("POST", "/v1/triggers", {**CRON, "limits": {"expires_at": instant}})
    assert (answer.status, answer.error.get("field")) == (422, "limits.expires_at"), answer.body
    assert _triggers(api) == []


@pytest.mark.parametrize("instant", OVERFLOWING)
def test_an_expiry_that_overflows_in_utc_is_a_422_on_patch(api, instant):
    created = api.create_trigger(CRON)
    answer = api.call("PATCH", f"/v1/triggers/{created['id']}", {"limits": {"expires_at": instant}})
    assert (answer.status, answer.error.get("field")) == (422, "limits.expires_at"), answer.body
    assert api.call("GET", f"/v1/triggers/{created['id']}").body["limits"] == created["limits"]


@pytest.mark.parametrize("instant", OVERFLOWING)
@pytest.mark.parametrize("field", ["from", "to"])
def test_a_backfill_bound_that_overflows_in_utc_is_a_422_naming_it(api, instant, field):
    created = api.create_trigger({"workflow": "echo", "schedule": {"interval_s": 3600}})
    body = {"from": "2026-01-01T00:00:00Z", "to": "2026-01-02T00:00:00Z", field: instant}
    answer = api.call("POST", f"/v1/triggers/{created['id']}/backfill", body)
    assert (answer.status, answer.error.get("field")) == (422, field), answer.body


def test_the_last_instants_that_fit_are_still_accepted(api):
    created = api.call(
        "POST", "/v1/triggers", {**CRON, "limits": {"expires_at": "9999-12-31T09:59:59-14:00"}}
    )
    assert created.status == 201, created.body
    assert created.body["limits"]["expires_at"].startswith("9999-12-31T23:59:59")


# -- 6. numbers beyond a double --------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "field"),
    [
        (
            '{"workflow": "echo", "schedule": {"cron": "0 8 * * 1"}, "state": {"n": 1e400}}',
            "state.n",
        ),
        (
            '{"workflow": "echo", "schedule": {"cron": "0 8 * * 1"}, "state": {"xs": [1, -1e400]}}',
            "state.xs.1",
        ),
        (
            '{"workflow": "echo", "schedule": {"cron": "0 8 * * 1"}, "limits": {"max_usd": 1e999}}',
            "limits.max_usd",
        ),
    ],
)
def test_a_number_beyond_a_double_is_a_422_naming_the_field_on_create(api, text, field):
    answer = _raw(api, "POST", "/v1/triggers", text)
    assert (answer.status, answer.error.get("field")) == (422, field), answer.body
    assert "finite" in answer.error["message"]
    assert _triggers(api) == []


def test_a_payload_of_1e400_is_a_422_not_a_null_payload(api):
    created = api.create_trigger(CRON)
    answer = _raw(api, "POST", f"/v1/triggers/{created['id']}/fire", '{"payload": {"x": 1e400}}')
    assert (answer.status, answer.error.get("field")) == (422, "payload.x"), answer.body
    runs = api.call("GET", f"/v1/triggers/{created['id']}/runs").body["items"]
    assert runs == []


def test_a_state_patch_of_1e400_is_refused_and_the_state_stays_readable(api):
    created = api.create_trigger({**CRON, "state": {"n": 1}})
    answer = _raw(api, "PATCH", f"/v1/triggers/{created['id']}", '{"state": {"n": 1e400}}')
    assert (answer.status, answer.error.get("field")) == (422, "state.n"), answer.body
    read = api.client.http.get(
        f"/v1/triggers/{created['id']}", headers={"Authorization": f"Bearer {api.keys['root']}"}
    )
    assert json.loads(read.body, parse_constant=lambda c: pytest.fail(c))["state"] == {"n": 1}


def test_large_finite_numbers_are_kept(api):
    text = '{"workflow": "echo", "schedule": {"cron": "0 8 * * 1"}, "state": {"n": 1e300}}'
    answer = _raw(api, "POST", "/v1/triggers", text)
    assert answer.status == 201, answer.body
    assert answer.body["state"] == {"n": 1e300}


# -- 7. a key given twice --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "text", "field"),
    [
        (
            "POST",
            "/v1/triggers",
            '{"workflow": "echo", "workflow": "fail", "schedule": {"interval_s": 3600}}',
            "workflow",
        ),
        (
            "POST",
            "/v1/triggers",
            '{"workflow": "echo", "schedule": {"interval_s": 3600, "interval_s": 60}}',
            "schedule.interval_s",
        ),
        ("POST", "/v1/keys", '{"role": "viewer", "role": "admin"}', "role"),
        (
            "POST",
            "/v1/schedules/preview",
            '{"cron": "0 8 * * 1", "count": 3, "tags": [{"a": 1, "a": 2}]}',
            "tags.0.a",
        ),
    ],
)
def test_a_key_given_twice_is_a_400_naming_it(api, method, path, text, field):
    answer = _raw(api, method, path, text)
    assert (answer.status, answer.error.get("field")) == (400, field), answer.body
    assert "twice" in answer.error["message"]
    assert _triggers(api) == []


def test_a_key_given_twice_in_a_patch_changes_nothing(api):
    created = api.create_trigger(CRON)
    answer = _raw(
        api, "PATCH", f"/v1/triggers/{created['id']}", '{"title": "first", "title": "second"}'
    )
    assert (answer.status, answer.error.get("field")) == (400, "title"), answer.body
    assert api.call("GET", f"/v1/triggers/{created['id']}").body.get("title") == created.get(
        "title"
    )


def test_the_same_key_in_two_objects_is_not_a_repeat(api):
    text = '{"workflow": "echo", "schedule": {"cron": "0 8 * * 1"}, "state": {"a": {"x": 1}, "b": {"x": 2}}}'
    answer = _raw(api, "POST", "/v1/triggers", text)
    assert answer.status == 201, answer.body


def test_a_signed_webhook_body_with_1e400_runs_with_its_text_and_every_answer_stays_json(
    aws, clock, root
):
    """A provider's signed body is not refused (it would be retried for ever), but a
    number beyond a double must not reach a run as ``inf``: the body is read as text."""
    from chalicelib import assembly
    from chalicelib.services import events, triggers
    from tests.scenarios import source_trigger, token_of
    from tests.signing import signed_headers

    created = source_trigger(root, clock, "webhook", workflow="echo")
    body = b'{"type": "job", "n": 1e400}'
    headers = signed_headers("webhook", created["webhook"]["secret"], body, ts=0, delivery="i-1")
    status, answer = events.receive(token_of(created), body=body, headers=headers, now=clock())
    assert status == 202, answer
    assert aws.drain(assembly.build_runner(clock=clock)) == ["succeeded"]
    run = triggers.get_run_view(root, answer["run_id"])
    json.dumps(run, allow_nan=False)  # no Infinity anywhere in what the API answers
    assert run["output"] == body.decode()
    trigger = triggers.get_trigger_view(root, created["id"])
    json.dumps(trigger, allow_nan=False)
