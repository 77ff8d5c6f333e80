"""``make bench``: run the benchmarks, print a table, write ``bench/results.json``.

Environment:

- ``BENCH_QUICK=1``: small numbers and a 2 s heartbeat, for a smoke run (about a
  minute); its results go to ``bench/results.quick.json`` unless ``BENCH_OUT`` is set.
- ``BENCH_ONLY=heartbeat,cost,webhook,standin,lateness,burst,coldstart,moto``: run only these
  sections (``standin``: the fire path's lateness on a stand-in for AWS with a fixed latency
  per call, fed by the fire path's measured CPU and calls, ``bench/standin.py``;
  ``coldstart``: each function's import time on its first call, ``infra/coldstart.py``;
  ``moto``: the embedded AWS's moto patches, stock against patched, ``bench/moto_speed.py``).
- ``BENCH_ONLY=journal``: what the embedded AWS's write-ahead journal costs a write
  (``bench/journal.py``).
- ``BENCH_OUT=path``: where to write the results.

Numbers are medians of repeated runs where a section repeats (see ``repeats`` in each
section's details). The sections that run the local stack (lateness, burst) take minutes
of wall-clock time by nature and run once.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["main", "run", "SECTIONS"]

SECTIONS = (
    "heartbeat",
    "cost",
    "webhook",
    "standin",
    "lateness",
    "burst",
    "coldstart",
    "moto",
    "journal",
)

ROOT = Path(__file__).resolve().parents[1]


def _machine() -> dict:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {
        "platform": platform.platform(),
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "load_avg_at_start": [round(x, 2) for x in load] if load else None,
    }


def _plan(quick: bool) -> dict:
    if quick:
        return {
            "heartbeat": [(200, 1)],
            "heartbeat_enqueue": {"due": 200, "latency_ms": 8.0, "repeats": 1},
            "cost": {"triggers": 10, "ticks": 1, "repeats": 1},
            "webhook": {"triggers": 4, "rounds": 2, "repeats": 1, "http_deliveries": 10},
            "standin": {"triggers": 5, "ticks": 1, "minutes": 2},
            "lateness": {"triggers": 6, "window_s": 4},
            "burst": [(20, 2.0)],
        }
    return {
        # 100,000 registered takes ~1.5 min to write and ~45 s per tick on moto (which
        # scans in Python): 2 repeats there, 5 elsewhere.
        "heartbeat": [(1_000, 5), (10_000, 5), (100_000, 2)],
        # 10,000 fires due within one minute, each AWS call delayed 8 ms (a round trip).
        "heartbeat_enqueue": {"due": 10_000, "latency_ms": 8.0, "repeats": 1},
        "cost": {"triggers": 100, "ticks": 3, "repeats": 3},
        "webhook": {"triggers": 20, "rounds": 10, "repeats": 3, "http_deliveries": 200},
        # The local-stack lateness bench's fleet (480 triggers, 6 minutes), 5 ms a call.
        "standin": {"triggers": 60, "ticks": 3, "minutes": 6, "call_ms": 5.0},
        "lateness": {"triggers": 480, "window_s": 360},  # >= 1,000 fires (bench/lateness.py)
        # (deliveries, seconds, triggers): the 2,000 go to one trigger of concurrency 1.
        "burst": [(200, 10.0, 20), (2_000, 60.0, 1)],
    }


def run(
    *,
    quick: bool = False,
    only: tuple[str, ...] = SECTIONS,
    plan: dict | None = None,
    endpoint: str | None = None,
) -> dict[str, Any]:
    """Run the chosen sections; returns the results (also what goes into the JSON).

    ``plan`` overrides the sizes; ``endpoint`` uses a running moto server (in this
    process) instead of starting one.
    """
    os.environ.setdefault("CRONHOOK_LOG_LEVEL", "WARNING")
    from bench import sections
    from bench.cost import PEERS
    from bench.env import MotoEnv
    from bench.lateness import local_stack

    plan = {**_plan(quick), **(plan or {})}
    results: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "quick": quick,
        "machine": _machine(),
        "peers": PEERS,
        "section_seconds": {},
    }
    env = MotoEnv(endpoint=endpoint) if endpoint else MotoEnv().start()
    try:
        sections.on_moto(env, results, plan=plan, only=only, quick=quick)
    finally:
        if not endpoint:
            env.stop()
    sections.off_moto(results, only=only, quick=quick)
    # Each local-stack section gets a stack of its own (a quick run shares one).
    with local_stack(quick=quick) if quick else contextlib.nullcontext() as shared:
        sections.on_stack(results, plan=plan, only=only, quick=quick, stack=shared)
    return results


# -- the table ----------------------------------------------------------------------------

_ROWS = (
    ("heartbeat_read_ratio", "items read per due trigger (worst size)", "<= 1.1"),
    ("usd_per_million_fires", "$ per million fires (ESM batches of 10)", "<= 2.00"),
    ("usd_per_million_fires_unbatched", "$ per million fires (every fire alone)", ""),
    ("usd_per_million_fires_with_state", "$ per million fires (state written)", ""),
    ("usd_per_million_fires_cron_15m", "$ per million fires (15-minute crons)", ""),
    ("usd_per_million_fires_batched_history_failures", "... history: failures (batches)", ""),
    ("usd_per_million_fires_unbatched_history_failures", "... history: failures (alone)", ""),
    ("usd_per_million_fires_cron_15m_history_failures", "... history: failures (crons)", ""),
    ("usd_per_million_fires_provisioned", "... provisioned at 70 % use (batches)", "<= 1.00"),
    (
        "usd_per_million_fires_provisioned_batched_history_failures",
        "... provisioned, history: failures (batches)",
        "<= 1.00",
    ),
    ("fire_cpu_ms", "runner CPU per fire, ms (this machine)", ""),
    ("fire_aws_calls", "AWS calls per fire", ""),
    ("fire_run_record_bytes", "run record of a fire, bytes", "< 1024"),
    ("usd_per_million_webhooks", "$ per million webhooks (API GW REST)", "<= 7.00"),
    ("webhook_aws_calls_accepted_path", "AWS calls on the accepted webhook path", "<= 3"),
    ("webhook_aws_calls_per_webhook", "AWS calls per webhook run (all)", ""),
    ("webhook_wru_per_webhook", "write units per webhook run", ""),
    ("webhook_api_cpu_ms", "API handler CPU per webhook, ms", ""),
    ("webhook_runner_cpu_ms", "runner CPU per webhook, ms", ""),
    ("webhook_event_item_bytes", "event item, bytes", "< 1024"),
    ("webhook_run_record_bytes", "run record of a webhook, bytes", "< 1024"),
    ("webhook_p50_ms", "webhook accepted, in process, p50 ms", ""),
    ("webhook_p99_ms", "webhook accepted, in process, p99 ms", "<= 50"),
    ("webhook_http_p50_ms", "webhook accepted, local stack HTTP, p50 ms", ""),
    ("webhook_http_p99_ms", "webhook accepted, local stack HTTP, p99 ms", ""),
    ("lateness_p50_ms", "fire start - scheduled, p50 ms", ""),
    ("lateness_p99_ms", "fire start - scheduled, p99 ms", "<= 1000"),
    ("lateness_standin_p99_ms", "... on a 5 ms-a-call stand-in for AWS, p99 ms", "<= 1000"),
    ("journal_added_ms_per_write", "embedded AWS journal: ms added a write, p50", ""),
    ("burst_accepted", "burst: webhooks accepted", ""),
    ("burst_lost", "burst: accepted but never ran", "0"),
    ("burst_duplicated", "burst: ran more than once", "0"),
    ("burst_unfinished", "burst: still queued when measuring stopped", "0"),
    ("burst_drain_s", "burst: last run done after last send, s", ""),
    ("burst_max_concurrency", "burst: most runs at once (ceiling 5)", "<= 5"),
    ("burst_longest_settle_gap_s", "burst: longest time with no run settling, s", "<= 5"),
)


def table(results: dict) -> str:
    """The results as a fixed-width table."""
    lines = [f"{'metric':<34} {'value':>10}  {'target':<8} what", "-" * 100]
    for key, what, target in _ROWS:
        if key in results:
            value = results[key]
            if value is None:
                shown = "n/a"  # none measured (an empty sample)
            else:
                shown = f"{value:,.3f}" if isinstance(value, float) else f"{value:,}"
            lines.append(f"{key:<34} {shown:>10}  {target:<8} {what}")
    for n, row in (results.get("heartbeat") or {}).items():
        lines.append(
            f"  heartbeat {int(n):>7,} registered: ratio {row['read_ratio']}, tick "
            f"{row['tick_ms']:,.0f} ms, {row['claims_per_s']:,.0f} fires sent/s on moto"
        )
    for key in ("heartbeat_enqueue", "heartbeat_enqueue_fanout", "heartbeat_enqueue_first_tick"):
        enqueue = results.get(key)
        if not enqueue:
            continue
        how = "fanned out per shard" if enqueue.get("fanout") else "one invocation"
        if enqueue.get("first_tick"):
            how += ", a new stack's first tick"
        lines.append(
            f"  heartbeat ({how}): {enqueue['due']:,} fires due in a minute, "
            f"{enqueue['latency_ms']} ms per call: {enqueue['ticks']} tick(s), "
            f"{enqueue['wall_ms']:,.0f} ms, {enqueue['cpu_ms_per_fire']} ms CPU per fire "
            f"(moto's included), heartbeat {enqueue.get('heartbeat_cpu_ms_per_fire')} ms and "
            f"enqueuers {enqueue.get('enqueuer_cpu_ms_per_fire')} ms CPU per fire, "
            f"{enqueue['sent_after_their_second']} sent after their second"
        )
    if "usd_per_million_fires" in results:
        peer = results["peers"]["eventbridge_scheduler_plus_lambda_usd_per_million"]
        lines.append(f"  peer: EventBridge Scheduler + Lambda ~ ${peer:.2f} per million fires")
    return "\n".join(lines)


def main() -> None:
    quick = os.environ.get("BENCH_QUICK") == "1"
    only_env = os.environ.get("BENCH_ONLY")
    only = tuple(s.strip() for s in only_env.split(",")) if only_env else SECTIONS
    unknown = set(only) - set(SECTIONS)
    if unknown:
        sys.exit(f"unknown BENCH_ONLY sections: {sorted(unknown)}; known: {SECTIONS}")
    default_out = ROOT / "bench" / ("results.quick.json" if quick else "results.json")
    out = Path(os.environ.get("BENCH_OUT") or default_out)
    results = run(quick=quick, only=only)
    if only != SECTIONS and out.exists():
        # A partial run updates the sections it ran and keeps the others (and says so).
        previous = json.loads(out.read_text())
        seconds = {**previous.get("section_seconds", {}), **results["section_seconds"]}
        reruns = [*previous.get("reruns", []), {"date": results["date"], "only": list(only)}]
        for key in ("date", "machine", "quick"):
            results.pop(key, None)
        previous.update(results)
        previous["section_seconds"] = seconds
        previous["reruns"] = reruns
        results = previous
    out.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    print(table(results))
    print(f"\nwritten: {out}")


if __name__ == "__main__":
    main()
