"""usd_per_million_fires: what one scheduled fire costs on AWS as deployed, call by call.

A real run on the moto server, every AWS call counted by botocore hooks: the heartbeat
ticks (query, enqueue), the queue is drained the way Lambda's event source mapping does
it (ReceiveMessage up to the batch size, one runner invocation per batch,
DeleteMessageBatch), and the runner claims, runs and settles each fire. The calls made
while creating the triggers are not counted.

What a deployed fire pays, beside the DynamoDB units and SQS requests counted:

- **Lambda** at the deployed memory (``.chalice/config.json`` through
  ``infra.template.StageConfig``) and architecture (``infra.template.LAMBDA_ARCHITECTURE``),
  for each invocation's duration modelled from its measured CPU time and AWS calls
  (``billed_s``; the wall time here, which moves with load, is reported beside it); the
  heartbeat's invocation is shared by the fires of its tick;
- **CloudWatch Logs**: the bytes of every line the fires wrote, measured (the functions run
  as in Lambda, at the deployed log level, EMF documents included), plus the platform lines
  of each invocation (``PLATFORM_LINE_BYTES``) and 26 bytes of metadata per event;
- **X-Ray**: one trace per invocation when the fire path is traced (``Active``: Lambda
  records the first request of each second and 5 % of the rest, so every invocation below
  one a second); none for scheduled fires with ``PassThrough`` (``FirePathTracing``);
- **run storage and PITR**: the measured run record (plus the ALL-projected ``by_tenant``
  copy), kept ``run_retention_days`` plus the TTL's lag.

Prices: us-east-1 on-demand list prices without free tiers (``PRICES``;
../shared/analysis/aws-prices-limits.md). Fixed monthly costs (custom metrics, alarms, the
dashboard, the key, idle long polls) are not per fire and are left out.
"""

from __future__ import annotations

import contextlib
import io
import logging
import math
import os
import statistics
import time
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from bench.calls import Call, CallLog, item_size
from bench.env import Clock, MotoEnv

__all__ = [
    "PRICES",
    "PEERS",
    "DEPLOYED",
    "measure_fire_cost",
    "price",
    "lambda_usd",
    "deployed_bill",
    "peer_bills",
    "register_bench_workflows",
]

PRICES = {
    "dynamodb_wru": 0.625 / 1e6,
    "dynamodb_rru": 0.125 / 1e6,
    "sqs_request": 0.40 / 1e6,
    "lambda_request": 0.20 / 1e6,
    "lambda_gb_s_x86_64": 0.0000166667,
    "lambda_gb_s_arm64": 0.0000133334,
    "apigw_rest_request": 3.50 / 1e6,
    "kms_request": 0.03 / 1e4,
    "logs_ingested_gb": 0.50,
    "xray_trace": 5.00 / 1e6,
    "dynamodb_storage_gb_month": 0.25,
    "dynamodb_pitr_gb_month": 0.20,
    "scheduler_invocation": 1.00 / 1e6,
    # Provisioned capacity, per unit-hour; a unit is one write (read) a second.
    "dynamodb_wcu_hour": 0.00065,
    "dynamodb_rcu_hour": 0.00013,
}
# The use of provisioned capacity the provisioned figure assumes (autoscaling's target).
PROVISIONED_USE = 0.70

# Lines Lambda writes per invocation (LogFormat Text): START (~75 B), END (~50 B), REPORT
# (~190 B with Init Duration on a cold start, ~160 B warm), and an XRAY line (~110 B) when
# the invocation is traced. CloudWatch bills each event's bytes plus 26 bytes of metadata.
PLATFORM_LINE_BYTES = {"start": 75, "end": 50, "report": 175, "xray": 110}
EVENT_OVERHEAD_BYTES = 26
# DynamoDB stores 100 bytes of overhead per item (and per index entry); TTL deletes an
# expired item within about two days.
ITEM_OVERHEAD_BYTES = 100
TTL_LAG_DAYS = 2
DAYS_PER_MONTH = 30.4375
# Lambda gives one vCPU at 1,769 MB (in proportion below); an in-region DynamoDB or SQS
# call's round trip, for the billed-duration model (``billed_s``).
VCPU_MB = 1769
AWS_CALL_MS = 5.0


def _deployed() -> dict:
    """Memory and architecture of the heartbeat and runner as the template deploys them."""
    from infra.template import LAMBDA_ARCHITECTURE, StageConfig

    memory = StageConfig.load("dev").memory
    return {
        "architecture": LAMBDA_ARCHITECTURE,
        "memory_mb": {f: memory[f] for f in ("runner", "heartbeat", "api_handler")},
        "fire_path_tracing": _template_default("FirePathTracing", "Active"),
    }


def _template_default(name: str, fallback: str) -> str:
    from infra.template import merge_template

    try:
        parameters = merge_template("dev")["Parameters"]
    except Exception:
        return fallback
    return str(parameters.get(name, {}).get("Default", fallback))


DEPLOYED = _deployed()

T0 = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def register_bench_workflows() -> None:
    """``bench-noop``: runs and returns nothing (no state write), like a bare Lambda target."""
    from chalicelib.workflows import REGISTRY, Result, workflow

    if "bench-noop" not in REGISTRY:

        @workflow("bench-noop")
        def bench_noop(fire):  # noqa: ANN001
            return Result(output={"ok": True})


def lambda_usd(
    durations_s: list[float],
    *,
    function: str = "runner",
    architecture: str | None = None,
    memory_mb: int | None = None,
) -> float:
    """Requests plus GB-seconds at ``function``'s deployed memory and architecture (1 ms)."""
    arch = architecture or DEPLOYED["architecture"]
    memory = memory_mb or DEPLOYED["memory_mb"].get(function, 128)
    gb_s = sum(math.ceil(d * 1000) / 1000 for d in durations_s) * memory / 1024
    return len(durations_s) * PRICES["lambda_request"] + gb_s * PRICES[f"lambda_gb_s_{arch}"]


def price(calls: list[Call]) -> dict:
    """The bill of ``calls``: units and dollars, by service and by call site."""
    by_site: dict[str, dict] = defaultdict(
        lambda: {"calls": 0, "wru": 0.0, "rru": 0.0, "sqs_requests": 0, "usd": 0.0}
    )
    total = 0.0
    for c in calls:
        caller = "event source mapping" if c.caller == "env.poll_batches" else c.caller
        site = by_site[f"{c.service} {c.operation} ← {caller}"]
        site["calls"] += 1
        if c.service == "dynamodb":
            usd = (c.wru + c.gsi_wru) * PRICES["dynamodb_wru"] + c.rru * PRICES["dynamodb_rru"]
            site["wru"] += c.wru + c.gsi_wru
            site["rru"] += c.rru
        elif c.service == "sqs":
            usd = PRICES["sqs_request"]
            site["sqs_requests"] += 1
        elif c.service == "kms":
            usd = PRICES["kms_request"]
        else:
            usd = 0.0
        site["usd"] += usd
        total += usd
    return {"usd": total, "by_site": dict(by_site)}


# --- the log lines of a fire -----------------------------------------------------------------


class _LineCapture(logging.Handler):
    """The app logger's lines as its powertools formatter writes them, in bytes per kind."""

    def __init__(self) -> None:
        super().__init__()
        self.bytes: dict[str, int] = defaultdict(int)
        self.events: dict[str, int] = defaultdict(int)

    def emit(self, record: logging.LogRecord) -> None:
        from chalicelib.observability import FIRE_LINE, logger

        line = logger.registered_formatter.format(record)
        kind = "fire line" if record.getMessage() == FIRE_LINE else "other lines"
        if record.getMessage() == "heartbeat":
            kind = "heartbeat lines"
        self.bytes[kind] += len(line.encode())
        self.events[kind] += 1


@contextlib.contextmanager
def _as_in_lambda(*, compact: bool) -> Iterator[tuple[_LineCapture, io.StringIO]]:
    """Log as the deployed functions do (INFO, EMF on); capture instead of printing.

    ``compact`` False takes the fire-line filter off and the batch's gathering of fire
    metrics: each fire metric is then printed as an EMF document of its own, as before
    the cut.
    """
    from chalicelib import observability
    from chalicelib.observability import FIRE_LINE_FILTER, logger

    capture = _LineCapture()
    printed = io.StringIO()
    handler = logger.registered_handler
    stream = getattr(handler, "stream", None)
    level = logger.log_level
    saved = os.environ.get("AWS_LAMBDA_FUNCTION_NAME")
    os.environ["AWS_LAMBDA_FUNCTION_NAME"] = "cronhook-bench-runner"
    logger.setLevel("INFO")
    logger.addHandler(capture)
    if hasattr(handler, "setStream"):
        handler.setStream(io.StringIO())  # the lines are counted by ``capture``
    if not compact:
        logger.removeFilter(FIRE_LINE_FILTER)
        observability.BATCH_FIRE_METRICS = False
    try:
        with contextlib.redirect_stdout(printed):
            yield capture, printed
    finally:
        logger.addFilter(FIRE_LINE_FILTER)
        observability.BATCH_FIRE_METRICS = True
        if stream is not None and hasattr(handler, "setStream"):
            handler.setStream(stream)
        logger.removeHandler(capture)
        logger.setLevel(level)
        if saved is None:
            os.environ.pop("AWS_LAMBDA_FUNCTION_NAME", None)
        else:
            os.environ["AWS_LAMBDA_FUNCTION_NAME"] = saved


def _log_bytes(capture: _LineCapture, printed: io.StringIO) -> dict:
    """Bytes and events written, by kind (EMF documents printed on their own apart)."""
    out = {k: {"bytes": v, "events": capture.events[k]} for k, v in capture.bytes.items()}
    emf = [line for line in printed.getvalue().splitlines() if line.startswith("{")]
    out["emf documents"] = {"bytes": sum(len(x.encode()) for x in emf), "events": len(emf)}
    return out


def _per_fire_logs(measured: dict, fires: int, invocations: int, *, traced: bool) -> dict:
    """Log bytes per fire by kind, platform lines and event overhead included."""
    platform = PLATFORM_LINE_BYTES["start"] + PLATFORM_LINE_BYTES["end"]
    platform += PLATFORM_LINE_BYTES["report"] + (PLATFORM_LINE_BYTES["xray"] if traced else 0)
    rows = {k: v["bytes"] / fires for k, v in measured.items()}
    rows["platform lines (modelled)"] = platform * invocations / fires
    events = sum(v["events"] for v in measured.values()) + invocations * (4 if traced else 3)
    rows["event metadata"] = EVENT_OVERHEAD_BYTES * events / fires
    return {k: round(v, 1) for k, v in rows.items()}


# --- one measured run ------------------------------------------------------------------------


def _period_minutes(schedule: dict) -> int:
    if schedule.get("interval_s"):
        return max(1, int(schedule["interval_s"]) // 60)
    cron = str(schedule.get("cron", "* * * * *")).split()[0]
    return int(cron.split("/", 1)[1]) if cron.startswith("*/") else 1


def billed_s(cpu_s: float, aws_calls: int, *, function: str) -> float:
    """An invocation's duration on Lambda, modelled from what it did here.

    Its CPU time (this thread's: the moto server's threads excluded) stretched by the
    share of a vCPU the deployed memory buys (1,769 MB is one vCPU), plus
    ``AWS_CALL_MS`` per AWS call it made. Wall time here moves with the machine's load and
    includes moto's own work; this does not.
    """
    share = min(1.0, DEPLOYED["memory_mb"].get(function, 128) / VCPU_MB)
    return cpu_s / share + aws_calls * AWS_CALL_MS / 1000


class _Fleet:
    """The triggers of one run, the runner, and what their invocations took."""

    def __init__(self, env: MotoEnv, log: CallLog, *, batch_size: int) -> None:
        from chalicelib import assembly

        self.env, self.log, self.batch_size = env, log, batch_size
        self.clock = Clock(T0)
        self.runner = assembly.build_runner(clock=self.clock)
        self.runner_s: list[float] = []
        self.heartbeat_s: list[float] = []
        self.runner_wall_s: list[float] = []
        self.heartbeat_wall_s: list[float] = []
        self.runner_cpu_s: list[float] = []
        self.heartbeat_cpu_s: list[float] = []
        self.fires = 0

    @contextlib.contextmanager
    def _invocation(self, function: str, *, threads: int = 1) -> Iterator[None]:
        mark, cpu, wall = self.log.mark(), time.thread_time(), time.perf_counter()
        yield
        calls = len(self.log.since(mark))
        used = time.thread_time() - cpu
        # A batch's messages run on threads of their own in Lambda, so their calls'
        # round trips overlap: each thread waits for its own (``threads`` of them).
        billed = billed_s(used, math.ceil(calls / threads), function=function)
        if function == "runner":
            self.runner_s.append(billed)
            self.runner_cpu_s.append(used)
            self.runner_wall_s.append(time.perf_counter() - wall)
        else:
            self.heartbeat_s.append(billed)
            self.heartbeat_cpu_s.append(used)
            self.heartbeat_wall_s.append(time.perf_counter() - wall)

    def create(
        self, n: int, *, workflow: str, schedule: dict, state: bool, history: str | None = None
    ) -> None:
        from chalicelib.services import triggers as trigger_service
        from chalicelib.services.auth import Principal

        root = Principal("root", "local", "admin")
        for _ in range(n):
            body: dict[str, Any] = {"workflow": workflow, "schedule": schedule}
            if history is not None:
                body["history"] = history
            if state:
                body["state"] = {"count": 0}
            trigger_service.create_trigger(root, body, now=self.clock())

    def _run_batch(self, messages: list[dict]) -> None:
        from chalicelib import wiring

        event = {"Records": [_record(m, self.env.queue_url) for m in messages]}
        # One thread here (concurrency 1), so that this thread's CPU time is the whole
        # batch's: Lambda runs them on threads, which the billed duration models.
        with self._invocation("runner", threads=len(messages)):
            answer = wiring.handle_sqs_batch(event, runner=self.runner, concurrency=1)
        assert not answer.get("batchItemFailures"), answer
        self.fires += len(messages)

    def minute(self) -> int:
        """One heartbeat tick a minute later, and the queue drained; the fires it sent."""
        from chalicelib import assembly

        self.clock.advance(60)
        with self._invocation("heartbeat"):
            report = assembly.tick(now=self.clock())
        self.env.poll_batches(self._run_batch, batch_size=self.batch_size, now=self.clock())
        return int(report.enqueued)

    def reset(self) -> None:
        for durations in (
            self.runner_s,
            self.heartbeat_s,
            self.runner_wall_s,
            self.heartbeat_wall_s,
            self.runner_cpu_s,
            self.heartbeat_cpu_s,
        ):
            durations.clear()
        self.fires = 0


def _one_run(
    env: MotoEnv,
    *,
    triggers: int,
    ticks: int,
    workflow: str,
    batch_size: int,
    state: bool,
    schedule: dict,
    history: str | None = None,
) -> dict:
    env.fresh()
    register_bench_workflows()
    period = _period_minutes(schedule)
    with CallLog() as log:
        fleet = _Fleet(env, log, batch_size=batch_size)
        with log.pause():
            fleet.create(
                triggers, workflow=workflow, schedule=schedule, state=state, history=history
            )
            # A warm Lambda: clients built, first calls made, and each trigger's first
            # fire, which stands its row (rules.stands). Two minutes at least: a 1-minute
            # schedule's second slot went out keyed before the row stood, and its claim
            # fails once on the keyed fence (a cost per trigger, not per fire).
            for _ in range(max(2, period)):
                fleet.minute()
        fleet.reset()
        log.forget()
        with _as_in_lambda(compact=True) as (capture, printed):
            for _ in range(ticks * period):
                fleet.minute()
        # The event source mapping long-polls an idle queue all the time: those empty
        # receives are a fixed cost (see docs/benchmarks.md), not a cost per fire.
        calls = [c for c in log.since() if not _empty_receive(c)]
        measured = _summary(fleet, calls, _log_bytes(capture, printed))
        # The same fires once more with a line per metric (before the cut), logs only.
        with log.pause():
            fleet.reset()
            with _as_in_lambda(compact=False) as (capture, printed):
                for _ in range(period):
                    fleet.minute()
            before = _log_bytes(capture, printed)
            invocations = len(fleet.runner_s) + len(fleet.heartbeat_s)
            measured["logs_before_cut"] = _per_fire_logs(
                before, fleet.fires, invocations, traced=True
            )
    assert measured["fires"] == triggers * ticks, (measured["fires"], triggers * ticks)
    measured["run_record_bytes"] = _run_record_bytes()
    return measured


def _run_records(calls: list[Call]) -> int:
    """The run records written (``runs`` PutItems): one a fire with full history."""
    from chalicelib.store.runs import RunModel

    table = RunModel.Meta.table_name  # as configured: the stage prefix included
    return sum(1 for c in calls if c.operation == "PutItem" and c.table == table)


def _summary(fleet: _Fleet, calls: list[Call], logs: dict) -> dict:
    fires = fleet.fires
    bill = price(calls)
    runner_usd = lambda_usd(fleet.runner_s, function="runner")
    heartbeat_usd = lambda_usd(fleet.heartbeat_s, function="heartbeat")
    dynamo = [c for c in calls if c.service == "dynamodb"]
    per_fire = {
        "dynamodb_wru": sum(c.wru + c.gsi_wru for c in dynamo) / fires,
        "dynamodb_rru": sum(c.rru for c in dynamo) / fires,
        "dynamodb_calls": len(dynamo) / fires,
        "run_records": _run_records(calls) / fires,
        "state_reads": sum(1 for c in dynamo if c.caller.endswith("get_state")) / fires,
        "state_read_rru": sum(c.rru for c in dynamo if c.caller.endswith("get_state")) / fires,
        "sqs_requests": sum(1 for c in calls if c.service == "sqs") / fires,
        "lambda_invocations": (len(fleet.runner_s) + len(fleet.heartbeat_s)) / fires,
        "runner_invocations": len(fleet.runner_s) / fires,
        "heartbeat_invocations": len(fleet.heartbeat_s) / fires,
        "runner_ms_per_fire": 1000 * sum(fleet.runner_s) / fires,
        "heartbeat_ms_per_fire": 1000 * sum(fleet.heartbeat_s) / fires,
        "runner_cpu_ms_per_fire": 1000 * sum(fleet.runner_cpu_s) / fires,
        "heartbeat_cpu_ms_per_fire": 1000 * sum(fleet.heartbeat_cpu_s) / fires,
        "aws_calls_per_fire": len(calls) / fires,
        "runner_wall_ms_per_fire": 1000 * sum(fleet.runner_wall_s) / fires,
        "heartbeat_wall_ms_per_fire": 1000 * sum(fleet.heartbeat_wall_s) / fires,
    }
    sites = {
        site: {
            "calls_per_fire": row["calls"] / fires,
            "wru_per_fire": row["wru"] / fires,
            "rru_per_fire": row["rru"] / fires,
            "usd_per_million": row["usd"] / fires * 1e6,
        }
        for site, row in bill["by_site"].items()
    }
    sites["lambda runner (requests + GB-s)"] = {
        "calls_per_fire": len(fleet.runner_s) / fires,
        "usd_per_million": runner_usd / fires * 1e6,
    }
    sites["lambda heartbeat (shared by the tick)"] = {
        "calls_per_fire": len(fleet.heartbeat_s) / fires,
        "usd_per_million": heartbeat_usd / fires * 1e6,
    }
    total = bill["usd"] + runner_usd + heartbeat_usd
    invocations = len(fleet.runner_s) + len(fleet.heartbeat_s)
    return {
        "usd_per_million": total / fires * 1e6,
        "aws_calls_usd_per_million": bill["usd"] / fires * 1e6,
        "per_fire": per_fire,
        "by_site": sites,
        "fires": fires,
        "logs": _per_fire_logs(logs, fires, invocations, traced=False),
        "logs_invocations": invocations,
    }


def _run_record_bytes() -> float:
    """The mean size of the run records written, as DynamoDB counts it."""
    from chalicelib.store.aws import client
    from chalicelib.store.runs import RunModel

    items = client("dynamodb").scan(TableName=RunModel.Meta.table_name).get("Items", [])
    return sum(item_size(i) for i in items) / max(1, len(items))


def _empty_receive(call: Call) -> bool:
    return call.operation == "ReceiveMessage" and call.items_read == 0


def _record(message: dict, queue_url: str) -> dict:
    from devstack.stack import _lambda_record

    return _lambda_record(message, queue_url)


# --- the deployed bill -----------------------------------------------------------------------

# The cuts, in the order they are applied: each row of a fleet's table adds one.
CUTS = (
    ("as deployed before the cuts", {}),
    ("+ one compact log line per fire, its metrics printed once a batch", {"compact_logs": True}),
    ("+ X-Ray only when sampled upstream (fire path PassThrough)", {"tracing": "PassThrough"}),
    ("+ no state read for a trigger without state", {"state_read": False}),
)
BEFORE = {"compact_logs": False, "tracing": "Active", "state_read": True}


def _run_months() -> float:
    from chalicelib.settings import get_settings

    return (get_settings().run_retention_days + TTL_LAG_DAYS) / DAYS_PER_MONTH


def deployed_bill(
    measured: dict,
    *,
    compact_logs: bool = True,
    tracing: str = "PassThrough",
    state_read: bool = True,
    architecture: str | None = None,
    stateless: bool = True,
    provisioned: bool = False,
) -> dict:
    """Dollars per million fires, line by line, for a measured run under a configuration.

    ``state_read`` False drops the state read of a trigger without state (``stateless``):
    what ``store.state_of`` saves once the runner calls it. ``provisioned``: DynamoDB
    reads and writes on provisioned capacity used at ``PROVISIONED_USE`` (a unit-hour
    serves 3,600 units, of which that share is used), not on-demand.
    """
    per = measured["per_fire"]
    arch = architecture or DEPLOYED["architecture"]
    gb_s = PRICES[f"lambda_gb_s_{arch}"]
    memory = DEPLOYED["memory_mb"]
    rru = per["dynamodb_rru"] - (0 if state_read or not stateless else per["state_read_rru"])
    logs = measured["logs"] if compact_logs else measured["logs_before_cut"]
    log_bytes = sum(logs.values())
    if compact_logs and tracing == "Active":  # the XRAY platform line comes back
        log_bytes += PLATFORM_LINE_BYTES["xray"] * per["lambda_invocations"]
    if not compact_logs and tracing != "Active":
        log_bytes -= PLATFORM_LINE_BYTES["xray"] * per["lambda_invocations"]
    # Storage is paid per record kept: one a fire, or fewer with ``history: failures``.
    records = per.get("run_records", 1.0)
    run_bytes = records * (measured["run_record_bytes"] + ITEM_OVERHEAD_BYTES)
    months = _run_months()
    wru_usd, rru_usd = PRICES["dynamodb_wru"], PRICES["dynamodb_rru"]
    if provisioned:
        wru_usd = PRICES["dynamodb_wcu_hour"] / (3600 * PROVISIONED_USE)
        rru_usd = PRICES["dynamodb_rcu_hour"] / (3600 * PROVISIONED_USE)
    lines = {
        "DynamoDB writes": per["dynamodb_wru"] * wru_usd,
        "DynamoDB reads": rru * rru_usd,
        "SQS requests": per["sqs_requests"] * PRICES["sqs_request"],
        "Lambda runner": per["runner_invocations"] * PRICES["lambda_request"]
        + per["runner_ms_per_fire"] / 1000 * memory["runner"] / 1024 * gb_s,
        "Lambda heartbeat": per["heartbeat_invocations"] * PRICES["lambda_request"]
        + per["heartbeat_ms_per_fire"] / 1000 * memory["heartbeat"] / 1024 * gb_s,
        "CloudWatch Logs (EMF included)": log_bytes / 1e9 * PRICES["logs_ingested_gb"],
        "X-Ray traces": (per["lambda_invocations"] if tracing == "Active" else 0)
        * PRICES["xray_trace"],
        # The item and its copy in the ALL-projected by_tenant index, kept until TTL.
        "run storage": 2 * run_bytes / 1e9 * months * PRICES["dynamodb_storage_gb_month"],
        "PITR (runs table)": run_bytes / 1e9 * months * PRICES["dynamodb_pitr_gb_month"],
    }
    usd = {k: round(v * 1e6, 4) for k, v in lines.items()}
    return {
        "usd_per_million": round(sum(usd.values()), 3),
        "lines": usd,
        "log_bytes_per_fire": round(log_bytes, 1),
    }


def cut_table(measured: dict, *, stateless: bool = True) -> list[dict]:
    """The deployed $/M before the cuts and after each one (cumulative)."""
    rows, config = [], dict(BEFORE)
    for name, change in CUTS:
        config.update(change)
        bill = deployed_bill(measured, stateless=stateless, **config)
        rows.append({"cut": name, **bill})
    x86 = deployed_bill(measured, stateless=stateless, architecture="x86_64", **config)
    rows.append({"cut": "(reference: the same on x86_64)", **x86})
    return rows


def peer_bills(*, runner_ms: float = 50.0, memory_mb: int = 128) -> dict:
    """EventBridge Scheduler invoking a Lambda per fire, with and without a history write.

    The Lambda: ``runner_ms`` at ``memory_mb`` on arm64, its platform log lines, no X-Ray.
    The history write: one PutItem of a 300-byte record (1 WRU, no index), kept as long as
    ours, with PITR. List prices, no free tier (Scheduler's first 14M a month are free).
    """
    lam = (
        PRICES["lambda_request"] + runner_ms / 1000 * memory_mb / 1024 * PRICES["lambda_gb_s_arm64"]
    )
    platform = sum(v for k, v in PLATFORM_LINE_BYTES.items() if k != "xray")
    logs = (platform + 3 * EVENT_OVERHEAD_BYTES) / 1e9 * PRICES["logs_ingested_gb"]
    base = PRICES["scheduler_invocation"] + lam + logs
    record = (300 + ITEM_OVERHEAD_BYTES) / 1e9 * _run_months()
    history = PRICES["dynamodb_wru"] + record * (
        PRICES["dynamodb_storage_gb_month"] + PRICES["dynamodb_pitr_gb_month"]
    )
    return {
        "eventbridge_scheduler_plus_lambda_usd_per_million": round(base * 1e6, 3),
        "eventbridge_scheduler_plus_lambda_with_history_usd_per_million": round(
            (base + history) * 1e6, 3
        ),
        "assumptions": f"Lambda {runner_ms:g} ms at {memory_mb} MB arm64; history 1 WRU",
    }


PEERS = peer_bills()


def measure_fire_cost(
    env: MotoEnv,
    *,
    triggers: int = 100,
    ticks: int = 3,
    repeats: int = 3,
    workflow: str = "bench-noop",
    batch_size: int = 10,
    state: bool = False,
    schedule: dict | None = None,
    history: str | None = None,
) -> dict:
    """Median dollars per million fires over ``repeats`` runs, with the last run's breakdown.

    ``ticks`` counts the fires of each trigger (a 15-minute cron's take 15 ticks each).
    ``usd_per_million`` is all-in as deployed (``deployed_bill`` with the template's
    tracing and the calls the code makes now); ``deployed.cuts`` shows it before the cuts
    and after each; ``usd_per_million_calls_and_lambda`` is the AWS calls and Lambda alone.
    """
    schedule = schedule or {"interval_s": 60}
    runs = [
        _one_run(
            env,
            triggers=triggers,
            ticks=ticks,
            workflow=workflow,
            batch_size=batch_size,
            state=state,
            schedule=schedule,
            history=history,
        )
        for _ in range(repeats)
    ]
    for r in runs:
        r["deployed_now"] = deployed_bill(
            r, tracing=DEPLOYED["fire_path_tracing"], stateless=not state
        )
    median = statistics.median(r["deployed_now"]["usd_per_million"] for r in runs)
    closest = min(runs, key=lambda r: abs(r["deployed_now"]["usd_per_million"] - median))
    return {
        "usd_per_million": round(median, 3),
        "usd_per_million_calls_and_lambda": round(closest["usd_per_million"], 3),
        "usd_per_million_provisioned": deployed_bill(
            closest, tracing=DEPLOYED["fire_path_tracing"], stateless=not state, provisioned=True
        )["usd_per_million"],
        "deployed": {
            "now": closest["deployed_now"],
            "cuts": cut_table(closest, stateless=not state),
            "logs_bytes_per_fire": closest["logs"],
            "logs_bytes_per_fire_before_cut": closest["logs_before_cut"],
            "run_record_bytes": round(closest["run_record_bytes"], 1),
            "config": DEPLOYED,
        },
        "per_fire": {k: round(v, 3) for k, v in closest["per_fire"].items()},
        "by_site": {
            site: {k: round(v, 4) for k, v in row.items()}
            for site, row in closest["by_site"].items()
        },
        "triggers": triggers,
        "ticks": ticks,
        "repeats": repeats,
        "workflow": workflow,
        "batch_size": batch_size,
        "schedule": schedule,
        "history": history or "full",
    }
