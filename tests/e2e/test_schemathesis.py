"""schemathesis against ``/v1/openapi.json`` of a running local stack.

The stack is started the way a user starts it, on its own (its heartbeat is an hour, so
the triggers the fuzzer creates never fire and load the other e2e tests' stack). The run
is bounded: a few examples per operation, deterministic generation, one worker, and a
hard timeout. What must hold: no 5xx for anything sent, every status code and content
type documented, every response body valid against its schema.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from tests.e2e.conftest import start_stack, stop_stack

pytestmark = pytest.mark.e2e

CHECKS = ",".join(
    (
        "not_a_server_error",
        "status_code_conformance",
        "content_type_conformance",
        "response_headers_conformance",
        "response_schema_conformance",
    )
)
EXAMPLES_PER_OPERATION = 5
TIMEOUT_S = 400


def _st() -> list[str]:
    beside = Path(sys.executable).parent / "st"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("st")
    if found is None:
        pytest.fail("schemathesis is not installed: pip install -r requirements-dev.txt")
    return [found]


@pytest.mark.soak
def test_the_api_keeps_the_promises_of_its_openapi_document(tmp_path):
    stack = start_stack(tmp_path, heartbeat_s=3600, min_interval_s=60)
    try:
        doc = requests.get(stack.url + "/v1/openapi.json", timeout=10).json()
        assert len(doc["paths"]) >= 20
        command = [
            *_st(),
            "run",
            f"{stack.url}/v1/openapi.json",
            "--header",
            f"Authorization: Bearer {stack.api_key}",
            "--checks",
            CHECKS,
            "--phases",
            "coverage,fuzzing",
            "--max-examples",
            str(EXAMPLES_PER_OPERATION),
            "--generation-deterministic",
            "--workers",
            "1",
            "--request-timeout",
            "20",
            "--no-shrink",
            "--no-color",
        ]
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=TIMEOUT_S, cwd=tmp_path
        )
        report = result.stdout[-12000:] + result.stderr[-3000:]
        assert result.returncode == 0, f"schemathesis found problems:\n{report}\n{stack.log_tail()}"
        assert "Tested: " in result.stdout
    finally:
        stop_stack(stack)
