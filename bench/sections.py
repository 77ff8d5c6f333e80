"""The sections of ``make bench`` (``bench/run.py``): each measures, and writes its figures
into the results with the whole seconds it took (``section_seconds``).

- ``on_moto``: the sections that run against the moto server (heartbeat, cost, webhook in
  process, standin, moto), in that order;
- ``off_moto``: the ones that need no AWS of the bench's (journal, coldstart);
- ``on_stack``: the ones that run the local stack (webhook over HTTP, lateness, burst).
"""

from __future__ import annotations

import contextlib
import statistics
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from bench.cost import measure_fire_cost
from bench.env import MotoEnv
from bench.heartbeat import measure_enqueue, measure_read_ratio
from bench.lateness import measure_lateness
from bench.webhooks import measure_burst, measure_http, measure_webhook_inprocess

__all__ = ["COST_VARIANTS", "WEBHOOK_COUNTS", "on_moto", "off_moto", "on_stack"]

# The fire cost, four ways: the event source mapping's batches of 10 (fires that come
# due together), every fire alone (sparse schedules), a workflow that writes state, and
# 15-minute crons; and three of them again with the cheaper run history.
COST_VARIANTS = {
    "batched": {},
    "unbatched": {"batch_size": 1},
    "with_state": {"workflow": "echo", "state": True},
    "cron_15m": {"schedule": {"cron": "*/15 * * * *"}},
    # The same three shapes with ``history: failures`` (no run record of a success).
    "batched_history_failures": {"history": "failures"},
    "unbatched_history_failures": {"batch_size": 1, "history": "failures"},
    "cron_15m_history_failures": {"schedule": {"cron": "*/15 * * * *"}, "history": "failures"},
}
# Deterministic measures of the webhook path (counts, CPU time, item sizes), medians.
WEBHOOK_COUNTS = (
    "webhook_aws_calls_accepted_path",
    "webhook_aws_calls_per_webhook",
    "webhook_wru_per_webhook",
    "webhook_rru_per_webhook",
    "webhook_api_cpu_ms",
    "webhook_runner_cpu_ms",
    "webhook_event_item_bytes",
    "webhook_run_record_bytes",
)


def _progress(text: str) -> None:
    print(f"[bench {datetime.now().strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def _median_of(runs: list[dict], key: str) -> float:
    return round(statistics.median(r[key] for r in runs), 3)


@contextlib.contextmanager
def _timed(results: dict, section: str) -> Iterator[None]:
    """A section's whole seconds, into ``results["section_seconds"]`` once it is done."""
    started = time.time()
    yield
    results["section_seconds"][section] = round(time.time() - started)


def on_moto(env: MotoEnv, results: dict, *, plan: dict, only: tuple, quick: bool) -> None:
    """The chosen sections that run against the moto server ``env``."""
    if "heartbeat" in only:
        _heartbeat(env, results, plan)
    if "cost" in only:
        _cost(env, results, plan["cost"])
    if "webhook" in only and plan["webhook"]["repeats"]:
        _webhook(env, results, plan["webhook"])
    if "standin" in only:
        _standin(env, results, plan["standin"])
    if "moto" in only:
        _moto(env, results, quick=quick)


def off_moto(results: dict, *, only: tuple, quick: bool) -> None:
    """The chosen sections that need no moto server of the bench's."""
    if "journal" in only:
        _journal(results, quick=quick)
    if "coldstart" in only:
        _coldstart(results, quick=quick)


def on_stack(results: dict, *, plan: dict, only: tuple, quick: bool, stack: Any) -> None:
    """The chosen sections that run the local stack: ``stack``, or one of their own each."""
    if "webhook" in only and plan["webhook"].get("http_deliveries"):
        _webhook_http(results, plan["webhook"]["http_deliveries"], quick=quick, stack=stack)
    if "lateness" in only:
        _lateness(results, plan["lateness"], quick=quick, stack=stack)
    if "burst" in only:
        _burst(results, plan["burst"], quick=quick, stack=stack)


# -- against the moto server ----------------------------------------------------------------


def _heartbeat(env: MotoEnv, results: dict, plan: dict) -> None:
    _progress("heartbeat read ratio")
    with _timed(results, "heartbeat"):
        rows = [measure_read_ratio(env, registered=n, repeats=r) for n, r in plan["heartbeat"]]
        results["heartbeat"] = {str(row["registered"]): row for row in rows}
        results["heartbeat_read_ratio"] = max(row["read_ratio"] for row in rows)
        results["heartbeat_read_ratio_by_registered"] = {
            str(row["registered"]): row["read_ratio"] for row in rows
        }
        _progress("heartbeat enqueue of a minute's fires")
        results["heartbeat_enqueue"] = measure_enqueue(env, **plan["heartbeat_enqueue"])
        _progress("heartbeat enqueue of a minute's fires, fanned out per shard")
        results["heartbeat_enqueue_fanout"] = measure_enqueue(
            env, **plan["heartbeat_enqueue"], fanout=True
        )
        _progress("heartbeat enqueue of a minute's fires, a new stack's first tick")
        results["heartbeat_enqueue_first_tick"] = measure_enqueue(
            env, **plan["heartbeat_enqueue"], first_tick=True
        )


def _cost(env: MotoEnv, results: dict, plan: dict) -> None:
    _progress("cost per fire")
    with _timed(results, "cost"):
        p = dict(plan)
        variants = p.pop("variants", tuple(COST_VARIANTS))
        results["fire_cost"] = {}
        for name in variants:
            measured = measure_fire_cost(env, **p, **COST_VARIANTS[name])
            results["fire_cost"][name] = measured
            key = "usd_per_million_fires" + ("" if name == "batched" else f"_{name}")
            results[key] = measured["usd_per_million"]
            results[key.replace("fires", "fires_provisioned", 1)] = measured[
                "usd_per_million_provisioned"
            ]
        if "batched" in results["fire_cost"]:
            batched = results["fire_cost"]["batched"]
            results["fire_cpu_ms"] = batched["per_fire"]["runner_cpu_ms_per_fire"]
            results["fire_aws_calls"] = batched["per_fire"]["aws_calls_per_fire"]
            results["fire_run_record_bytes"] = batched["deployed"]["run_record_bytes"]


def _webhook(env: MotoEnv, results: dict, p: dict) -> None:
    _progress("webhooks in process")
    with _timed(results, "webhook"):
        runs = [
            measure_webhook_inprocess(env, triggers=p["triggers"], rounds=p["rounds"])
            for _ in range(p["repeats"])
        ]
        for key in (
            "webhook_p50_ms",
            "webhook_p99_ms",
            "usd_per_million_webhooks",
            *WEBHOOK_COUNTS,
        ):
            results[key] = _median_of(runs, key)
        results["webhook_cost_by_site"] = runs[-1]["webhook_cost_by_site"]
        results["webhook_inprocess_runs"] = [
            {k: v for k, v in r.items() if k != "webhook_cost_by_site"} for r in runs
        ]


def _standin(env: MotoEnv, results: dict, plan: dict) -> None:
    from bench.standin import lateness_on_standin

    _progress("fire lateness on a fixed-latency stand-in for AWS")
    with _timed(results, "standin"):
        results["lateness_standin"] = lateness_on_standin(env, **plan)
        results["lateness_standin_p99_ms"] = results["lateness_standin"]["p99_ms"]


def _moto(env: MotoEnv, results: dict, *, quick: bool) -> None:
    from bench.moto_speed import measure_moto_speed

    _progress("the embedded AWS's moto patches, stock and patched")
    with _timed(results, "moto"):
        results["moto_speed"] = measure_moto_speed(env, quick=quick)


# -- without it -----------------------------------------------------------------------------


def _journal(results: dict, *, quick: bool) -> None:
    from bench.journal import measure_journal_cost

    _progress("the embedded AWS's journal: a write's cost without and with it")
    with _timed(results, "journal"):
        results["journal"] = measure_journal_cost(quick=quick)
        results["journal_added_ms_per_write"] = results["journal"]["added_ms_per_write_p50"]


def _coldstart(results: dict, *, quick: bool) -> None:
    from infra.coldstart import measure as measure_coldstart

    _progress("cold start: import time per function")
    with _timed(results, "coldstart"):
        results["coldstart"] = measure_coldstart(runs=1 if quick else 5)
        results["coldstart_import_ms"] = {
            f: r["import_ms_median"] for f, r in results["coldstart"].items()
        }


# -- in the local stack ---------------------------------------------------------------------


def _webhook_http(results: dict, deliveries: int, *, quick: bool, stack: Any) -> None:
    _progress("webhooks over HTTP")
    with _timed(results, "webhook_http"):
        results.update(measure_http(deliveries=deliveries, quick=quick, stack=stack))


def _lateness(results: dict, plan: dict, *, quick: bool, stack: Any) -> None:
    _progress("lateness in the local stack (a few minutes)")
    with _timed(results, "lateness"):
        late = measure_lateness(**plan, quick=quick, stack=stack)
        results["lateness_p50_ms"] = late["lateness_p50_ms"]
        results["lateness_p99_ms"] = late["lateness_p99_ms"]
        results["lateness"] = late


def _burst(results: dict, plan: list, *, quick: bool, stack: Any) -> None:
    _progress("bursts over HTTP")
    with _timed(results, "burst"):
        bursts = {
            f"{n}_in_{int(s)}s" + ("_one_trigger" if t[:1] == (1,) else ""): measure_burst(
                deliveries=n, seconds=s, triggers=(t or (20,))[0], quick=quick, stack=stack
            )
            for n, s, *t in plan
        }
        results["burst"] = bursts
        results["burst_accepted"] = sum(b["accepted"] for b in bursts.values())
        results["burst_lost"] = sum(b["lost"] for b in bursts.values())
        results["burst_duplicated"] = sum(b["duplicated"] for b in bursts.values())
        results["burst_unfinished"] = sum(b["unfinished_at_cap"] for b in bursts.values())
        results["burst_drain_s"] = max(b["drain_s"] for b in bursts.values())
        results["burst_max_concurrency"] = max(b["max_concurrency"] for b in bursts.values())
        results["burst_longest_settle_gap_s"] = max(
            b["longest_settle_gap_s"] for b in bursts.values()
        )
