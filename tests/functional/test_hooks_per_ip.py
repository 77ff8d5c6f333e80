"""The local gateway's per-sender limit on ``/hooks`` (what the optional WAF rule does in AWS)."""

from __future__ import annotations

import json

import pytest

import app as app_module
from chalicelib.services import triggers
from chalicelib.settings import reset_settings
from chalicelib.store.events import EventModel
from devstack.gateway import PerSourceLimit, contract_client
from tests.signing import signed_headers


def _client(monkeypatch, limit: str | None):
    if limit is None:
        monkeypatch.delenv("CRONHOOK_HOOKS_PER_IP_PER_MIN", raising=False)
    else:
        monkeypatch.setenv("CRONHOOK_HOOKS_PER_IP_PER_MIN", limit)
    reset_settings()
    return contract_client(app_module.app, stage_name="test")


def _webhook(root, clock) -> tuple[str, str]:
    created = triggers.create_trigger(
        root, {"workflow": "echo", "event": {"source": "webhook"}}, now=clock()
    )
    return created["webhook"]["url"].rsplit("/", 1)[1], created["webhook"]["secret"]


def _deliver(client, token: str, secret: str, n: int):
    body = json.dumps({"n": n}).encode()
    return client.http.post(
        f"/hooks/{token}", headers=signed_headers("webhook", secret, body, ts=0), body=body
    )


def test_a_sender_past_the_limit_gets_429_with_retry_after_and_nothing_is_stored(
    aws, clock, root, monkeypatch
):
    token, secret = _webhook(root, clock)
    with _client(monkeypatch, "3") as client:
        assert [_deliver(client, token, secret, n).status_code for n in range(3)] == [202] * 3
        refused = _deliver(client, token, secret, 3)
        assert refused.status_code == 429
        assert 1 <= int(refused.headers["Retry-After"]) <= 60
        assert json.loads(refused.body)["error"]["code"] == "throttled"
        # /v1 is not counted.
        listed = client.http.get(
            "/v1/triggers", headers={"Authorization": "Bearer chr_test_root_key"}
        )
        assert listed.status_code == 200
    assert sorted(json.loads(e.body)["n"] for e in EventModel.scan() if e.body) == [0, 1, 2]
    reset_settings()


def test_without_the_setting_there_is_no_local_limit(aws, clock, root, monkeypatch):
    token, secret = _webhook(root, clock)
    with _client(monkeypatch, None) as client:
        assert {_deliver(client, token, secret, n).status_code for n in range(12)} == {202}
    reset_settings()


def test_the_window_slides_per_source_and_refusals_are_not_counted():
    now = [0.0]
    limit = PerSourceLimit(window_s=60, clock=lambda: now[0])
    assert limit.retry_after_s("203.0.113.7", limit=2) is None
    now[0] = 10.0
    assert limit.retry_after_s("203.0.113.7", limit=2) is None
    now[0] = 20.0
    assert limit.retry_after_s("203.0.113.7", limit=2) == 40  # the first leaves at 60
    assert limit.retry_after_s("198.51.100.1", limit=2) is None  # another sender
    now[0] = 60.5
    assert limit.retry_after_s("203.0.113.7", limit=2) is None  # the first left
    assert limit.retry_after_s("203.0.113.7", limit=2) == 10  # the one at 10 leaves at 70
    now[0] = 200.0
    limit.retry_after_s("192.0.2.9", limit=2)
    assert set(limit._seen) == {"192.0.2.9"}  # senders with nothing in the window are forgotten


@pytest.mark.parametrize("path", ["/hooks/trg_x", "/hooks/trg_x?a=1", "/%68ooks/trg_x"])
def test_every_spelling_of_the_webhook_path_is_counted(path):
    from devstack.gateway import _is_hooks_path

    assert _is_hooks_path(path)
    assert not _is_hooks_path("/v1/triggers") and not _is_hooks_path("/v1/hooks")
