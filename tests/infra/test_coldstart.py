"""Cold start: the authorizer and the heartbeat do not load what their paths never use.

Each probe is a fresh interpreter making the function's real first call (``app.py``'s
handler, as Lambda calls it) against a moto server; the check is on the set of modules
loaded, never on a timing (docs/benchmarks.md has the timings, ``infra/coldstart.py``).
"""

from __future__ import annotations

import pytest

from infra.coldstart import HEAVY, MotoServer, probe


@pytest.fixture(scope="module")
def moto():
    with MotoServer() as server:
        yield server


@pytest.fixture(scope="module")
def loaded(moto) -> dict[str, set[str]]:
    return {f: set(probe(f, moto)["modules"]) for f in ("authorizer", "heartbeat", "runner")}


def _heavy(modules: set[str]) -> set[str]:
    return {h for h in HEAVY if h in modules or any(m.startswith(h + ".") for m in modules)}


def test_the_authorizer_loads_none_of_the_heavy_modules(loaded):
    # It runs before every /v1 request: a key check needs the keys table, nothing else.
    assert _heavy(loaded["authorizer"]) == set()
    assert "chalicelib.services.triggers" not in loaded["authorizer"]
    assert "chalicelib.services.plugins" not in loaded["authorizer"]
    assert "chalicelib.services.auth" in loaded["authorizer"]  # the probe did run the check


def test_the_heartbeat_loads_neither_the_batch_utility_nor_jsonschema(loaded):
    heavy = _heavy(loaded["heartbeat"])
    assert "aws_lambda_powertools.utilities.batch" not in heavy
    assert "jsonschema" not in heavy
    assert "chalicelib.services.heartbeat" in loaded["heartbeat"]  # a real tick ran


def test_the_probe_sees_what_a_path_does_load(loaded):
    """The runner needs the batch utility: the same probe finds it there (not vacuous)."""
    assert "aws_lambda_powertools.utilities.batch" in _heavy(loaded["runner"])
