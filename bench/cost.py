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

Prices: us-east-1 on-demand list prices without free tiers (``PRICES``, ``bench/prices.py``,
with the bill itself; ../shared/analysis/aws-prices-limits.md); the log lines are captured
by ``bench/fire_logs.py``. Fixed monthly costs (custom metrics, alarms, the dashboard, the
key, idle long polls) are not per fire and are left out.
"""

from __future__ import annotations

import contextlib
import math
import statistics
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from bench.calls import Call, CallLog, item_size
from bench.env import Clock, MotoEnv
from bench.fire_logs import as_in_lambda, log_bytes, per_fire_logs
from bench.prices import (
    DEPLOYED,
    PEERS,
    PRICES,
    billed_s,
    cut_table,
    deployed_bill,
    lambda_usd,
    peer_bills,
    price,
)

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

T0 = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def register_bench_workflows() -> None:
    """``bench-noop``: runs and returns nothing (no state write), like a bare Lambda target."""
    from chalicelib.workflows import REGISTRY, Result, workflow

    if "bench-noop" not in REGISTRY:

        @workflow("bench-noop")
        def bench_noop(fire):  # noqa: ANN001
            return Result(output={"ok": True})


# --- one measured run ------------------------------------------------------------------------


def _period_minutes(schedule: dict) -> int:
    if schedule.get("interval_s"):
        return max(1, int(schedule["interval_s"]) // 60)
    cron = str(schedule.get("cron", "* * * * *")).split()[0]
    return int(cron.split("/", 1)[1]) if cron.startswith("*/") else 1


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
        with as_in_lambda(compact=True) as (capture, printed):
            for _ in range(ticks * period):
                fleet.minute()
        # The event source mapping long-polls an idle queue all the time: those empty
        # receives are a fixed cost (see docs/benchmarks.md), not a cost per fire.
        calls = [c for c in log.since() if not _empty_receive(c)]
        measured = _summary(fleet, calls, log_bytes(capture, printed))
        # The same fires once more with a line per metric (before the cut), logs only.
        with log.pause():
            fleet.reset()
            with as_in_lambda(compact=False) as (capture, printed):
                for _ in range(period):
                    fleet.minute()
            before = log_bytes(capture, printed)
            invocations = len(fleet.runner_s) + len(fleet.heartbeat_s)
            measured["logs_before_cut"] = per_fire_logs(
                before, fleet.fires, invocations, traced=True
            )
    assert measured["fires"] == triggers * ticks, (measured["fires"], triggers * ticks)
    measured["run_record_bytes"] = _run_record_bytes()
    return measured


def _run_records(calls: list[Call]) -> int:
    """The run records written (``runs`` PutItems): one a fire with full history."""
    from chalicelib.store.tables import table_name

    table = table_name("runs")  # as configured: the stage prefix included
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
        "logs": per_fire_logs(logs, fires, invocations, traced=False),
        "logs_invocations": invocations,
    }


def _run_record_bytes() -> float:
    """The mean size of the run records written, as DynamoDB counts it."""
    from chalicelib.store.aws import client
    from chalicelib.store.tables import table_name

    items = client("dynamodb").scan(TableName=table_name("runs")).get("Items", [])
    return sum(item_size(i) for i in items) / max(1, len(items))


def _empty_receive(call: Call) -> bool:
    return call.operation == "ReceiveMessage" and call.items_read == 0


def _record(message: dict, queue_url: str) -> dict:
    from devstack.stack import _lambda_record

    return _lambda_record(message, queue_url)


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
    return {
        **_median_bill(runs, state=state),
        "triggers": triggers,
        "ticks": ticks,
        "repeats": repeats,
        "workflow": workflow,
        "batch_size": batch_size,
        "schedule": schedule,
        "history": history or "full",
    }


def _median_bill(runs: list[dict], *, state: bool) -> dict:
    """Each run's bill as deployed now; their median, and the breakdown of the run closest
    to it."""
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
    }
