"""Per-tenant quotas (triggers, API keys, runs in flight): 429 ``quota``, on the moto server."""

from __future__ import annotations

import threading

import pytest

import app as app_module
from chalicelib.domain.errors import Throttled
from chalicelib.services import keys, quotas, triggers
from chalicelib.services.auth import Principal
from chalicelib.settings import reset_settings
from chalicelib.store.aws import client
from chalicelib.store.ledger import LedgerModel
from devstack.gateway import contract_client as Client
from tests.functional.api_client import Api


@pytest.fixture
def limits(aws, monkeypatch):
    """Small quotas for the test."""
    monkeypatch.setenv("CRONHOOK_QUOTA_TRIGGERS", "3")
    monkeypatch.setenv("CRONHOOK_QUOTA_KEYS", "2")
    monkeypatch.setenv("CRONHOOK_QUOTA_RUNS_IN_FLIGHT", "6")
    reset_settings()
    yield
    reset_settings()


def _body(**extra) -> dict:
    return {"workflow": "echo", "schedule": {"interval_s": 60}, **extra}


def _quota_error(caught: pytest.ExceptionInfo) -> dict:
    body = caught.value.to_body()["error"]
    assert caught.value.STATUS_CODE == 429 and body["code"] == "quota"
    return body


def test_a_tenant_at_its_trigger_quota_gets_429_quota_and_a_delete_frees_a_place(
    limits, clock, root
):
    made = [triggers.create_trigger(root, _body(), now=clock()) for _ in range(3)]
    with pytest.raises(Throttled) as caught:
        triggers.create_trigger(root, _body(), now=clock())
    assert "CRONHOOK_QUOTA_TRIGGERS" in _quota_error(caught)["message"]
    assert len(triggers.list_triggers(root, {})["items"]) == 3  # nothing stored
    triggers.delete_trigger(root, made[0]["id"], now=clock())
    triggers.create_trigger(root, _body(), now=clock())
    assert quotas.usage_of("local").triggers == 3


def test_quotas_are_per_tenant(limits, clock, root):
    for _ in range(3):
        triggers.create_trigger(root, _body(), now=clock())
    acme_key = keys.create_key(root, {"role": "operator", "tenant": "acme"}, now=clock())
    acme = Principal(acme_key["id"], "acme", "operator")
    triggers.create_trigger(acme, _body(), now=clock())
    assert quotas.usage_of("acme").triggers == 1


def test_the_sum_of_concurrency_is_the_runs_in_flight_quota(limits, clock, root):
    first = triggers.create_trigger(root, _body(concurrency=4), now=clock())
    with pytest.raises(Throttled) as caught:
        triggers.create_trigger(root, _body(concurrency=3), now=clock())
    assert "CRONHOOK_QUOTA_RUNS_IN_FLIGHT" in _quota_error(caught)["message"]
    second = triggers.create_trigger(root, _body(concurrency=2), now=clock())
    with pytest.raises(Throttled):
        triggers.patch_trigger(root, first["id"], {"concurrency": 5}, now=clock())
    assert triggers.get_trigger_view(root, first["id"])["concurrency"] == 4
    triggers.patch_trigger(root, second["id"], {"concurrency": 1}, now=clock())
    triggers.patch_trigger(root, first["id"], {"concurrency": 5}, now=clock())
    assert quotas.usage_of("local").runs == 6


def test_a_tenant_at_its_key_quota_gets_429_quota(limits, clock, root):
    made = [keys.create_key(root, {"role": "viewer", "tenant": "acme"}, now=clock()) for _ in "ab"]
    with pytest.raises(Throttled) as caught:
        keys.create_key(root, {"role": "viewer", "tenant": "acme"}, now=clock())
    assert "CRONHOOK_QUOTA_KEYS" in _quota_error(caught)["message"]
    keys.delete_key(root, made[0]["id"], now=clock())
    keys.create_key(root, {"role": "viewer", "tenant": "acme"}, now=clock())


def test_usage_is_counted_from_what_the_tenant_has_when_the_counter_is_missing(limits, clock, root):
    for _ in range(2):
        triggers.create_trigger(root, _body(concurrency=2), now=clock())
    # A deployment from before quotas (or a counter lost): no usage item.
    client("dynamodb").delete_item(
        TableName=LedgerModel.Meta.table_name,
        Key={"trigger_id": {"S": "tenant#local"}, "period": {"S": "usage"}},
    )
    assert quotas.usage_of("local") == quotas.Usage(triggers=2, keys=0, runs=4)
    triggers.create_trigger(root, _body(), now=clock())
    with pytest.raises(Throttled):
        triggers.create_trigger(root, _body(), now=clock())


def test_concurrent_creates_never_pass_the_quota(limits, clock, root):
    results: list[str] = []
    start = threading.Barrier(6)

    def create() -> None:
        start.wait()
        try:
            triggers.create_trigger(root, _body(), now=clock())
            results.append("created")
        except Throttled:
            results.append("quota")

    threads = [threading.Thread(target=create) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert sorted(results) == ["created"] * 3 + ["quota"] * 3
    assert len(triggers.list_triggers(root, {})["items"]) == 3


def test_the_api_answers_429_with_the_quota_code(limits):
    with Client(app_module.app, stage_name="test") as chalice_client:
        api = Api(chalice_client)
        for _ in range(3):
            assert api.call("POST", "/v1/triggers", _body()).status == 201
        answer = api.call("POST", "/v1/triggers", _body())
    assert answer.status == 429
    assert answer.error["code"] == "quota"
