"""PATCH /v1/triggers/{id} on event triggers: validated exactly as create, never a 500.

A PATCH that sends ``event`` is checked by the same code as create (``events.validate_event``):
a filter key the source does not know, a blank value, an empty list... is a 422 naming
``event.filter.<key>``, and nothing stored changes (not even the version). ``event.secret``
is refused with a pointer to rotate-secret, ``event.source`` cannot change, and a trigger
cannot switch between schedule and event kinds.
"""

from __future__ import annotations

import json

import pytest

import app as app_module
from chalicelib.domain.errors import ValidationError
from chalicelib.services import events, triggers
from chalicelib.store import kms
from chalicelib.store import triggers as triggers_store
from devstack.gateway import contract_client as Client
from tests.functional.api_client import Api
from tests.signing import signed_headers


@pytest.fixture(autouse=True)
def _fresh_secret_cache():
    kms.clear_cache()


def create_github(root, clock, **event) -> dict:
    body = {
        "workflow": "echo",
        "event": {"source": "github", "secret": "gh-secret-123", **event},
    }
    return triggers.create_trigger(root, body, now=clock())


def stored(trigger_id: str) -> tuple:
    item = triggers_store.get_trigger(trigger_id)
    return (
        item.version,
        item.spec,
        item.kind,
        item.sched,
        item.secret_sealed,
        item.webhook_token,
        item.updated_ms,
    )


BAD_FILTERS = [
    ({"colour": "red"}, "event.filter.colour"),
    ({"type": "push"}, "event.filter.type"),  # a Stripe/Slack key, not GitHub's
    ({"branch": ""}, "event.filter.branch"),
    ({"branch": "   "}, "event.filter.branch"),
    ({"branch": []}, "event.filter.branch"),
    ({"branch": 7}, "event.filter.branch"),
    ({"branch": {"name": "main"}}, "event.filter.branch"),
    ({"github_event": ["push"] * 51}, "event.filter.github_event"),
    ({"repository": "x" * 257}, "event.filter.repository"),
    ({"fields": "merged"}, "event.filter.fields"),
    ({"fields": {"a..b": 1}}, "event.filter.fields"),
    (
        {"fields": {"pull_request.merged": {"nested": True}}},
        "event.filter.fields.pull_request.merged",
    ),
    ({"branch": {"prefix": 3}}, "event.filter.branch.prefix"),
    ({"branch": {"wildcard": "release/**"}}, "event.filter.branch.wildcard"),
    ({"fields": {"size": {"numeric": [">", "1"]}}}, "event.filter.fields.size.numeric"),
    ({"fields": {"size": [1, {"exists": "yes"}]}}, "event.filter.fields.size.exists"),
]


@pytest.mark.parametrize(("flt", "field"), BAD_FILTERS)
def test_a_filter_create_refuses_is_refused_by_patch_too_and_nothing_changes(
    aws, root, clock, flt, field
):
    with pytest.raises(ValidationError) as on_create:
        create_github(root, clock, filter=flt)
    assert on_create.value.field == field

    trigger = create_github(root, clock, filter={"github_event": "push"})
    before = stored(trigger["id"])
    clock.advance(60)
    with pytest.raises(ValidationError) as on_patch:
        triggers.patch_trigger(
            root,
            trigger["id"],
            {"version": trigger["version"], "event": {"source": "github", "filter": flt}},
            now=clock(),
        )
    assert on_patch.value.field == field
    assert type(on_patch.value).STATUS_CODE == 422
    assert stored(trigger["id"]) == before


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        ({"event": {"source": "gitlab"}}, "event.source", ""),
        ({"event": {"source": "stripe", "secret": "whsec_other"}}, "event.source", "new source"),
        ({"event": {"source": "webhook"}}, "event.source", "new source"),
        ({"event": {"source": "github", "secret": "another-secret"}}, "event.secret", "rotate"),
        ({"event": {"source": "github", "secret": None}}, "event.secret", "rotate"),
        ({"event": {"source": "github", "max_attempts": 11}}, "event.max_attempts", ""),
        ({"event": {"source": "github", "dedupe_window_s": 1}}, "event.dedupe_window_s", ""),
        ({"event": {"source": "github", "filter": "push"}}, "event.filter", ""),
        ({"event": {"source": "github", "token": "x"}}, "event.token", ""),
        ({"event": None}, "event", ""),
        ({"event": "github"}, "event", ""),
        ({"schedule": {"interval_s": 3600}}, "schedule", "event trigger"),
        ({"schedule": {"cron": "0 8 * * 1"}, "event": None}, "schedule", "event trigger"),
        ({"schedule": None}, "schedule", "event trigger"),
    ],
)
def test_invalid_event_edits_are_422s_naming_the_field_and_change_nothing(
    aws, root, clock, body, field, says
):
    trigger = create_github(root, clock, filter={"branch": "main"})
    before = stored(trigger["id"])
    with pytest.raises(ValidationError) as caught:
        triggers.patch_trigger(root, trigger["id"], body, now=clock())
    assert caught.value.field == field
    assert says in str(caught.value)
    assert stored(trigger["id"]) == before


def test_a_patched_secret_points_at_rotate_secret_and_the_old_secret_keeps_verifying(
    aws, root, clock
):
    trigger = create_github(root, clock)
    with pytest.raises(ValidationError) as caught:
        triggers.patch_trigger(
            root,
            trigger["id"],
            {"event": {"source": "github", "secret": "another-secret"}},
            now=clock(),
        )
    assert f"POST /v1/triggers/{trigger['id']}/rotate-secret" in str(caught.value)
    assert "another-secret" not in str(caught.value)
    body = json.dumps({"ref": "refs/heads/main"}).encode()
    headers = signed_headers("github", "gh-secret-123", body, ts=0, delivery="d-1")
    token = trigger["webhook"]["url"].rsplit("/", 1)[1]
    status, _ = events.receive(token, body=body, headers=headers, now=clock())
    assert status == 202


def test_a_valid_filter_edit_is_stored_whole_and_applies_to_the_next_delivery(aws, root, clock):
    trigger = create_github(root, clock, filter={"github_event": "push"}, max_attempts=5)
    edited = triggers.patch_trigger(
        root,
        trigger["id"],
        {"event": {"source": "github", "filter": {"github_event": ["issues"], "action": "opened"}}},
        now=clock(),
    )
    assert edited["event"]["filter"] == {"github_event": ["issues"], "action": "opened"}
    assert edited["event"]["max_attempts"] == 5  # the other event fields merge
    assert "secret" not in edited["event"]
    assert edited["cadence"] == "On GitHub issues"
    assert edited["version"] == trigger["version"] + 1
    token = trigger["webhook"]["url"].rsplit("/", 1)[1]

    def deliver(kind: str, action: str, n: int) -> tuple[int, dict]:
        body = json.dumps({"action": action, "n": n}).encode()  # GitHub signs only the body
        headers = signed_headers("github", "gh-secret-123", body, ts=0, delivery=f"d-{n}")
        headers["X-GitHub-Event"] = kind
        return events.receive(token, body=body, headers=headers, now=clock())

    assert deliver("push", "opened", 1)[1].get("ignored") == "filter"
    assert deliver("issues", "closed", 2)[1].get("ignored") == "filter"
    status, answer = deliver("issues", "opened", 3)
    assert status == 202 and answer["event_id"]

    cleared = triggers.patch_trigger(
        root, trigger["id"], {"event": {"source": "github", "filter": None}}, now=clock()
    )
    assert cleared["event"]["filter"] is None
    assert deliver("push", "opened", 4)[0] == 202


def test_a_scheduled_trigger_cannot_become_an_event_trigger(aws, root, clock):
    trigger = triggers.create_trigger(
        root, {"workflow": "echo", "schedule": {"cron": "0 8 * * 1"}}, now=clock()
    )
    before = stored(trigger["id"])
    for body in (
        {"event": {"source": "webhook"}},
        {"event": {"source": "webhook"}, "schedule": None},
        {"event": {"source": "github", "filter": {"colour": "red"}}},
    ):
        with pytest.raises(ValidationError) as caught:
            triggers.patch_trigger(root, trigger["id"], body, now=clock())
        assert caught.value.field in ("event", "schedule")
    with pytest.raises(ValidationError):
        triggers.patch_trigger(root, trigger["id"], {"event": None}, now=clock())
    assert stored(trigger["id"]) == before
    assert triggers_store.get_trigger(trigger["id"]).webhook_token is None


# -- over HTTP: the contract's error shape, never a 500 ------------------------------------


@pytest.fixture
def api(aws):
    with Client(app_module.app, stage_name="test") as client:
        yield Api(client)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"event": {"source": "github", "filter": {"colour": "red"}}}, "event.filter.colour"),
        ({"event": {"source": "github", "filter": {"branch": []}}}, "event.filter.branch"),
        ({"event": {"source": "github", "filter": {"fields": [1]}}}, "event.filter.fields"),
        ({"event": {"source": "github", "filter": {"branch": 1.5}}}, "event.filter.branch"),
        (b'{"event": {"source": "github", "filter": {"branch": 1e999}}}', "event.filter.branch"),
        (
            b'{"event": {"source": "github", "filter": {"fields": {"n": 1e999}}}}',
            "event.filter.fields.n",
        ),
        ({"event": {"source": "github", "secret": "another-secret"}}, "event.secret"),
        ({"event": {"source": "shopify"}}, "event.source"),
        ({"event": {"source": "gitlab"}}, "event.source"),
        ({"event": []}, "event"),
        ({"schedule": {"interval_s": 3600}}, "schedule"),
    ],
)
def test_event_patches_over_http_answer_422_in_the_error_shape(api, body, field):
    created = api.create_trigger(
        {"workflow": "echo", "event": {"source": "github", "filter": {"branch": "main"}}}
    )
    path = f"/v1/triggers/{created['id']}"
    if isinstance(body, bytes):
        answer = api.call("PATCH", path, raw=body)
    else:
        answer = api.call("PATCH", path, body)
    assert answer.status == 422, answer.body
    assert answer.error["code"] and answer.error["message"]
    assert answer.error.get("field") == field
    after = api.call("GET", f"/v1/triggers/{created['id']}").body
    assert after["version"] == created["version"]
    assert after["event"] == created["event"]


def test_a_scheduled_trigger_patched_with_an_event_over_http_is_a_422(api):
    created = api.create_trigger()
    answer = api.call(
        "PATCH",
        f"/v1/triggers/{created['id']}",
        {"event": {"source": "webhook", "filter": {"type": "job"}}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert answer.status == 422 and answer.error["field"] == "event"
    after = api.call("GET", f"/v1/triggers/{created['id']}").body
    assert (after["kind"], after["version"], after["webhook_url"]) == ("cron", 1, None)


def test_an_event_patch_need_not_repeat_the_source(api):
    created = api.create_trigger(
        {"workflow": "echo", "event": {"source": "github", "filter": {"branch": "main"}}}
    )
    path = f"/v1/triggers/{created['id']}"
    answer = api.call("PATCH", path, {"event": {"filter": {"branch": "release"}}})
    assert answer.status == 200, answer.body
    assert answer.body["event"]["source"] == "github"
    assert answer.body["event"]["filter"] == {"branch": "release"}
    answer = api.call("PATCH", path, {"event": {"max_attempts": 5}})
    assert answer.status == 200, answer.body
    assert answer.body["event"]["filter"] == {"branch": "release"}
    assert answer.body["event"]["max_attempts"] == 5
    # An empty event edit changes nothing and is not an error.
    answer = api.call("PATCH", path, {"event": {}})
    assert answer.status == 200 and answer.body["event"]["max_attempts"] == 5
