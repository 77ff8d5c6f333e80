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


def _route_of(method: str, path: str) -> str | None:
    """The route template (``/v1/triggers/{trigger_id}``) that serves ``method path``."""
    import app as app_module

    parts = path.split("?", 1)[0].split("/")
    best: tuple[int, str] | None = None
    for template, methods in app_module.app.routes.items():
        if method.upper() not in methods:
            continue
        pattern = template.split("/")
        if len(pattern) != len(parts):
            continue
        if all(p.startswith("{") or p == q for p, q in zip(pattern, parts, strict=True)):
            static = sum(not p.startswith("{") for p in pattern)
            if best is None or static > best[0]:
                best = (static, template)
    return best[1] if best else None


def check_declared(method: str, path: str, answer: Answer) -> None:
    """Every JSON answer matches the model its route declared (no undocumented field)."""
    import app as app_module
    from chalicelib import openapi

    template = _route_of(method, path)
    if template is None or not isinstance(answer.body, dict | list):
        return  # no such route (405/404 from the gateway), or no JSON body
    model = openapi.answer_model(app_module.app.routes, method, template, answer.status)
    if model is None:
        return
    drift = openapi.response_drift(model, answer.body)
    assert not drift, f"{method} {template} {answer.status} drifts from {model.__name__}: {drift}"


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
        answer = Answer(response.status_code, parsed, dict(response.headers))
        check_declared(method, path, answer)
        return answer

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
