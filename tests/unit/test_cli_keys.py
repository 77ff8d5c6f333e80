"""cronhook_cli/keys.py: ``cronhook keys create|list|delete``."""

from __future__ import annotations

import json

from tests.unit.cli_fake import FakeCronhook, invoke, only_request
from tests.unit.cli_fixtures import api_fixture  # noqa: F401


def test_keys_create_sends_role_and_tenant_and_shows_the_key_once(api: FakeCronhook) -> None:
    answer = {"id": "key_7", "key": "ck_secret", "tenant": "acme", "role": "operator"}
    api.answer("POST", "/v1/keys", 201, answer)

    result = invoke(api.url, "keys", "create", "--role", "operator", "--tenant", "acme")

    assert result.exit_code == 0, result.output
    assert only_request(api).body == {"role": "operator", "tenant": "acme"}
    assert "ck_secret" in result.stdout and "key_7" in result.stdout
    assert "shown only this once" in result.stderr


def test_keys_create_json_without_tenant_sends_only_the_role(api: FakeCronhook) -> None:
    answer = {"id": "key_8", "key": "ck_other", "tenant": "local", "role": "viewer"}
    api.answer("POST", "/v1/keys", 201, answer)

    result = invoke(api.url, "keys", "create", "--role", "viewer", "--json")

    assert only_request(api).body == {"role": "viewer"}
    assert json.loads(result.stdout) == answer


def test_keys_create_rejects_an_unknown_role_with_exit_2(api: FakeCronhook) -> None:
    result = invoke(api.url, "keys", "create", "--role", "root")

    assert result.exit_code == 2
    assert api.requests == []


def test_keys_create_by_a_viewer_exits_1_with_the_403_message(api: FakeCronhook) -> None:
    error = {"code": "forbidden", "message": "role admin required"}
    api.answer("POST", "/v1/keys", 403, {"error": error})

    result = invoke(api.url, "keys", "create", "--role", "admin")

    assert result.exit_code == 1
    assert "403 forbidden: role admin required" in result.stderr


def test_keys_delete_sends_delete_and_confirms(api: FakeCronhook) -> None:
    api.answer("DELETE", "/v1/keys/key_1", 204)

    deleted = invoke(api.url, "keys", "delete", "key_1")

    assert deleted.exit_code == 0 and "Deleted key_1" in deleted.stdout
    assert only_request(api).method == "DELETE"
