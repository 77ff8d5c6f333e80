"""Cold start: each function loads only what its path uses.

Each probe is a fresh interpreter making the function's real first call (``app.py``'s
handler, as Lambda calls it) against a moto server; the check is on the set of modules
loaded, and on the import chain that loaded a heavy one, never on a timing
(docs/benchmarks.md has the timings, ``infra/coldstart.py``).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from infra.coldstart import HEAVY, PROJECT_DIR, MotoServer, import_chains, probe

# The services that register hooks as a side effect of being imported (issue 11 removes
# it): while it exists, ``wiring.ready()`` imports every service through it, pydantic too.
PLUGINS = "chalicelib.services.plugins"
# What the heartbeat and the runner import to decode a schedule and check a result.
FIRE_PATH = (
    "chalicelib.domain.codec",
    "chalicelib.domain.limits",
    "chalicelib.domain.schedule",
    "chalicelib.services.heartbeat",
    "chalicelib.services.heartbeat.enqueuer",
    "chalicelib.services.runner",
)


@pytest.fixture(scope="module")
def moto():
    with MotoServer() as server:
        yield server


@pytest.fixture(scope="module")
def probed(moto) -> dict[str, dict]:
    return {f: probe(f, moto) for f in ("authorizer", "heartbeat", "runner", "enqueuer")}


@pytest.fixture(scope="module")
def loaded(probed) -> dict[str, set[str]]:
    return {f: set(found["modules"]) for f, found in probed.items()}


def _heavy(modules: set[str]) -> set[str]:
    return {h for h in HEAVY if h in modules or any(m.startswith(h + ".") for m in modules)}


def test_the_authorizer_loads_none_of_the_heavy_modules(loaded):
    # It runs before every /v1 request: a key check needs the keys table, nothing else.
    assert _heavy(loaded["authorizer"]) == set()
    assert "chalicelib.services.triggers" not in loaded["authorizer"]
    assert PLUGINS not in loaded["authorizer"]
    assert "chalicelib.services.auth" in loaded["authorizer"]  # the probe did run the check


def test_the_heartbeat_loads_neither_the_batch_utility_nor_jsonschema(loaded):
    heavy = _heavy(loaded["heartbeat"])
    assert "aws_lambda_powertools.utilities.batch" not in heavy
    assert "jsonschema" not in heavy
    assert "chalicelib.services.heartbeat" in loaded["heartbeat"]  # a real tick ran


def test_the_enqueuer_loads_none_of_the_heavy_modules(loaded):
    # A fanned-out tick's shard: read, send, move the cursor; no request model, no
    # contract, no partial batch utility, no schedule in words.
    assert _heavy(loaded["enqueuer"]) == set()
    assert "chalicelib.services.triggers" not in loaded["enqueuer"]
    assert "chalicelib.services.heartbeat.enqueuer" in loaded["enqueuer"]  # a real shard ran


def test_the_runner_does_not_load_jsonschema(loaded):
    # jsonschema checks a state contract; the probe's fire is for a trigger that has none.
    assert "jsonschema" not in _heavy(loaded["runner"])
    assert "chalicelib.services.runner" in loaded["runner"]  # a real batch ran


@pytest.mark.parametrize("function", ["heartbeat", "runner"])
def test_the_fire_path_does_not_load_the_words_for_a_schedule(loaded, function):
    # cron_descriptor says a cadence in words for people; no fire needs it.
    assert "cron_descriptor" not in _heavy(loaded[function])
    assert "chalicelib.domain.schedule.words" in loaded[function]  # its module is there


@pytest.mark.parametrize("function", ["heartbeat", "runner"])
def test_the_fire_path_loads_pydantic_only_through_the_plugin_loader(probed, function):
    """Neither path needs the request models: pydantic may come in only by ``plugins``.

    While ``plugins.py`` imports every service (and so ``domain.spec``), the chain that
    loads pydantic must start there; once it is gone, pydantic must not load at all.
    """
    modules = set(probed[function]["modules"])
    chain = probed[function]["chains"].get("pydantic")
    if PLUGINS in modules:
        assert chain is not None and chain[0] == PLUGINS, chain
    else:
        assert "pydantic" not in _heavy(modules), chain


def test_the_fire_path_modules_import_neither_pydantic_nor_jsonschema():
    """Imported alone, in a fresh interpreter: the codec, the limits, the heartbeat, the runner."""
    code = (
        "import json, sys\n"
        + "".join(f"import {name}\n" for name in FIRE_PATH)
        + "print(json.dumps(sorted(sys.modules)))\n"
    )
    answer = subprocess.run(
        [sys.executable, "-c", code],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    modules = set(json.loads(answer.stdout.strip().splitlines()[-1]))
    assert set(FIRE_PATH) <= modules  # the imports did run
    assert _heavy(modules) & {"pydantic", "jsonschema", "cron_descriptor"} == set()
    assert "chalicelib.domain.spec" not in modules


def test_the_probe_sees_what_a_path_does_load(probed):
    """The runner needs the batch utility: the same probe finds it there (not vacuous)."""
    assert "aws_lambda_powertools.utilities.batch" in _heavy(set(probed["runner"]["modules"]))
    assert probed["runner"]["chains"]["aws_lambda_powertools.utilities.batch"][-1] == (
        "aws_lambda_powertools.utilities.batch"
    )


def _line(depth: int, name: str) -> str:
    return f"import time:       100 |        100 | {'  ' * depth}{name}"


# -X importtime prints a module when its import ends, nested two spaces per level.
_TREE = [
    _line(2, "pydantic.version"),
    _line(1, "pydantic"),
    _line(2, "jsonschema.validators"),
    _line(1, "jsonschema"),
    _line(0, "chalicelib.domain.spec"),
    "not an importtime line",
    _line(1, "pydantic.main"),
    _line(0, "chalicelib.services.triggers"),
]


@pytest.mark.parametrize(
    ("wanted", "chain"),
    [
        ("pydantic", ["chalicelib.domain.spec", "pydantic"]),
        ("jsonschema", ["chalicelib.domain.spec", "jsonschema"]),
        ("chalicelib.domain.spec", ["chalicelib.domain.spec"]),
        ("pydantic.main", ["chalicelib.services.triggers", "pydantic.main"]),
    ],
)
def test_import_chains_names_who_first_imported_a_module(wanted, chain):
    assert import_chains(_TREE, [wanted]) == {wanted: chain}


def test_import_chains_falls_back_to_the_first_submodule_loaded():
    lines = [_line(2, "boto3.session"), _line(1, "chalicelib.store.aws"), _line(0, "app")]
    assert import_chains(lines, ["boto3"]) == {
        "boto3": ["app", "chalicelib.store.aws", "boto3.session"]
    }


def test_import_chains_leaves_out_a_module_never_loaded():
    assert import_chains(_TREE, ["aws_lambda_powertools.utilities.batch"]) == {}
