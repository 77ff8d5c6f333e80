"""``python -m bench.report [results.json]``: the results as Markdown tables, for
docs/benchmarks.md (the narrative around them is written by hand)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

__all__ = ["markdown"]

ROOT = Path(__file__).resolve().parents[1]


def _money(value: float | None) -> str:
    return "" if value is None else f"${value:,.3f}"


def _cost_rows(by_site: dict, unit: str) -> list[str]:
    rows = [
        f"| call (← code) | calls per {unit} | WRU | RRU | $ per million |",
        "|---|---:|---:|---:|---:|",
    ]
    ordered = sorted(by_site.items(), key=lambda kv: -kv[1].get("usd_per_million", 0))
    for site, row in ordered:
        calls = row.get(f"calls_per_{unit}", 0)
        wru = row.get(f"wru_per_{unit}")
        rru = row.get(f"rru_per_{unit}")
        rows.append(
            f"| {site} | {calls:g} | {'' if wru is None else f'{wru:g}'} | "
            f"{'' if rru is None else f'{rru:g}'} | {row['usd_per_million']:.3f} |"
        )
    return rows


# The fleet shapes of the cost section, as the tables name them.
SHAPES = {
    "batched": "1-minute interval (full batches of 10)",
    "unbatched": "sparse: one fire per invocation",
    "with_state": "1-minute interval, a workflow that writes state",
    "cron_15m": "15-minute cron",
    "batched_history_failures": "1-minute interval, `history: failures`",
    "unbatched_history_failures": "sparse, `history: failures`",
    "cron_15m_history_failures": "15-minute cron, `history: failures`",
}


def _deployed_rows(deployed: dict) -> list[str]:
    """Before the cuts and after each (cumulative), line by line."""
    rows = [
        "| configuration | $ per million | DynamoDB | SQS | Lambda | Logs (B/fire) | X-Ray "
        "| run storage + PITR |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in deployed["cuts"]:
        lines = row["lines"]
        dynamo = lines["DynamoDB writes"] + lines["DynamoDB reads"]
        lam = lines["Lambda runner"] + lines["Lambda heartbeat"]
        storage = lines["run storage"] + lines["PITR (runs table)"]
        rows.append(
            f"| {row['cut']} | **{row['usd_per_million']:.2f}** | {dynamo:.2f} | "
            f"{lines['SQS requests']:.2f} | {lam:.2f} | "
            f"{lines['CloudWatch Logs (EMF included)']:.2f} ({row['log_bytes_per_fire']:,.0f}) | "
            f"{lines['X-Ray traces']:.2f} | {storage:.2f} |"
        )
    return rows


def deployed_summary(results: dict) -> list[str]:
    """One row per fleet shape: all-in as deployed, before and after the cuts."""
    costs = results.get("fire_cost") or {}
    if not costs:
        return []
    rows = [
        "| fleet | before the cuts | as deployed now | after every cut | provisioned, 70 % use |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, measured in costs.items():
        deployed = measured.get("deployed")
        if not deployed:
            continue
        cuts = deployed["cuts"]
        rows.append(
            f"| {SHAPES.get(name, name)} | {_money(cuts[0]['usd_per_million'])} | "
            f"**{_money(measured['usd_per_million'])}** | {_money(cuts[-2]['usd_per_million'])} | "
            f"{_money(measured.get('usd_per_million_provisioned'))} |"
        )
    peers = results.get("peers") or {}
    for key, label in (
        ("eventbridge_scheduler_plus_lambda_usd_per_million", "EventBridge Scheduler + Lambda"),
        (
            "eventbridge_scheduler_plus_lambda_with_history_usd_per_million",
            "EventBridge Scheduler + Lambda + a history write",
        ),
    ):
        if key in peers:
            rows.append(
                f"| {label} ({peers.get('assumptions', '')}) | | {_money(peers[key])} | | |"
            )
    return rows


def markdown(results: dict) -> str:
    """The tables of one run."""
    out = _run_lines(results)
    out += _heartbeat_rows(results)
    for name, measured in (results.get("fire_cost") or {}).items():
        out += _fire_cost_lines(name, measured)
    summary = deployed_summary(results)
    if summary:
        out += ["**All-in as deployed, per fleet shape** ($ per million fires):", "", *summary, ""]
    out += _webhook_lines(results)
    out += _lateness_lines(results.get("lateness"))
    out += _burst_rows(results.get("burst"))
    return "\n".join(out)


def _run_lines(results: dict) -> list[str]:
    """When and where the run was, and what was re-run since."""
    out: list[str] = []
    machine = results.get("machine", {})
    out.append(
        f"Run of {results.get('date')} on {machine.get('cpu')} × {machine.get('cpus')} "
        f"CPUs, {machine.get('platform')}, Python {machine.get('python')}; load average at "
        f"start {machine.get('load_avg_at_start')}. Sections took "
        f"{results.get('section_seconds')} seconds."
    )
    for rerun in results.get("reruns", []):
        out.append(f"Re-run on {rerun['date']}: {', '.join(rerun['only'])}.")
    out.append("")
    return out


def _heartbeat_rows(results: dict) -> list[str]:
    """The read ratio per fleet size."""
    if "heartbeat" not in results:
        return []
    out = [
        "| registered | due | items read | read ratio | tick (moto) | claims/s (moto) | repeats |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in results["heartbeat"].values():
        out.append(
            f"| {row['registered']:,} | {row['due']:,} | {row['items_read']:,} | "
            f"{row['read_ratio']} | {row['tick_ms']:,.0f} ms | {row['claims_per_s']:,.0f} | "
            f"{row['repeats']} |"
        )
    out.append("")
    return out


def _fire_cost_lines(name: str, measured: dict) -> list[str]:
    """One fleet shape's fire cost: per fire, by call site, and as deployed."""
    out: list[str] = []
    per = measured["per_fire"]
    out.append(
        f"**Fire cost, {name}** ({measured['triggers']} triggers × {measured['ticks']} "
        f"ticks × {measured['repeats']} runs, workflow `{measured['workflow']}`, event "
        f"source mapping batches of up to {measured['batch_size']}): "
        f"**{_money(measured['usd_per_million'])} per million fires**; per fire "
        f"{per['dynamodb_wru']:g} WRU, {per['dynamodb_rru']:g} RRU, "
        f"{per['dynamodb_calls']:g} DynamoDB calls, {per['sqs_requests']:g} SQS requests, "
        f"{per['lambda_invocations']:g} Lambda invocations, runner "
        f"{per['runner_ms_per_fire']:g} ms per fire"
        + (
            f" (modelled; {per['runner_wall_ms_per_fire']:g} ms wall here)."
            if "runner_wall_ms_per_fire" in per
            else "."
        )
    )
    out.append("")
    out += _cost_rows(measured["by_site"], "fire")
    out.append("")
    deployed = measured.get("deployed")
    if deployed:
        logs = deployed["logs_bytes_per_fire"]
        out.append(
            f"As deployed ({deployed['config']['architecture']}, runner "
            f"{deployed['config']['memory_mb']['runner']} MB; run record "
            f"{deployed['run_record_bytes']:,.0f} B; log bytes per fire: "
            + ", ".join(f"{k} {v:g}" for k, v in logs.items())
            + "):"
        )
        out.append("")
        out += _deployed_rows(deployed)
        out.append("")
    return out


def _webhook_lines(results: dict) -> list[str]:
    """The webhook's cost, by call site."""
    if "webhook_cost_by_site" not in results:
        return []
    out = [
        f"**Webhook cost**: **{_money(results['usd_per_million_webhooks'])} per million "
        f"webhooks** (median of {len(results.get('webhook_inprocess_runs', []))} runs).",
        "",
    ]
    out += _cost_rows(results["webhook_cost_by_site"], "webhook")
    out.append("")
    return out


def _lateness_lines(late: dict | None) -> list[str]:
    """Lateness in the local stack, in all and by kind of schedule."""
    if not late:
        return []
    out = [
        f"**Lateness** ({late['triggers']} triggers, {late['window_s']} s window, "
        f"heartbeat {late['heartbeat_s']} s): p50 {late['lateness_p50_ms']} ms, p99 "
        f"{late['lateness_p99_ms']} ms, max {late['lateness_max_ms']} ms over "
        f"{late['fires']} fires ({late['expected_fires']} expected, "
        f"{late['missing_fires']} missing, {late['duplicated_slots']} duplicated; "
        f"statuses {late.get('statuses')}; a run took {late.get('run_ms_p50')} ms at p50).",
        "",
    ]
    out += ["| schedule | fires | p50 | p99 |", "|---|---:|---:|---:|"]
    for kind, row in (late.get("by_kind") or {}).items():
        out.append(f"| `{kind}` | {row['fires']} | {row['p50_ms']} ms | {row['p99_ms']} ms |")
    out.append("")
    return out


def _burst_rows(bursts: dict | None) -> list[str]:
    """One row per burst: what was sent and what became of it."""
    if not bursts:
        return []
    out = [
        "| burst | sent in | answers | accepted | lost | duplicated | unfinished | drain | runs/s | most at once |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, b in bursts.items():
        out.append(
            f"| {name} | {b['sent_s']} s | {b['answers']} | {b['accepted']} | {b['lost']} | "
            f"{b['duplicated']} | {b.get('unfinished_at_cap', 0)} | {b['drain_s']} s | "
            f"{b.get('runs_per_s', '')} | {b['max_concurrency']} (ceiling {b['ceiling']}) |"
        )
    out.append("")
    return out


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "bench" / "results.json"
    print(markdown(json.loads(path.read_text())))


if __name__ == "__main__":
    main()
