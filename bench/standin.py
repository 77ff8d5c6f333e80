"""The fire path's lateness against a stand-in for AWS: a fixed latency per call.

The local stack's lateness (``bench/lateness.py``) is mostly the embedded AWS's speed: one
Python moto process answers every call of a :00 crowd on a shared 2-core machine. This
figure leaves the emulator out:

1. **Measured** (deterministic measures, not wall time): the real fire path runs in this
   process against moto (``bench/cost.py``'s fleet, one tick a minute, the queue drained
   as the event source mapping does), and for every fire the runner thread's own CPU time
   (``time.thread_time``: moto answers on other threads, so its work is not in it) and
   its AWS calls are counted, both up to the moment the workflow starts and in all.
2. **Stand-in**: an event-driven model of what AWS does with those fires. Every call
   takes ``call_ms``; a message lands up to a second before its slot (``DelaySeconds``
   rounded down, the heartbeat sends 30-90 s ahead) and the runner waits out the rest;
   the event source mapping hands a batch of up to 10 visible messages to one of
   ``environments`` warm environments ``pickup_ms`` after they are visible; a batch's
   fires run on threads of one environment, sharing its vCPU share (the deployed memory
   over 1,769 MB). A fire's lateness is when its workflow starts minus its slot.

The workload is the local-stack bench's (480 triggers: crons every 4 minutes on second
:00 in crowds of 60, intervals of 1-4 minutes spread over the minute), over
``minutes`` minutes, with the measured CPU and calls of a fire drawn in turn from the
measured ones. Cold starts are not modelled (warm environments).
"""

from __future__ import annotations

import heapq
import random
import statistics
import threading
import time
from dataclasses import dataclass

from bench.calls import CallLog
from bench.env import MotoEnv

__all__ = ["FireCost", "measure_fire_costs", "simulate", "lateness_on_standin", "fleet_slots"]

VCPU_MB = 1769


@dataclass(frozen=True)
class FireCost:
    """One fire as the runner spent it: CPU (ms) and AWS calls, before the workflow and in all."""

    cpu_start_ms: float
    calls_start: int
    cpu_total_ms: float
    calls_total: int


_probe = threading.local()


def measure_fire_costs(env: MotoEnv, *, triggers: int = 60, ticks: int = 3) -> list[FireCost]:
    """Run ``triggers`` 1-minute triggers for ``ticks`` minutes; each fire's CPU and calls."""
    from bench.cost import _Fleet, register_bench_workflows
    from chalicelib.workflows import REGISTRY, Result, workflow

    env.fresh()
    register_bench_workflows()
    if "bench-stamp" not in REGISTRY:

        @workflow("bench-stamp")
        def bench_stamp(fire):  # noqa: ANN001
            started = getattr(_probe, "started", None)
            if started is not None:
                _probe.at_start = (time.thread_time(), started[1].mark())
            return Result(output={"ok": True})

    costs: list[FireCost] = []
    with CallLog() as log:
        fleet = _Fleet(env, log, batch_size=10)
        handle = fleet.runner.handle

        def measured(message):  # noqa: ANN001, ANN202
            mark, cpu = log.mark(), time.thread_time()
            _probe.started, _probe.at_start = (cpu, log), None
            status = handle(message)
            at_start = _probe.at_start
            _probe.started = None
            if status == "succeeded" and at_start is not None:
                costs.append(
                    FireCost(
                        cpu_start_ms=1000 * (at_start[0] - cpu),
                        calls_start=at_start[1] - mark,
                        cpu_total_ms=1000 * (time.thread_time() - cpu),
                        calls_total=len(log.since(mark)),
                    )
                )
            return status

        fleet.runner.handle = measured  # type: ignore[method-assign]
        with log.pause():
            fleet.create(triggers, workflow="bench-stamp", schedule={"interval_s": 60}, state=False)
            for _ in range(2):  # warm: clients built, rows standing
                fleet.minute()
        costs.clear()
        for _ in range(ticks):
            fleet.minute()
    return costs


def fleet_slots(minutes: int, *, seed: int = 7) -> list[int]:
    """The slots (ms) of the local-stack bench's 480 triggers over ``minutes`` minutes."""
    rng = random.Random(seed)
    slots: list[int] = []
    for n in range(480):
        kind = n % 8
        if kind < 4:  # a cron every 4 minutes at offset ``kind``, on second :00
            slots += [m * 60_000 for m in range(minutes) if m % 4 == kind]
        else:  # an interval of 1-4 minutes, anchored where it was created
            period = (kind - 3) * 60_000
            anchor = rng.randrange(period)
            slots += list(range(anchor, minutes * 60_000, period))
    return sorted(slots)


def simulate(
    slots: list[int],
    costs: list[FireCost],
    *,
    call_ms: float,
    memory_mb: int,
    environments: int,
    pickup_ms: float = 50.0,
    batch_size: int = 10,
    seed: int = 11,
) -> list[float]:
    """Each fire's lateness (ms) on the stand-in, in slot order (see the module docstring)."""
    rng = random.Random(seed)
    share = min(1.0, memory_mb / VCPU_MB)
    # A message is visible from slot - early, early in [0, 1) s (DelaySeconds rounded down).
    visible = sorted((slot - rng.random() * 1000, slot, n) for n, slot in enumerate(slots))
    free_at = [0.0] * environments
    heapq.heapify(free_at)
    lateness: list[float] = []
    i = 0
    while i < len(visible):
        env_free = heapq.heappop(free_at)
        first_visible = visible[i][0]
        received = max(env_free, first_visible) + pickup_ms
        batch = []
        while i < len(visible) and len(batch) < batch_size and visible[i][0] <= received:
            batch.append(visible[i])
            i += 1
        fires = [costs[(n * 7919) % len(costs)] for _, _, n in batch]
        width = len(batch)
        # The batch's threads wait out their slot, then share the environment's CPU.
        begin = [max(received, slot) for _, slot, _ in batch]
        ends = []
        for (_, slot, _), at, cost in zip(batch, begin, fires, strict=True):
            start = at + width * cost.cpu_start_ms / share + cost.calls_start * call_ms
            lateness.append(start - slot)
            ends.append(at + width * cost.cpu_total_ms / share + cost.calls_total * call_ms)
        heapq.heappush(free_at, max(ends))
    return lateness


def lateness_on_standin(
    env: MotoEnv,
    *,
    triggers: int = 60,
    ticks: int = 3,
    minutes: int = 6,
    call_ms: float = 5.0,
    environments: int | None = None,
) -> dict:
    """The bench figure: the measured fire costs, the stand-in's lateness for the bench fleet."""
    from bench.cost import DEPLOYED
    from bench.lateness import rounded_percentile
    from chalicelib.settings import RUNNER_MAX_CONCURRENCY

    costs = measure_fire_costs(env, triggers=triggers, ticks=ticks)
    slots = fleet_slots(minutes)
    memory = DEPLOYED["memory_mb"]["runner"]
    ceiling = environments or RUNNER_MAX_CONCURRENCY
    out = simulate(slots, costs, call_ms=call_ms, memory_mb=memory, environments=ceiling)
    crowds: dict[int, int] = {}
    for slot in slots:
        crowds[slot // 1000] = crowds.get(slot // 1000, 0) + 1
    big = [late for late, slot in zip(out, slots, strict=True) if crowds[slot // 1000] > 50]
    return {
        "fires": len(slots),
        "p50_ms": rounded_percentile(out, 50, 1),
        "p99_ms": rounded_percentile(out, 99, 1),
        "max_ms": round(max(out), 1),
        "crowds_over_50_p99_ms": rounded_percentile(big, 99, 1) if big else None,
        "fire_cpu_ms_to_start": round(statistics.mean(c.cpu_start_ms for c in costs), 2),
        "fire_cpu_ms": round(statistics.mean(c.cpu_total_ms for c in costs), 2),
        "fire_calls_to_start": round(statistics.mean(c.calls_start for c in costs), 2),
        "fire_calls": round(statistics.mean(c.calls_total for c in costs), 2),
        "measured_fires": len(costs),
        "assumptions": (
            f"{call_ms:g} ms a call, {ceiling} warm environments of {memory} MB "
            f"({min(1.0, memory / VCPU_MB):.2f} vCPU), batches of 10, 50 ms pickup, "
            "landing up to 1 s early and waiting out the slot"
        ),
    }
