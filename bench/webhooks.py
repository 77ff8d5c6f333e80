"""Webhooks: the accepted path's latency and cost in process, and bursts over HTTP.

- ``measure_webhook_inprocess``: signed deliveries to ``POST /hooks/{token}`` through
  ``chalice.test.Client`` (the app as API Gateway invokes it) against the moto server,
  each then run by the runner the way the event source mapping would. Latency is the
  handler's wall time per accepted delivery; cost is every AWS call counted (the same
  ``CallLog`` as the fire cost) plus API Gateway REST and both Lambda invocations.
- ``measure_http`` (the same delivery over real HTTP to the local stack) and
  ``measure_burst`` (N signed deliveries paced over S seconds, each followed to its run),
  with ``signed``, the headers of a delivery: in ``bench/webhook_http.py``, and
  importable from here.
"""

from __future__ import annotations

import json
import math
import statistics
import time
from typing import Any

from bench.calls import Call, CallLog, item_size
from bench.env import MotoEnv
from bench.lateness import rounded_percentile
from bench.prices import PRICES, billed_s, lambda_usd, price
from bench.webhook_http import measure_burst, measure_http, signed, token_of

__all__ = ["signed", "measure_webhook_inprocess", "measure_http", "measure_burst"]


# -- in process -----------------------------------------------------------------------


def measure_webhook_inprocess(
    env: MotoEnv, *, triggers: int = 20, rounds: int = 10, batch_size: int = 10
) -> dict:
    """Latency (uninstrumented pass) and cost (counted pass) of the accepted path."""
    latency = _inprocess_pass(env, triggers=triggers, rounds=rounds, count=False)
    cost = _inprocess_pass(env, triggers=triggers, rounds=rounds, count=True, batch_size=batch_size)
    return {**latency, **cost}


def _inprocess_pass(
    env: MotoEnv, *, triggers: int, rounds: int, count: bool, batch_size: int = 10
) -> dict:
    import app as app_module
    from devstack.gateway import contract_client as Client

    env.fresh()
    hooks = _webhook_triggers(triggers)
    deliveries = _Deliveries(env, count=count, batch_size=batch_size)
    with Client(app_module.app) as client:
        calls = deliveries.run(client, hooks, rounds=rounds)
    if not count:
        return deliveries.latency()
    return _cost(deliveries, calls)


def _webhook_triggers(count: int) -> list[tuple[str, str]]:
    """``count`` event triggers of ``echo``, made by the service: each one's webhook token
    and secret."""
    from chalicelib import wiring
    from chalicelib.services import triggers as trigger_service
    from chalicelib.services.auth import Principal

    root = Principal("root", "local", "admin")
    hooks = []
    for _ in range(count):
        view = trigger_service.create_trigger(
            root, {"workflow": "echo", "event": {"source": "webhook"}}, now=wiring.now_utc()
        )
        hooks.append((token_of(view["webhook"]["url"]), view["webhook"]["secret"]))
    return hooks


class _Deliveries:
    """Signed deliveries through the app, each round then run by the runner the way the
    event source mapping would: what each API and runner invocation took, and (when
    counting) every AWS call."""

    def __init__(self, env: MotoEnv, *, count: bool, batch_size: int) -> None:
        from chalicelib import assembly

        self.env, self.batch_size = env, batch_size
        self.runner = assembly.build_runner()
        self.handler_s: list[float] = []
        self.runner_s: list[float] = []
        # Deterministic measures beside the wall times: this thread's CPU (moto answers on
        # its own threads) and the AWS calls, per API invocation and per runner batch.
        self.api_cpu_s: list[float] = []
        self.api_calls: list[int] = []
        self.runner_cpu_s: list[float] = []
        self.runner_calls: list[int] = []
        self.runner_messages: list[int] = []
        self.accepted = 0
        self.log = CallLog() if count else None

    def run(self, client: Any, hooks: list[tuple[str, str]], *, rounds: int) -> list[Call]:
        """Warm up, then ``rounds`` rounds of a delivery to each trigger, the queue drained
        after each round: the AWS calls made after the warm-up (none when not counting)."""
        log = self.log
        if log is not None:
            log.__enter__()
        try:
            self._warm(client, hooks)
            for n in range(rounds):
                for token, secret in hooks:
                    self._deliver(client, token, secret, n)
                # Deliveries a round apart: each finds its trigger idle (no queueing).
                self._drain()
            return log.since() if log is not None else []
        finally:
            if log is not None:
                log.__exit__(None, None, None)

    def _warm(self, client: Any, hooks: list[tuple[str, str]]) -> None:
        """Clients built, KMS secrets opened and cached (a warm Lambda); nothing kept."""
        log = self.log
        with log.pause() if log is not None else _nothing():
            for token, secret in hooks:
                body = json.dumps({"warm": True}).encode()
                client.http.post(f"/hooks/{token}", headers=signed(secret, body), body=body)
            self._drain()
        if log is not None:
            log.forget()
        for measured in (self.runner_s, self.runner_cpu_s, self.runner_calls, self.runner_messages):
            measured.clear()

    def _deliver(self, client: Any, token: str, secret: str, n: int) -> None:
        log = self.log
        body = json.dumps({"n": n, "token_tail": token[-4:]}).encode()
        headers = signed(secret, body)
        started, cpu = time.perf_counter(), time.thread_time()
        mark = log.mark() if log is not None else 0
        answer = client.http.post(f"/hooks/{token}", headers=headers, body=body)
        self.handler_s.append(time.perf_counter() - started)
        self.api_cpu_s.append(time.thread_time() - cpu)
        self.api_calls.append(len(log.since(mark)) if log is not None else 0)
        assert answer.status_code == 202, (answer.status_code, answer.body)
        self.accepted += 1

    def _drain(self) -> None:
        self.env.poll_batches(self._run_batch, batch_size=self.batch_size)

    def _run_batch(self, messages: list[dict]) -> None:
        from chalicelib import wiring
        from devstack.stack import _lambda_record

        log = self.log
        event = {"Records": [_lambda_record(m, self.env.queue_url) for m in messages]}
        started, cpu = time.perf_counter(), time.thread_time()
        mark = log.mark() if log is not None else 0
        # One thread (concurrency 1): this thread's CPU is then the whole batch's.
        answer = wiring.handle_sqs_batch(event, runner=self.runner, concurrency=1)
        self.runner_s.append(time.perf_counter() - started)
        self.runner_cpu_s.append(time.thread_time() - cpu)
        self.runner_calls.append(len(log.since(mark)) if log is not None else 0)
        self.runner_messages.append(len(messages))
        assert not answer.get("batchItemFailures"), answer

    def latency(self) -> dict:
        """The handler's wall time per accepted delivery."""
        latencies = [s * 1000 for s in self.handler_s]
        return {
            "webhook_p50_ms": rounded_percentile(latencies, 50, 1),
            "webhook_p99_ms": rounded_percentile(latencies, 99, 1),
            "webhook_deliveries": self.accepted,
        }


def _cost(deliveries: _Deliveries, calls: list[Call]) -> dict:
    """The bill of a counted pass: every AWS call, API Gateway REST and both Lambda
    invocations, per webhook; and the counts and sizes beside it."""
    d, accepted = deliveries, deliveries.accepted
    calls = [c for c in calls if not (c.operation == "ReceiveMessage" and c.items_read == 0)]
    bill = price(calls)
    # Lambda billed as the fire cost models it (``prices.billed_s``): CPU over the deployed
    # memory's vCPU share plus a round trip per call (a batch's threads overlap theirs).
    api_billed = [
        billed_s(cpu, n, function="api_handler")
        for cpu, n in zip(d.api_cpu_s, d.api_calls, strict=True)
    ]
    runner_billed = [
        billed_s(cpu, math.ceil(n / m), function="runner")
        for cpu, n, m in zip(d.runner_cpu_s, d.runner_calls, d.runner_messages, strict=True)
    ]
    api_lambda_usd = lambda_usd(api_billed, function="api_handler")
    api_usd = accepted * PRICES["apigw_rest_request"] + api_lambda_usd
    runner_usd = lambda_usd(runner_billed, function="runner")
    total = bill["usd"] + api_usd + runner_usd
    dynamo = [c for c in calls if c.service == "dynamodb"]
    return {
        "usd_per_million_webhooks": round(total / accepted * 1e6, 3),
        "webhook_cost_by_site": _by_site(
            bill,
            accepted,
            api_lambda_usd=api_lambda_usd,
            runner_usd=runner_usd,
            runner_invocations=len(d.runner_s),
        ),
        "webhook_handler_ms_mean": round(1000 * statistics.mean(d.handler_s), 1),
        "webhook_aws_calls_accepted_path": round(statistics.mean(d.api_calls), 2),
        "webhook_aws_calls_per_webhook": round(len(calls) / accepted, 2),
        "webhook_wru_per_webhook": round(sum(c.wru + c.gsi_wru for c in dynamo) / accepted, 2),
        "webhook_rru_per_webhook": round(sum(c.rru for c in dynamo) / accepted, 2),
        "webhook_api_cpu_ms": round(1000 * statistics.mean(d.api_cpu_s), 2),
        "webhook_runner_cpu_ms": round(1000 * sum(d.runner_cpu_s) / accepted, 2),
        "webhook_event_item_bytes": _mean_item_bytes("events"),
        "webhook_run_record_bytes": _mean_item_bytes("runs"),
    }


def _by_site(
    bill: dict, accepted: int, *, api_lambda_usd: float, runner_usd: float, runner_invocations: int
) -> dict:
    """The bill per webhook by call site, with API Gateway and the two Lambda functions."""
    sites = {
        site: {
            "calls_per_webhook": round(row["calls"] / accepted, 3),
            "wru_per_webhook": round(row["wru"] / accepted, 3),
            "rru_per_webhook": round(row["rru"] / accepted, 3),
            "usd_per_million": round(row["usd"] / accepted * 1e6, 4),
        }
        for site, row in bill["by_site"].items()
    }
    sites["api gateway REST request"] = {
        "calls_per_webhook": 1.0,
        "usd_per_million": PRICES["apigw_rest_request"] * 1e6,
    }
    sites["lambda api (requests + GB-s)"] = {
        "calls_per_webhook": 1.0,
        "usd_per_million": round(api_lambda_usd / accepted * 1e6, 4),
    }
    sites["lambda runner (requests + GB-s)"] = {
        "calls_per_webhook": round(runner_invocations / accepted, 3),
        "usd_per_million": round(runner_usd / accepted * 1e6, 4),
    }
    return sites


def _mean_item_bytes(table: str) -> float:
    """The mean size of a table's items as DynamoDB bills them (``calls.item_size``)."""
    from chalicelib.store.aws import client
    from chalicelib.store.tables import table_name

    items = client("dynamodb").scan(TableName=table_name(table)).get("Items", [])
    return round(sum(item_size(i) for i in items) / max(1, len(items)), 1)


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
