"""A small JSON client over ``chalice.test.Client`` for the API tests (the app in process)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tests.conftest import ROOT_KEY

ROLES = ("viewer", "operator", "admin")


@dataclass
class Answer:
    status: int
    body: Any
    headers: dict

    @property
    def error(self) -> dict:
        return (self.body or {}).get("error") or {}


class Api:
    """Calls the Chalice app like API Gateway would, with a key per call."""

    def __init__(self, client: Any):
        self.client = client
        self.keys: dict[str, str] = {"root": ROOT_KEY}

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        key: str | None = "root",
        raw: bytes | str | None = None,
        headers: dict | None = None,
    ) -> Answer:
        sent = {"Content-Type": "application/json"}
        if key is not None:
            sent["Authorization"] = f"Bearer {self.keys.get(key, key)}"
        sent.update(headers or {})
        data = raw if raw is not None else (b"" if body is None else json.dumps(body))
        response = self.client.http.request(method, path, headers=sent, body=data)
        parsed: Any = None
        if response.body:
            try:
                parsed = json.loads(response.body)
            except ValueError:
                parsed = response.body
        return Answer(response.status_code, parsed, dict(response.headers))

    def make_key(self, name: str, role: str, tenant: str | None = None) -> dict:
        """Create a key with the root key and remember it under ``name``."""
        body = {"role": role} if tenant is None else {"role": role, "tenant": tenant}
        answer = self.call("POST", "/v1/keys", body)
        assert answer.status == 201, answer.body
        self.keys[name] = answer.body["key"]
        return answer.body

    def create_trigger(self, body: dict | None = None, *, key: str = "root") -> dict:
        answer = self.call(
            "POST",
            "/v1/triggers",
            body or {"workflow": "echo", "schedule": {"cron": "0 8 * * 1"}, "tags": ["t"]},
            key=key,
        )
        assert answer.status == 201, answer.body
        return answer.body
