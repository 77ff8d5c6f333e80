"""Webhooks: the accepted path's latency and cost in process, and bursts over HTTP.

- ``measure_webhook_inprocess``: signed deliveries to ``POST /hooks/{token}`` through
  ``chalice.test.Client`` (the app as API Gateway invokes it) against the moto server,
  each then run by the runner the way the event source mapping would. Latency is the
  handler's wall time per accepted delivery; cost is every AWS call counted (the same
  ``CallLog`` as the fire cost) plus API Gateway REST and both Lambda invocations.
- ``measure_http``: the same delivery over real HTTP to the local stack (sequential).
- ``measure_burst``: N signed deliveries paced over S seconds over HTTP, then every
  accepted event is followed to its run: lost (accepted, never ran), duplicated (ran
  more than once: ``echo`` counts its runs in its state), time to drain, and the most
  runs that overlapped in time (the job ceiling is ``CRONHOOK_MAX_CONCURRENCY``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import statistics
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

from bench.calls import CallLog, item_size
from bench.cost import PRICES, billed_s, lambda_usd, price
from bench.env import MotoEnv
from bench.lateness import local_stack, rounded_percentile

STALL_S = 60  # no run finished for this long: what is left is lost
CAP_S = 1800  # still draining after this long: what is left is reported as unfinished

__all__ = ["signed", "measure_webhook_inprocess", "measure_http", "measure_burst"]


def signed(secret: str, body: bytes, *, key: str | None = None) -> dict:
    """Headers of a generic ``webhook`` delivery: HMAC-SHA256 of the raw body, hex."""
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return {
        "Content-Type": "application/json",
        "X-Signature-256": f"sha256={digest}",
        "Idempotency-Key": key or uuid.uuid4().hex,
    }


def _token(url: str) -> str:
    return url.rsplit("/", 1)[-1]


def _ms(text: str | None) -> int | None:
    if text is None:
        return None
    return int(round(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000))


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
    from chalicelib import assembly, wiring
    from chalicelib.services import triggers as trigger_service
    from chalicelib.services.auth import Principal
    from devstack.gateway import contract_client as Client
    from devstack.stack import _lambda_record

    env.fresh()
    root = Principal("root", "local", "admin")
    hooks = []
    for _ in range(triggers):
        view = trigger_service.create_trigger(
            root, {"workflow": "echo", "event": {"source": "webhook"}}, now=wiring.now_utc()
        )
        hooks.append((_token(view["webhook"]["url"]), view["webhook"]["secret"]))
    runner = assembly.build_runner()
    handler_s: list[float] = []
    runner_s: list[float] = []
    # Deterministic measures beside the wall times: this thread's CPU (moto answers on
    # its own threads) and the AWS calls, per API invocation and per runner batch.
    api_cpu_s: list[float] = []
    api_calls: list[int] = []
    runner_cpu_s: list[float] = []
    runner_calls: list[int] = []
    runner_messages: list[int] = []
    accepted = 0

    def run_batch(messages: list[dict]) -> None:
        event = {"Records": [_lambda_record(m, env.queue_url) for m in messages]}
        started, cpu = time.perf_counter(), time.thread_time()
        mark = log.mark() if log is not None else 0
        # One thread (concurrency 1): this thread's CPU is then the whole batch's.
        answer = wiring.handle_sqs_batch(event, runner=runner, concurrency=1)
        runner_s.append(time.perf_counter() - started)
        runner_cpu_s.append(time.thread_time() - cpu)
        runner_calls.append(len(log.since(mark)) if log is not None else 0)
        runner_messages.append(len(messages))
        assert not answer.get("batchItemFailures"), answer

    log = CallLog() if count else None
    with Client(app_module.app) as client:
        if log is not None:
            log.__enter__()
        try:
            # Warm up: clients built, KMS secrets opened and cached (a warm Lambda).
            with log.pause() if log is not None else _nothing():
                for token, secret in hooks:
                    body = json.dumps({"warm": True}).encode()
                    client.http.post(f"/hooks/{token}", headers=signed(secret, body), body=body)
                env.poll_batches(run_batch, batch_size=batch_size)
            if log is not None:
                log.forget()
            for measured in (runner_s, runner_cpu_s, runner_calls, runner_messages):
                measured.clear()
            for n in range(rounds):
                for token, secret in hooks:
                    body = json.dumps({"n": n, "token_tail": token[-4:]}).encode()
                    headers = signed(secret, body)
                    started, cpu = time.perf_counter(), time.thread_time()
                    mark = log.mark() if log is not None else 0
                    answer = client.http.post(f"/hooks/{token}", headers=headers, body=body)
                    handler_s.append(time.perf_counter() - started)
                    api_cpu_s.append(time.thread_time() - cpu)
                    api_calls.append(len(log.since(mark)) if log is not None else 0)
                    assert answer.status_code == 202, (answer.status_code, answer.body)
                    accepted += 1
                # Deliveries a round apart: each finds its trigger idle (no queueing).
                env.poll_batches(run_batch, batch_size=batch_size)
            calls = log.since() if log is not None else []
        finally:
            if log is not None:
                log.__exit__(None, None, None)
    if not count:
        latencies = [s * 1000 for s in handler_s]
        return {
            "webhook_p50_ms": rounded_percentile(latencies, 50, 1),
            "webhook_p99_ms": rounded_percentile(latencies, 99, 1),
            "webhook_deliveries": accepted,
        }
    calls = [c for c in calls if not (c.operation == "ReceiveMessage" and c.items_read == 0)]
    bill = price(calls)
    # Lambda billed as the fire cost models it (``cost.billed_s``): CPU over the deployed
    # memory's vCPU share plus a round trip per call (a batch's threads overlap theirs).
    api_billed = [
        billed_s(cpu, n, function="api_handler")
        for cpu, n in zip(api_cpu_s, api_calls, strict=True)
    ]
    runner_billed = [
        billed_s(cpu, math.ceil(n / m), function="runner")
        for cpu, n, m in zip(runner_cpu_s, runner_calls, runner_messages, strict=True)
    ]
    api_lambda_usd = lambda_usd(api_billed, function="api_handler")
    api_usd = accepted * PRICES["apigw_rest_request"] + api_lambda_usd
    runner_usd = lambda_usd(runner_billed, function="runner")
    total = bill["usd"] + api_usd + runner_usd
    dynamo = [c for c in calls if c.service == "dynamodb"]
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
        "calls_per_webhook": round(len(runner_s) / accepted, 3),
        "usd_per_million": round(runner_usd / accepted * 1e6, 4),
    }
    return {
        "usd_per_million_webhooks": round(total / accepted * 1e6, 3),
        "webhook_cost_by_site": sites,
        "webhook_handler_ms_mean": round(1000 * statistics.mean(handler_s), 1),
        "webhook_aws_calls_accepted_path": round(statistics.mean(api_calls), 2),
        "webhook_aws_calls_per_webhook": round(len(calls) / accepted, 2),
        "webhook_wru_per_webhook": round(sum(c.wru + c.gsi_wru for c in dynamo) / accepted, 2),
        "webhook_rru_per_webhook": round(sum(c.rru for c in dynamo) / accepted, 2),
        "webhook_api_cpu_ms": round(1000 * statistics.mean(api_cpu_s), 2),
        "webhook_runner_cpu_ms": round(1000 * sum(runner_cpu_s) / accepted, 2),
        "webhook_event_item_bytes": _mean_item_bytes("events"),
        "webhook_run_record_bytes": _mean_item_bytes("runs"),
    }


def _mean_item_bytes(table: str) -> float:
    """The mean size of a table's items as DynamoDB bills them (``calls.item_size``)."""
    from chalicelib.store.aws import client
    from chalicelib.store.events import EventModel
    from chalicelib.store.runs import RunModel

    name = {"events": EventModel, "runs": RunModel}[table].Meta.table_name
    items = client("dynamodb").scan(TableName=name).get("Items", [])
    return round(sum(item_size(i) for i in items) / max(1, len(items)), 1)


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


# -- over HTTP, in the local stack ---------------------------------------------------------


def _event_triggers(stack, count: int, workflow: str) -> list[tuple[str, str, str]]:
    made = []
    for _ in range(count):
        answer = stack.call(
            "POST", "/v1/triggers", {"workflow": workflow, "event": {"source": "webhook"}}
        )
        assert answer.status_code == 201, answer.text
        view = answer.json()
        made.append((view["id"], _token(view["webhook"]["url"]), view["webhook"]["secret"]))
    return made


_sessions = threading.local()


def _post(stack, token: str, secret: str, payload: dict):
    import requests

    session = getattr(_sessions, "session", None)
    if session is None:
        session = _sessions.session = requests.Session()
    body = json.dumps(payload).encode()
    return session.post(
        f"{stack.url}/hooks/{token}", data=body, headers=signed(secret, body), timeout=30
    )


def measure_http(*, deliveries: int = 200, quick: bool = False, stack: Any = None) -> dict:
    """Sequential signed deliveries over HTTP to the local stack: p50/p99 of the answer."""
    if stack is None:
        with local_stack(quick=quick) as started:
            return measure_http(deliveries=deliveries, quick=quick, stack=started)
    hooks = _event_triggers(stack, 10, "echo")
    for _, token, secret in hooks:  # warm: secrets opened, connections made
        _post(stack, token, secret, {"warm": True})
    latencies = []
    for n in range(deliveries):
        _, token, secret = hooks[n % len(hooks)]
        started = time.perf_counter()
        answer = _post(stack, token, secret, {"n": n})
        latencies.append((time.perf_counter() - started) * 1000)
        assert answer.status_code == 202, answer.text
    return {
        "webhook_http_p50_ms": rounded_percentile(latencies, 50, 1),
        "webhook_http_p99_ms": rounded_percentile(latencies, 99, 1),
        "webhook_http_deliveries": deliveries,
    }


def _max_overlap(intervals: list[tuple[int, int]]) -> int:
    points = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    best = running = 0
    for _, step in points:
        running += step
        best = max(best, running)
    return best


def _event_runs(stack) -> list[dict]:
    runs: list[dict] = []
    cursor = None
    while True:
        path = "/v1/runs?surface=event&limit=200" + (f"&cursor={cursor}" if cursor else "")
        page = stack.call("GET", path).json()
        runs.extend(page["items"])
        cursor = page.get("next_cursor")
        if not cursor:
            return runs


def measure_burst(
    *,
    deliveries: int,
    seconds: float,
    triggers: int = 20,
    quick: bool = False,
    stack: Any = None,
) -> dict:
    """``deliveries`` signed webhooks paced over ``seconds`` over HTTP; follow each to its run."""
    if stack is None:
        with local_stack(quick=quick) as started:
            return _burst(started, deliveries=deliveries, seconds=seconds, triggers=triggers)
    return _burst(stack, deliveries=deliveries, seconds=seconds, triggers=triggers)


def _longest_gap_s(start_ms: int, finishes: list[int]) -> float:
    """The longest time with no run settling, from ``start_ms`` to the last settle."""
    points = [start_ms, *sorted(f for f in finishes if f >= start_ms)]
    return round(
        max((b - a for a, b in zip(points, points[1:], strict=False)), default=0) / 1000, 1
    )


def _burst(stack, *, deliveries: int, seconds: float, triggers: int) -> dict:
    # Half the triggers count their runs (echo: state.count), half keep runners busy
    # (sleep 50 ms), so that the ceiling is actually pressed. One trigger: it counts
    # (echo), and with its default concurrency of 1 its runs form one chain.
    counting = _event_triggers(stack, max(1, triggers // 2), "echo")
    busy = _event_triggers(stack, triggers - len(counting), "sleep")
    targets = counting + busy
    answers: list[tuple[str, int, dict]] = []
    lock = threading.Lock()
    started = time.time()

    def send(n: int) -> None:
        trigger_id, token, secret = targets[n % len(targets)]
        time.sleep(max(0.0, started + n * seconds / deliveries - time.time()))
        try:
            answer = _post(stack, token, secret, {"n": n, "seconds": 0.05})
            body = answer.json() if answer.content else {}
            status = answer.status_code
        except Exception as exc:  # counted as not accepted
            body, status = {"error": repr(exc)}, 0
        with lock:
            answers.append((trigger_id, status, body))

    with ThreadPoolExecutor(max_workers=32) as pool:
        list(pool.map(send, range(deliveries)))
    sent_s = time.time() - started
    last_sent_ms = int(time.time() * 1000)
    accepted = {b["event_id"]: t for t, status, b in answers if status == 202}
    statuses: dict[int, int] = {}
    for _, status, _ in answers:
        statuses[status] = statuses.get(status, 0) + 1

    # Wait until every accepted event has run, or until nothing has progressed for a
    # while (then what is left counts as lost). Progress is read from the triggers'
    # run counts (one GetItem each): listing every run is left for the end, as it is
    # heavy on the same process that runs the events.
    stalled_since = time.time()
    settled_before = -1
    stalled = False
    cap = time.time() + CAP_S
    while time.time() < cap:
        time.sleep(5)
        settled = sum(
            int(stack.call("GET", f"/v1/triggers/{t}").json().get("run_count") or 0)
            for t, _, _ in targets
        )
        if settled >= len(accepted):
            break
        if settled > settled_before:
            settled_before, stalled_since = settled, time.time()
        elif time.time() - stalled_since > STALL_S:
            stalled = True
            break
    runs = _event_runs(stack)
    by_event: dict[str, list[dict]] = {}
    for r in runs:
        by_event.setdefault(r["event_id"], []).append(r)
    succeeded = {e for e, rs in by_event.items() if any(r["status"] == "succeeded" for r in rs)}
    # Not run yet: lost if the stack stopped making progress, else still draining at the cap.
    missing = [e for e in accepted if e not in succeeded]
    lost = missing if stalled else []
    unfinished = [] if stalled else missing
    duplicated = sum(1 for e in accepted if len(by_event.get(e, [])) > 1)
    for trigger_id, _, _ in counting:
        got = stack.call("GET", f"/v1/triggers/{trigger_id}").json()
        ran = int((got.get("state") or {}).get("count") or 0)
        delivered = sum(1 for t in accepted.values() if t == trigger_id)
        duplicated += max(0, ran - delivered)
    mine = [r for r in runs if r["event_id"] in accepted and r.get("started_at")]
    intervals = [
        (_ms(r["started_at"]), _ms(r["finished_at"]) or _ms(r["started_at"])) for r in mine
    ]
    last_finish = max((e for _, e in intervals), default=last_sent_ms)
    first_start = min((b for b, _ in intervals), default=last_sent_ms)
    finishes = [_ms(r["finished_at"]) for r in mine if r.get("finished_at")]
    return {
        "deliveries": deliveries,
        "seconds": seconds,
        "triggers": triggers,
        "longest_settle_gap_s": _longest_gap_s(int(started * 1000), finishes),
        "sent_s": round(sent_s, 1),
        "answers": {str(k): v for k, v in sorted(statuses.items())},
        "accepted": len(accepted),
        "lost": len(lost),
        "unfinished_at_cap": len(unfinished),
        "duplicated": duplicated,
        "drain_s": round(max(0, last_finish - last_sent_ms) / 1000, 1),
        "max_concurrency": _max_overlap(intervals),
        "runs_per_s": round(len(intervals) / max(0.001, (last_finish - first_start) / 1000), 1),
        "ceiling": 5,
    }
