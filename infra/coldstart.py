"""Cold start: what each function imports before it answers its first request, and how long.

Every function's handler lives in ``app.py``, so each one pays for ``import app``; then its
first call imports what its path needs (``wiring.ready()``, the services). This runs each
function's real first call in a fresh interpreter, against a moto server of its own with
the tables made, and reports

- ``modules``: every module loaded by then (``tests/infra/test_coldstart.py`` checks that
  the authorizer, the heartbeat and the runner load none of ``HEAVY`` they do not need);
- ``import_ms``: the time spent importing (``python -X importtime``: the sum of the
  top-level imports from ``import app`` to the end of the first call; network time to
  moto is not counted);
- ``cpu_ms``: the CPU time the process spent over the same span, imports and the call
  itself (``time.process_time``): on a busy machine the wall-clock import time swells with
  the waits for a core, this far less;
- ``chains``: for each of ``HEAVY`` that was loaded, the import chain that first pulled it
  in, outermost first (``["chalicelib.services.heartbeat", "chalicelib.domain.spec",
  "pydantic"]``): what to make lazy, or move, to keep it out.

``python -m infra.coldstart [--runs 5]`` prints the medians (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

__all__ = ["FUNCTIONS", "HEAVY", "probe", "measure", "import_chains", "MotoServer"]

PROJECT_DIR = Path(__file__).resolve().parent.parent
FUNCTIONS = ("authorizer", "heartbeat", "runner", "api", "ingest", "enqueuer")
# Modules a function should load only if its path needs them.
HEAVY = {
    "pydantic": "request validation (trigger specs)",
    "jsonschema": "state and payload contracts",
    "aws_lambda_powertools.utilities.batch": "the runner's partial batch responses",
    "cron_descriptor": "a schedule in words (domain.schedule.words)",
    "holidays": "public holidays (a schedule.calendar with holiday codes)",
}
BEGIN, END = "--coldstart-begin--", "--coldstart-end--"
ROOT_KEY = "chr_coldstart_root_key_for_the_probe_only"

# The first call of each function, as Lambda makes it (the handler names of app.py).
_CALLS = {
    "authorizer": """
event = {"type": "TOKEN", "authorizationToken": "Bearer " + ROOT_KEY,
         "methodArn": "arn:aws:execute-api:us-east-1:123456789012:abc/api/GET/v1/triggers"}
answer = app.api_key(event, Context())
assert answer["principalId"], answer
""",
    "heartbeat": """
event = {"version": "0", "id": "x", "detail-type": "Scheduled Event", "source": "aws.events",
         "account": "123456789012", "time": "2026-01-01T00:00:00Z", "region": "us-east-1",
         "resources": [], "detail": {}}
app.heartbeat(event, Context())
""",
    "runner": """
from chalicelib.store.sqs import FireMessage  # the runner's own message format
body = FireMessage(run_id="run_coldstart", trigger_id="trg_coldstart", surface="schedule",
                   scheduled_ms=1767225600000).body()
record = {"messageId": "m1", "receiptHandle": "r1", "body": body,
          "attributes": {"ApproximateReceiveCount": "1"}, "messageAttributes": {},
          "md5OfBody": "", "eventSource": "aws:sqs",
          "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:cronhook-coldstart-fires",
          "awsRegion": "us-east-1"}
answer = app.runner({"Records": [record]}, Context())
assert "batchItemFailures" in answer, answer
""",
    # A fanned-out tick's message for shard 0, as the heartbeat sends it this minute.
    "enqueuer": """
body = json.dumps({"shard": 0, "now": int(time.time() * 1000)})
record = {"messageId": "m1", "receiptHandle": "r1", "body": body,
          "attributes": {"ApproximateReceiveCount": "1"}, "messageAttributes": {},
          "md5OfBody": "", "eventSource": "aws:sqs",
          "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:cronhook-coldstart-ticks",
          "awsRegion": "us-east-1"}
answer = app.enqueuer({"Records": [record]}, Context())
assert answer == {"batchItemFailures": []}, answer
""",
    "api": """
event = {"resource": "/v1/triggers", "path": "/v1/triggers", "httpMethod": "GET",
         "headers": {"accept": "application/json"}, "multiValueHeaders": {},
         "queryStringParameters": None, "multiValueQueryStringParameters": None,
         "pathParameters": None, "stageVariables": None, "body": None,
         "isBase64Encoded": False,
         "requestContext": {"resourcePath": "/v1/triggers", "httpMethod": "GET",
                            "stage": "api", "requestId": "req1", "path": "/api/v1/triggers",
                            "identity": {"sourceIp": "127.0.0.1"},
                            "authorizer": {"key_id": "root", "tenant": "local",
                                           "role": "admin", "principalId": "root"}}}
answer = app.app(event, Context())
assert answer["statusCode"] == 200, answer
""",
    # An EventBridge rule's message for a trigger that is gone: the consumer reads the
    # trigger and drops the message (a real first call; no trigger needs to exist).
    "ingest": """
body = json.dumps({"trigger_id": "trg_coldstart", "event": {"id": "e1", "detail": {}}})
record = {"messageId": "m1", "receiptHandle": "r1", "body": body,
          "attributes": {"ApproximateReceiveCount": "1"}, "messageAttributes": {},
          "md5OfBody": "", "eventSource": "aws:sqs",
          "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:cronhook-coldstart-ingest",
          "awsRegion": "us-east-1"}
answer = app.ingest({"Records": [record]}, Context())
assert answer == {"batchItemFailures": []}, answer
""",
}

_PROBE = """
import json, sys, time
ROOT_KEY = {root!r}
class Context:
    function_name = "cronhook-coldstart-{function}"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:" + function_name
    aws_request_id = "req-coldstart"
    log_group_name = "/aws/lambda/" + function_name
    log_stream_name = "probe"
    def get_remaining_time_in_millis(self):
        return 300_000
sys.stderr.write({begin!r} + "\\n"); sys.stderr.flush()
cpu_at_begin = time.process_time()
import app
{call}
cpu_s = time.process_time() - cpu_at_begin
sys.stderr.write({end!r} + "\\n"); sys.stderr.flush()
print(json.dumps({{"modules": sorted(sys.modules), "cpu_ms": cpu_s * 1000}}))
"""

_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \| ( *)(\S+)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MotoServer:
    """``python -m moto.server`` on a private port, with cronhook's tables and queue."""

    def __init__(self) -> None:
        self.url = f"http://127.0.0.1:{_free_port()}"
        self.proc: subprocess.Popen | None = None
        self.queue_url = ""

    def __enter__(self) -> MotoServer:
        port = self.url.rsplit(":", 1)[1]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", port],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        import boto3

        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", int(port)), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("moto server did not start") from None
                time.sleep(0.1)
        env = {**os.environ, **self.env()}
        subprocess.run(
            [
                sys.executable,
                "-c",
                "from chalicelib.wiring import ready; ready(); "
                "from chalicelib.store.tables import create_tables; create_tables(wait=False)",
            ],
            cwd=PROJECT_DIR,
            env=env,
            check=True,
        )
        sqs = boto3.client(
            "sqs",
            region_name="us-east-1",
            endpoint_url=self.url,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        self.queue_url = sqs.create_queue(QueueName="cronhook-coldstart-fires")["QueueUrl"]
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=10)

    def env(self) -> dict[str, str]:
        return {
            "CRONHOOK_AWS_ENDPOINT": self.url,
            "CRONHOOK_STAGE": "coldstart",
            "CRONHOOK_TABLE_PREFIX": "cronhook-coldstart-",
            "CRONHOOK_API_KEY": ROOT_KEY,
            "CRONHOOK_QUEUE_URL": self.queue_url,
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "POWERTOOLS_SERVICE_NAME": "cronhook",
            "POWERTOOLS_METRICS_NAMESPACE": "cronhook",
            "POWERTOOLS_TRACE_DISABLED": "1",
        }


def probe(function: str, moto: MotoServer, *, project_dir: Path = PROJECT_DIR) -> dict:
    """One cold first call of ``function``: the modules loaded and the import time (ms).

    ``project_dir``: the source tree to import (another checkout, to compare versions)."""
    code = _PROBE.format(
        root=ROOT_KEY, function=function, begin=BEGIN, end=END, call=_CALLS[function]
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRONHOOK_", "PYTHON"))}
    env.update(moto.env())
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    answer = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        cwd=project_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if answer.returncode:
        tail = "\n".join(line for line in answer.stderr.splitlines() if "import time" not in line)
        raise RuntimeError(f"{function}: the first call failed:\n{tail[-3000:]}")
    total_us = 0
    inside = False
    for line in answer.stderr.splitlines():
        if line == BEGIN:
            inside = True
        elif line == END:
            inside = False
        elif inside:
            match = _LINE.match(line)
            if match and not match.group(3):  # a top-level import: its cumulative time
                total_us += int(match.group(2))
    found = json.loads(answer.stdout.strip().splitlines()[-1])
    return {
        "modules": found["modules"],
        "import_ms": total_us / 1000,
        "cpu_ms": found["cpu_ms"],
        "chains": import_chains(answer.stderr.splitlines(), HEAVY),
    }


def import_chains(lines: list[str], names: Iterable[str]) -> dict[str, list[str]]:
    """For each of ``names`` imported, the chain of imports that first loaded it, outermost first.

    ``-X importtime`` prints a module when its import ends, indented two spaces per level
    of nesting: its importer is the first line after it that is indented less. A module
    loaded by ``importlib.import_module`` is not printed (only the ``import`` statement is
    timed), so a chain skips it: its imports show under the nearest ``import`` above.
    """
    parsed = [(len(m.group(3)) // 2, m.group(4)) for m in map(_LINE.match, lines) if m]
    chains: dict[str, list[str]] = {}
    for wanted in names:
        # The package itself if it was imported, else its first submodule to be.
        exact = [i for i, (_, name) in enumerate(parsed) if name == wanted]
        inside = [i for i, (_, name) in enumerate(parsed) if name.startswith(wanted + ".")]
        if not exact and not inside:
            continue
        first = (exact or inside)[0]
        depth, name = parsed[first]
        chain = [name]
        for later_depth, later in parsed[first + 1 :]:
            if depth == 0:
                break
            if later_depth < depth:
                chain.append(later)
                depth = later_depth
        chains[wanted] = chain[::-1]
    return chains


def measure(
    runs: int = 5,
    functions: tuple[str, ...] = FUNCTIONS,
    *,
    trees: dict[str, Path] | None = None,
) -> dict[str, dict]:
    """Median import time per function over ``runs`` cold starts, and the heavy modules.

    ``trees`` (label -> source tree) measures several checkouts in turn, run by run, so a
    busy machine weighs on each the same; the default is this one."""
    trees = trees or {"this": PROJECT_DIR}
    out: dict[str, dict] = {}
    with MotoServer() as moto:
        for function in functions:
            times: dict[str, list[float]] = {label: [] for label in trees}
            cpu: dict[str, list[float]] = {label: [] for label in trees}
            modules: dict[str, list[str]] = {}
            chains: dict[str, dict[str, list[str]]] = {}
            for _ in range(runs):
                for label, tree in trees.items():
                    found = probe(function, moto, project_dir=tree)
                    times[label].append(found["import_ms"])
                    cpu[label].append(found["cpu_ms"])
                    modules[label] = found["modules"]
                    chains[label] = found["chains"]
            for label in trees:
                key = function if len(trees) == 1 else f"{function}/{label}"
                out[key] = {
                    "import_ms_median": round(statistics.median(times[label]), 1),
                    "import_ms_runs": [round(t, 1) for t in times[label]],
                    "cpu_ms_median": round(statistics.median(cpu[label]), 1),
                    "heavy": sorted(h for h in HEAVY if h in modules[label]),
                    "modules": len(modules[label]),
                    "chains": chains[label],
                }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Each function's cold import time.")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--compare",
        type=Path,
        default=None,
        metavar="DIR",
        help="another source tree (e.g. a `git archive` of main), measured run by run",
    )
    args = parser.parse_args(argv)
    trees = {"this": PROJECT_DIR, "other": args.compare} if args.compare else None
    result = measure(args.runs, trees=trees)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    for function, found in result.items():
        print(
            f"{function:16} {found['import_ms_median']:8.0f} ms importing, "
            f"{found['cpu_ms_median']:6.0f} ms CPU (medians of {args.runs}), "
            f"{found['modules']} modules, heavy: {', '.join(found['heavy']) or '-'}"
        )
        for heavy, chain in found["chains"].items():
            print(f"{'':16} {heavy}: {' -> '.join(chain)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
