"""Fixtures of the functional tests (their helpers are in tests/scenarios.py)."""

from __future__ import annotations

import pytest

from chalicelib.services import switch
from chalicelib.store import kms
from chalicelib.workflows import REGISTRY, Fire, Result, Workflow


@pytest.fixture
def http(aws, clock, monkeypatch):
    """The Chalice app's HTTP test client; the routes read the test's clock."""
    import app as app_module
    from devstack.gateway import contract_client as Client

    monkeypatch.setattr("chalicelib.routes.resource.now_utc", clock)
    kms.clear_cache()
    switch.set_override(None)
    with Client(app_module.app) as client:
        yield client.http
    switch.set_override(None)


@pytest.fixture
def fresh_secrets():
    """No webhook secret opened by an earlier test is cached (``usefixtures`` it)."""
    kms.clear_cache()


@pytest.fixture
def ran(monkeypatch) -> list[int]:
    """Workflow ``count`` (no state) keeps the ``n`` of every payload it runs; ``flaky``
    does too, and fails its first attempt."""
    seen: list[int] = []

    def count(fire: Fire) -> Result:
        seen.append(fire.payload["n"])
        return Result(output={"n": fire.payload["n"]})

    def flaky(fire: Fire) -> Result:
        seen.append(fire.payload["n"])
        if fire.attempt == 1:
            raise RuntimeError("first attempt fails")
        return Result()

    monkeypatch.setitem(REGISTRY, "count", Workflow(name="count", func=count))
    monkeypatch.setitem(REGISTRY, "flaky", Workflow(name="flaky", func=flaky))
    return seen
