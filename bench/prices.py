"""The price list and the bill: what AWS charges for the calls and units a fire makes.

- ``PRICES``: us-east-1 on-demand list prices without free tiers
  (../shared/analysis/aws-prices-limits.md), and what is billed beside the calls: Lambda's
  platform log lines (``PLATFORM_LINE_BYTES``), CloudWatch's metadata per log event,
  DynamoDB's overhead per item and the TTL's lag;
- ``DEPLOYED``: the memory and architecture of the heartbeat, the runner and the API handler
  as the template deploys them, and the fire path's tracing;
- ``price``: the bill of counted calls (``bench.calls``), by service and by call site;
  ``lambda_usd``: requests and GB-seconds; ``billed_s``: an invocation's duration on Lambda,
  modelled from its CPU time and AWS calls;
- ``deployed_bill`` and ``cut_table``: dollars per million fires of a measured run
  (``bench.cost``) under a configuration, line by line, before and after each cut;
  ``peer_bills`` (``PEERS``): EventBridge Scheduler invoking a Lambda per fire.
"""

from __future__ import annotations

import math
from collections import defaultdict

from bench.calls import Call

__all__ = [
    "PRICES",
    "PEERS",
    "DEPLOYED",
    "price",
    "lambda_usd",
    "billed_s",
    "deployed_bill",
    "cut_table",
    "peer_bills",
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


def billed_s(cpu_s: float, aws_calls: int, *, function: str) -> float:
    """An invocation's duration on Lambda, modelled from what it did here.

    Its CPU time (this thread's: the moto server's threads excluded) stretched by the
    share of a vCPU the deployed memory buys (1,769 MB is one vCPU), plus
    ``AWS_CALL_MS`` per AWS call it made. Wall time here moves with the machine's load and
    includes moto's own work; this does not.
    """
    share = min(1.0, DEPLOYED["memory_mb"].get(function, 128) / VCPU_MB)
    return cpu_s / share + aws_calls * AWS_CALL_MS / 1000


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
