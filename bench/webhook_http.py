"""Webhooks over HTTP, to the local stack: the signed delivery, its answer, and bursts.

- ``signed``: the headers of a generic ``webhook`` delivery (HMAC-SHA256 of the body), as
  every webhook measure sends it (``bench.webhooks`` in process too);
- ``measure_http``: signed deliveries over real HTTP to the local stack (sequential);
- ``measure_burst``: N signed deliveries paced over S seconds over HTTP, then every
  accepted event is followed to its run: lost (accepted, never ran), duplicated (ran
  more than once: ``echo`` counts its runs in its state), time to drain, and the most
  runs that overlapped in time (the job ceiling is ``CRONHOOK_MAX_CONCURRENCY``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

from bench.lateness import local_stack, rounded_percentile

STALL_S = 60  # no run finished for this long: what is left is lost
CAP_S = 1800  # still draining after this long: what is left is reported as unfinished

__all__ = ["signed", "token_of", "measure_http", "measure_burst"]


def signed(secret: str, body: bytes, *, key: str | None = None) -> dict:
    """Headers of a generic ``webhook`` delivery: HMAC-SHA256 of the raw body, hex.

    No ``Idempotency-Key`` unless ``key``: as the providers send (none of GitHub, Stripe,
    Slack, Shopify or Standard Webhooks does). Since it became a second dedupe key, a
    delivery with one is stored in a transaction with its key's alias (docs/benchmarks.md).
    """
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    headers = {"Content-Type": "application/json", "X-Signature-256": f"sha256={digest}"}
    if key:
        headers["Idempotency-Key"] = key
    return headers


def token_of(url: str) -> str:
    """A webhook's token: the last part of its URL."""
    return url.rsplit("/", 1)[-1]


def _ms(text: str | None) -> int | None:
    if text is None:
        return None
    return int(round(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000))


# -- over HTTP, in the local stack ---------------------------------------------------------


def _event_triggers(stack, count: int, workflow: str) -> list[tuple[str, str, str]]:
    made = []
    for _ in range(count):
        answer = stack.call(
            "POST", "/v1/triggers", {"workflow": workflow, "event": {"source": "webhook"}}
        )
        assert answer.status_code == 201, answer.text
        view = answer.json()
        made.append((view["id"], token_of(view["webhook"]["url"]), view["webhook"]["secret"]))
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


def _settle_gaps(start_ms: int, finishes: list[int]) -> list[tuple[int, int]]:
    """Each time with no run settling, from ``start_ms`` to the last settle: (began, ended)."""
    points = [start_ms, *sorted(f for f in finishes if f >= start_ms)]
    return list(zip(points, points[1:], strict=False))


def _longest_gap_s(start_ms: int, finishes: list[int]) -> float:
    """The longest time with no run settling, from ``start_ms`` to the last settle."""
    return round(max((b - a for a, b in _settle_gaps(start_ms, finishes)), default=0) / 1000, 1)


def _longest_gaps(start_ms: int, finishes: list[int], *, top: int = 5) -> list[list]:
    """The ``top`` longest times with no run settling: when each began (UTC) and how long
    it was (s), to set beside the stack's own minute (the heartbeat, the snapshot)."""
    gaps = sorted(_settle_gaps(start_ms, finishes), key=lambda ab: ab[0] - ab[1])[:top]
    return [
        [datetime.fromtimestamp(a / 1000, UTC).isoformat(timespec="milliseconds"), (b - a) / 1000]
        for a, b in gaps
    ]


def _burst(stack, *, deliveries: int, seconds: float, triggers: int) -> dict:
    # Half the triggers count their runs (echo: state.count), half keep runners busy
    # (sleep 50 ms), so that the ceiling is actually pressed. One trigger: it counts
    # (echo), and with its default concurrency of 1 its runs form one chain.
    counting = _event_triggers(stack, max(1, triggers // 2), "echo")
    busy = _event_triggers(stack, triggers - len(counting), "sleep")
    targets = counting + busy
    started = time.time()
    answers = _send_paced(stack, targets, deliveries=deliveries, seconds=seconds, started=started)
    sent_s = time.time() - started
    last_sent_ms = int(time.time() * 1000)
    accepted = {b["event_id"]: t for t, status, b in answers if status == 202}
    statuses: dict[int, int] = {}
    for _, status, _ in answers:
        statuses[status] = statuses.get(status, 0) + 1
    stalled = _wait_for_runs(stack, targets, accepted=len(accepted))
    runs = _event_runs(stack)
    lost, unfinished, duplicated = _fates(stack, runs, accepted, counting, stalled=stalled)
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
        "longest_settle_gaps": _longest_gaps(int(started * 1000), finishes),
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


def _send_paced(
    stack, targets: list[tuple[str, str, str]], *, deliveries: int, seconds: float, started: float
) -> list[tuple[str, int, dict]]:
    """``deliveries`` signed webhooks to ``targets`` in turn, the n-th sent
    ``n * seconds / deliveries`` after ``started`` (32 threads): each one's trigger, HTTP
    status (0: no answer) and answer."""
    answers: list[tuple[str, int, dict]] = []
    lock = threading.Lock()

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
    return answers


def _wait_for_runs(stack, targets: list[tuple[str, str, str]], *, accepted: int) -> bool:
    """Wait until every accepted event has run, or until nothing has progressed for a
    while (then what is left counts as lost): whether it stalled. Progress is read from
    the triggers' run counts (one GetItem each): listing every run is left for the end, as
    it is heavy on the same process that runs the events."""
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
        if settled >= accepted:
            break
        if settled > settled_before:
            settled_before, stalled_since = settled, time.time()
        elif time.time() - stalled_since > STALL_S:
            stalled = True
            break
    return stalled


def _fates(
    stack,
    runs: list[dict],
    accepted: dict[str, str],
    counting: list[tuple[str, str, str]],
    *,
    stalled: bool,
) -> tuple[list[str], list[str], int]:
    """The accepted events lost (never ran, the stack stalled), unfinished (not run yet
    when measuring stopped) and how many runs were duplicates (an event with more than
    one run, and the counting triggers' runs beyond the events delivered to them)."""
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
    return lost, unfinished, duplicated
