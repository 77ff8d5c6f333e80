"""lateness_p50_ms / lateness_p99_ms: how late scheduled fires start in the local stack.

The local stack is started the way a user starts it (``python -m devstack.stack``,
as the e2e tests do) with the default 60 s heartbeat and 5 runner threads polling SQS.
480 triggers (under the default quota of 500) are created over HTTP, spread over four
minutes: cron triggers every 4 minutes at offsets 0-3 (their slots fall on second :00, in
crowds of 60; the heartbeat ticks half a minute off them) and interval triggers of 1-4
minutes anchored at their creation instant (slots between ticks). Every fire whose slot
falls in the measured window (whole minutes after the first tick, at least ``MIN_FIRES``
expected fires: about 1,100 in 6 minutes) is collected through ``GET /v1/runs``; lateness
is ``started_at - scheduled_for``.

It also checks the window's bookkeeping: every expected slot ran exactly once.
"""

from __future__ import annotations

import contextlib
import statistics
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["measure_lateness", "percentile", "rounded_percentile", "local_stack", "MIN_FIRES"]

# The figure is p99 over at least this many fires (a p99 of 300 is 3 fires).
MIN_FIRES = 1000


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(p / 100 * len(ordered) + 0.5)))
    return float(ordered[rank - 1])


def rounded_percentile(values: list[float], p: float, ndigits: int | None = None) -> float | None:
    """``percentile`` rounded (to an int without ``ndigits``); None for no values, so an
    empty sample reads as "none measured" in the results, never as NaN (or a crash)."""
    if not values:
        return None
    return round(percentile(values, p), ndigits)


def _ms(text: str | None) -> int | None:
    if text is None:
        return None
    return int(round(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000))


def _bodies(count: int, *, quick: bool) -> list[dict]:
    if quick:
        # Seconds instead of minutes: the same paths, a 2 s heartbeat.
        return [
            {"workflow": "echo", "schedule": {"interval_s": 2 * (1 + n % 2)}, "title": f"bench {n}"}
            for n in range(count)
        ]
    # Spread over four minutes: a quarter of the crons on each minute (still all on its
    # second :00), the intervals every 1-4 minutes.
    kinds = [
        {"cron": "0-59/4 * * * *"},
        {"cron": "1-59/4 * * * *"},
        {"cron": "2-59/4 * * * *"},
        {"cron": "3-59/4 * * * *"},
        {"interval_s": 60},
        {"interval_s": 120},
        {"interval_s": 180},
        {"interval_s": 240},
    ]
    return [
        {"workflow": "echo", "schedule": kinds[n % len(kinds)], "title": f"bench {n}"}
        for n in range(count)
    ]


def _slots(schedule_in: dict, created_at: str, start_ms: int, end_ms: int) -> list[int]:
    """The slots of a trigger in [start_ms, end_ms), computed as cronhook computes them."""
    from datetime import timedelta

    from chalicelib.domain import schedule
    from chalicelib.domain.spec import ScheduleIn, schedule_spec_from

    # created_at is rounded to the millisecond, the interval anchor truncated: slots
    # may differ by 1 ms, which the caller tolerates.
    anchor = datetime.fromtimestamp(_ms(created_at) / 1000, tz=UTC)
    spec = schedule_spec_from(ScheduleIn(**schedule_in), anchor_at=anchor)
    at = datetime.fromtimestamp(start_ms / 1000, tz=UTC) - timedelta(milliseconds=1)
    slots = []
    while True:
        at = schedule.next_fire_after(spec, at)
        if at is None or at.timestamp() * 1000 >= end_ms:
            return slots
        slots.append(int(round(at.timestamp() * 1000)))


def _kind(schedule_in: dict) -> str:
    if schedule_in.get("cron"):
        return f"cron {schedule_in['cron']}"
    return f"interval {schedule_in.get('interval_s')} s"


def _all_runs(stack, *, surface: str = "schedule") -> list[dict]:
    runs: list[dict] = []
    cursor = None
    while True:
        path = f"/v1/runs?surface={surface}&limit=200" + (f"&cursor={cursor}" if cursor else "")
        answer = stack.call("GET", path)
        answer.raise_for_status()
        page = answer.json()
        runs.extend(page["items"])
        cursor = page.get("next_cursor")
        if not cursor:
            return runs


def _by_crowd(window: list[dict]) -> dict:
    """Lateness by how many fires share the fire's scheduled second (where it goes)."""
    crowd: dict[int, int] = {}
    for r in window:
        second = _ms(r["scheduled_for"]) // 1000
        crowd[second] = crowd.get(second, 0) + 1
    groups: dict[str, list[int]] = {}
    for r in window:
        if not r.get("started_at"):
            continue
        n = crowd[_ms(r["scheduled_for"]) // 1000]
        name = "1" if n == 1 else "2-10" if n <= 10 else "11-50" if n <= 50 else "over 50"
        groups.setdefault(name, []).append(_ms(r["started_at"]) - _ms(r["scheduled_for"]))
    return {
        name: {
            "fires": len(values),
            "p50_ms": rounded_percentile(values, 50),
            "p99_ms": rounded_percentile(values, 99),
        }
        for name, values in sorted(groups.items())
    }


def _settled_runs(
    stack: Any, mine: set[str], expected: set, *, start: int, end: int, wait_s: float = 60
) -> list[dict]:
    """The runs once the window's expected fires have all finished (a loaded machine
    runs them late), waiting at most ``wait_s`` more: what is still missing then is
    reported missing, not waited for."""
    deadline = time.time() + wait_s
    while True:
        runs = _all_runs(stack)
        window = _in_window(runs, mine, start=start, end=end)
        done = len(window) >= len(expected) and all(r.get("finished_at") for r in window)
        if done or time.time() >= deadline:
            return runs
        time.sleep(1)


@contextlib.contextmanager
def local_stack(*, quick: bool) -> Iterator[Any]:
    """The local stack as ``make run`` starts it: 60 s heartbeat (2 s when quick), 5 runners."""
    from tests.e2e.conftest import start_stack, stop_stack

    with tempfile.TemporaryDirectory(prefix="cronhook-bench-") as tmp:
        stack = start_stack(
            Path(tmp),
            heartbeat_s=2 if quick else 60,
            min_interval_s=1 if quick else 60,
            max_concurrency=5,
            env={"CRONHOOK_LOG_LEVEL": "WARNING"},
        )
        try:
            yield stack
        finally:
            stop_stack(stack)


def measure_lateness(
    *,
    triggers: int = 480,
    window_s: int = 360,
    min_fires: int = MIN_FIRES,
    quick: bool = False,
    stack: Any = None,
) -> dict:
    """Create ``triggers`` in a local stack, measure the fires of ``window_s`` seconds
    (longer if that holds fewer than ``min_fires``; not when quick)."""
    if stack is None:
        with local_stack(quick=quick) as started:
            return measure_lateness(
                triggers=triggers,
                window_s=window_s,
                min_fires=min_fires,
                quick=quick,
                stack=started,
            )
    heartbeat_s = 2 if quick else 60
    created_at = time.time()
    created = _create(stack, triggers, quick=quick)
    create_s = time.time() - created_at
    start, end = _window(
        created, period=heartbeat_s, window_s=window_s, min_fires=min_fires, quick=quick
    )
    window_s = end - start
    time.sleep(max(0.0, end - time.time()) + (5 if quick else 15))
    mine = {view["id"] for view, _ in created}
    expected = _expected(created, start, end)
    runs = _settled_runs(stack, mine, expected, start=start, end=end)
    window = _in_window(runs, mine, start=start, end=end)
    by_kind = _late_by_kind(window, created)
    return {
        **_lateness_of(window, expected, by_kind),
        "triggers": triggers,
        "window_s": window_s,
        "min_fires": 0 if quick else min_fires,
        "cron_fires_on_the_minute": sum(len(v) for k, v in by_kind.items() if k.startswith("cron")),
        "heartbeat_s": heartbeat_s,
        "create_s": round(create_s, 1),
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def _create(stack: Any, count: int, *, quick: bool) -> list[tuple[dict, dict]]:
    """``count`` triggers created over HTTP: each one's view and the schedule it was given."""
    created = []
    for body in _bodies(count, quick=quick):
        answer = stack.call("POST", "/v1/triggers", body)
        assert answer.status_code == 201, answer.text
        created.append((answer.json(), body["schedule"]))
    return created


def _expected(created: list[tuple[dict, dict]], start: int, end: int) -> set[tuple[str, int]]:
    """Every (trigger, slot) due in [start, end) (seconds)."""
    return {
        (view["id"], slot)
        for view, schedule_in in created
        for slot in _slots(schedule_in, view["created_at"], start * 1000, end * 1000)
    }


def _window(
    created: list[tuple[dict, dict]], *, period: int, window_s: int, min_fires: int, quick: bool
) -> tuple[int, int]:
    """The measured window (seconds): whole heartbeat periods, starting at the first tick
    after the last trigger exists (every trigger has been through a tick by then), and
    long enough for ``min_fires`` expected fires (whole periods are added until it is;
    not when quick)."""
    start = (int(time.time()) // period + 1) * period + period
    end = start + window_s
    while not quick and len(_expected(created, start, end)) < min_fires:
        end += period
    return start, end


def _in_window(runs: list[dict], mine: set[str], *, start: int, end: int) -> list[dict]:
    """The runs of the triggers ``mine`` whose slot is in [start, end) (seconds)."""
    return [
        r
        for r in runs
        if r["trigger_id"] in mine and start * 1000 <= _ms(r["scheduled_for"]) < end * 1000
    ]


def _late_by_kind(window: list[dict], created: list[tuple[dict, dict]]) -> dict[str, list[int]]:
    """The lateness (ms) of the fires that started, by their trigger's kind of schedule."""
    kind_of = {view["id"]: _kind(schedule_in) for view, schedule_in in created}
    by_kind: dict[str, list[int]] = {}
    for r in window:
        if r.get("started_at"):
            late = _ms(r["started_at"]) - _ms(r["scheduled_for"])
            by_kind.setdefault(kind_of[r["trigger_id"]], []).append(late)
    return by_kind


def _lateness_of(window: list[dict], expected: set, by_kind: dict[str, list[int]]) -> dict:
    """How late the window's fires started (in all, by crowd, by kind), how long they
    ran, and the window's bookkeeping: statuses, duplicated slots, missing fires."""
    lateness = [
        _ms(r["started_at"]) - _ms(r["scheduled_for"]) for r in window if r.get("started_at")
    ]
    durations = [
        _ms(r["finished_at"]) - _ms(r["started_at"])
        for r in window
        if r.get("started_at") and r.get("finished_at")
    ]
    statuses: dict[str, int] = {}
    for r in window:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    per_slot: dict[tuple[str, int], int] = {}
    for r in window:
        key = (r["trigger_id"], _ms(r["scheduled_for"]))
        per_slot[key] = per_slot.get(key, 0) + 1
    return {
        "lateness_p50_ms": rounded_percentile(lateness, 50),
        "lateness_p99_ms": rounded_percentile(lateness, 99),
        "lateness_max_ms": round(max(lateness)) if lateness else None,
        "lateness_mean_ms": round(statistics.mean(lateness)) if lateness else None,
        "fires": len(window),
        "not_succeeded": sum(1 for r in window if r["status"] != "succeeded"),
        "run_ms_p50": rounded_percentile(durations, 50) if durations else None,
        "statuses": statuses,
        "by_crowd": _by_crowd(window),
        "late_over_1s": sum(1 for v in lateness if v > 1000),
        "by_kind": {
            kind: {
                "fires": len(values),
                "p50_ms": rounded_percentile(values, 50),
                "p99_ms": rounded_percentile(values, 99),
            }
            for kind, values in sorted(by_kind.items())
        },
        "duplicated_slots": sum(1 for n in per_slot.values() if n > 1),
        "expected_fires": len(expected),
        "missing_fires": sum(
            1 for t, slot in expected if not any((t, slot + d) in per_slot for d in (-1, 0, 1))
        ),
    }
