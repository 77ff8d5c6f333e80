"""The benchmarks' code paths, run on tiny numbers so that ``make bench`` cannot rot.

Not timed: what is checked is that every section runs and reports what it should,
plus the properties that hold at any size (a tick reads only what is due; nothing
accepted is lost or run twice).
"""

from __future__ import annotations

import os

import pytest

from bench.run import run, table

TINY = {
    "heartbeat": [(100, 1)],
    "heartbeat_enqueue": {"due": 20, "latency_ms": 1.0, "repeats": 1},
    "cost": {"triggers": 3, "ticks": 1, "repeats": 1, "variants": ("batched", "unbatched")},
    "webhook": {"triggers": 2, "rounds": 1, "repeats": 1, "http_deliveries": 3},
    "standin": {"triggers": 3, "ticks": 1, "minutes": 1},
    "lateness": {"triggers": 2, "window_s": 2},
    "burst": [(6, 1.0)],
}


@pytest.fixture
def own_environment(moto_server):
    """The benchmarks set their own environment; give the next test its own back."""
    from chalicelib.settings import reset_settings
    from chalicelib.store.aws import reset_clients

    saved = dict(os.environ)
    yield moto_server
    os.environ.clear()
    os.environ.update(saved)
    reset_settings()
    reset_clients()


def test_in_process_benchmarks_run_and_report_every_key(own_environment):
    plan = {**TINY, "webhook": {**TINY["webhook"], "http_deliveries": 0}}
    results = run(
        quick=True,
        only=("heartbeat", "cost", "webhook", "standin"),
        plan=plan,
        endpoint=own_environment,
    )
    # A tick also reads one cursor item per shard (a fixed cost per tick, not per fire): on
    # the bench's 1k-100k fleets it vanishes into the ratio; with 1 due here it cannot.
    shards = 4
    due = results["heartbeat"]["100"]["due"]
    assert due == 1
    assert results["heartbeat_read_ratio"] <= 1.1 + shards / due
    enqueue = results["heartbeat_enqueue"]
    assert enqueue["due"] == 20 and enqueue["cpu_ms_per_fire"] > 0
    for key in (
        "usd_per_million_fires",
        "usd_per_million_fires_unbatched",
        "usd_per_million_webhooks",
    ):
        assert 0 < results[key] < 100, key
    # Only counts are compared, never wall-clock-derived dollars (they move with load):
    # one fire per invocation makes more SQS requests per fire than full batches.
    batched, unbatched = (results["fire_cost"][v]["per_fire"] for v in ("batched", "unbatched"))
    assert unbatched["sqs_requests"] > batched["sqs_requests"]
    sites = results["fire_cost"]["batched"]["by_site"]
    assert any("claim_slot_and_start" in site for site in sites), sites
    # The deployed bill: log bytes are measured (counts, not time), and each cut removes
    # what it names.
    deployed = results["fire_cost"]["unbatched"]["deployed"]
    after, before = (
        sum(deployed[k].values()) for k in ("logs_bytes_per_fire", "logs_bytes_per_fire_before_cut")
    )
    assert 0 < after < before, (after, before)
    rows = {row["cut"].split(" (")[0]: row["lines"] for row in deployed["cuts"]}
    assert rows["as deployed before the cuts"]["X-Ray traces"] > 0
    sampled = [v for k, v in rows.items() if k.startswith("+ X-Ray")]
    assert sampled and sampled[0]["X-Ray traces"] == 0
    assert deployed["run_record_bytes"] > 0 and deployed["now"]["lines"]["run storage"] > 0
    # Counts and sizes of the lean paths: the accepted webhook is three calls, the hot
    # items stay under 1 KB, every fire's CPU and calls are measured.
    assert results["webhook_aws_calls_accepted_path"] == 3
    assert 0 < results["webhook_event_item_bytes"] < 1024
    assert 0 < results["webhook_run_record_bytes"] < 1024
    assert results["fire_cpu_ms"] > 0 and results["fire_aws_calls"] > 0
    standin = results["lateness_standin"]
    assert standin["fires"] > 0 and standin["measured_fires"] == 3
    assert standin["fire_calls_to_start"] >= 1 and standin["p99_ms"] >= 0
    shown = table(results)
    assert "usd_per_million_fires" in shown and "heartbeat_read_ratio" in shown


def test_local_stack_benchmarks_run_and_lose_nothing(own_environment):
    only = ("webhook", "lateness", "burst")
    plan = {**TINY, "webhook": {**TINY["webhook"], "repeats": 0}}
    results = run(quick=True, only=only, plan=plan, endpoint=own_environment)
    assert results["webhook_http_p50_ms"] > 0
    assert results["lateness"]["fires"] > 0
    assert results["lateness"]["duplicated_slots"] == 0
    assert results["burst_accepted"] == 6
    assert results["burst_lost"] == 0
    assert results["burst_duplicated"] == 0
    assert results["burst_max_concurrency"] <= 5


def test_an_empty_sample_reports_none_not_nan():
    from bench.lateness import rounded_percentile

    assert rounded_percentile([], 99) is None
    assert rounded_percentile([], 50, 1) is None
    assert rounded_percentile([3.0, 1.0, 2.0], 50) == 2
    shown = table({"lateness_p50_ms": None, "lateness_p99_ms": 12})
    assert "n/a" in shown and "nan" not in shown
