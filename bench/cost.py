"""usd_per_million_fires: what one scheduled fire costs on AWS, call by call.

A real run on the moto server, every AWS call counted by botocore hooks: the heartbeat
ticks (query, claim, enqueue), the queue is drained the way Lambda's event source
mapping does it (ReceiveMessage up to the batch size, one runner invocation per batch,
DeleteMessageBatch), and the runner starts, runs and settles each fire. The calls made
while creating the triggers are not counted.

Prices: us-east-1 on-demand list prices (see ``PRICES``). Lambda is billed per request
and per GB-second at 128 MB for the measured duration of each invocation, rounded up to
the millisecond (the heartbeat's invocation is shared by the fires of its tick).
"""

from __future__ import annotations

import math
import statistics
import time
from collections import defaultdict
from datetime import UTC, datetime

from bench.calls import Call, CallLog
from bench.env import Clock, MotoEnv

__all__ = ["PRICES", "PEERS", "measure_fire_cost", "price", "register_bench_workflows"]

PRICES = {
    "dynamodb_wru": 0.625 / 1e6,
    "dynamodb_rru": 0.125 / 1e6,
    "sqs_request": 0.40 / 1e6,
    "lambda_request": 0.20 / 1e6,
    "lambda_gb_s": 0.0000166667,
    "lambda_memory_gb": 128 / 1024,
    "apigw_rest_request": 3.50 / 1e6,
    "kms_request": 0.03 / 1e4,
}

# What the peers cost per million, for the table (DESIGN.md "Cost").
PEERS = {
    "eventbridge_scheduler_plus_lambda_usd_per_million": 2.87,
}

T0 = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def register_bench_workflows() -> None:
    """``bench-noop``: runs and returns nothing (no state write), like a bare Lambda target."""
    from chalicelib.workflows import REGISTRY, Result, workflow

    if "bench-noop" not in REGISTRY:

        @workflow("bench-noop")
        def bench_noop(fire):  # noqa: ANN001
            return Result(output={"ok": True})


def lambda_usd(durations_s: list[float]) -> float:
    """Requests plus GB-seconds (128 MB, each invocation rounded up to 1 ms)."""
    gb_s = sum(math.ceil(d * 1000) / 1000 for d in durations_s) * PRICES["lambda_memory_gb"]
    return len(durations_s) * PRICES["lambda_request"] + gb_s * PRICES["lambda_gb_s"]


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


def _one_run(
    env: MotoEnv, *, triggers: int, ticks: int, workflow: str, batch_size: int, state: bool
) -> dict:
    from chalicelib import assembly, wiring
    from chalicelib.services import triggers as trigger_service
    from chalicelib.services.auth import Principal

    env.fresh()
    register_bench_workflows()
    clock = Clock(T0)
    root = Principal("root", "local", "admin")
    runner = assembly.build_runner(clock=clock)
    runner_durations: list[float] = []
    heartbeat_durations: list[float] = []
    fires = 0

    def run_batch(messages: list[dict]) -> None:
        nonlocal fires
        event = {"Records": [_record(m, env.queue_url) for m in messages]}
        started = time.perf_counter()
        answer = wiring.handle_sqs_batch(event, runner=runner)
        runner_durations.append(time.perf_counter() - started)
        assert not answer.get("batchItemFailures"), answer
        fires += len(messages)

    with CallLog() as log:
        with log.pause():
            for _ in range(triggers):
                body = {"workflow": workflow, "schedule": {"interval_s": 60}}
                if state:
                    body["state"] = {"count": 0}
                trigger_service.create_trigger(root, body, now=clock())
            # A warm Lambda: clients built, first calls made.
            clock.advance(60)
            assembly.tick(now=clock())
            env.poll_batches(run_batch, batch_size=batch_size, now=clock())
        fires = 0
        runner_durations.clear()
        log.forget()
        for _ in range(ticks):
            clock.advance(60)
            started = time.perf_counter()
            report = assembly.tick(now=clock())
            heartbeat_durations.append(time.perf_counter() - started)
            # Each tick sends the slots due by now + 60 s: one per trigger (the warm-up
            # tick sent this minute's already).
            assert report.due == triggers and report.enqueued == triggers, report
            env.poll_batches(run_batch, batch_size=batch_size, now=clock())
        # The event source mapping long-polls an idle queue all the time: those empty
        # receives are a fixed cost (see docs/benchmarks.md), not a cost per fire.
        calls = [c for c in log.since() if not _empty_receive(c)]
    assert fires == triggers * ticks, (fires, triggers * ticks)
    bill = price(calls)
    runner_usd = lambda_usd(runner_durations)
    heartbeat_usd = lambda_usd(heartbeat_durations)
    total = bill["usd"] + runner_usd + heartbeat_usd
    per_fire = {
        "dynamodb_wru": sum(c.wru + c.gsi_wru for c in calls if c.service == "dynamodb") / fires,
        "dynamodb_rru": sum(c.rru for c in calls if c.service == "dynamodb") / fires,
        "dynamodb_calls": sum(1 for c in calls if c.service == "dynamodb") / fires,
        "sqs_requests": sum(1 for c in calls if c.service == "sqs") / fires,
        "lambda_invocations": (len(runner_durations) + len(heartbeat_durations)) / fires,
        "runner_ms_per_fire": 1000 * sum(runner_durations) / fires,
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
        "calls_per_fire": len(runner_durations) / fires,
        "usd_per_million": runner_usd / fires * 1e6,
    }
    sites["lambda heartbeat (shared by the tick)"] = {
        "calls_per_fire": len(heartbeat_durations) / fires,
        "usd_per_million": heartbeat_usd / fires * 1e6,
    }
    return {"usd_per_million": total / fires * 1e6, "per_fire": per_fire, "by_site": sites}


def _empty_receive(call: Call) -> bool:
    return call.operation == "ReceiveMessage" and call.items_read == 0


def _record(message: dict, queue_url: str) -> dict:
    from chalicelib.local.stack import _lambda_record

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
) -> dict:
    """Median dollars per million fires over ``repeats`` runs, with the last run's breakdown."""
    runs = [
        _one_run(
            env,
            triggers=triggers,
            ticks=ticks,
            workflow=workflow,
            batch_size=batch_size,
            state=state,
        )
        for _ in range(repeats)
    ]
    median = statistics.median(r["usd_per_million"] for r in runs)
    closest = min(runs, key=lambda r: abs(r["usd_per_million"] - median))
    return {
        "usd_per_million": round(median, 3),
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
    }
