"""heartbeat_read_ratio: a tick reads what is due, not what is registered.

Triggers are written straight into the table in batches of 25 (the API would take
minutes for 100,000), each a daily interval trigger whose next slot is spread over the
next day; 1 % of them have their slot within the last minute. One tick then runs with
every DynamoDB call counted: items read (``ScannedCount`` of queries and scans, plus
every item a GetItem or BatchGetItem returns) divided by the due count.
"""

from __future__ import annotations

import contextlib
import random
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime

from bench.calls import CallLog
from bench.env import MotoEnv
from bench.trigger_table import (
    DAY_S,
    NOW,
    forget_cursors,
    item_template,
    set_cursors,
    slot_item,
    warm_clients,
    write_items,
)

__all__ = ["measure_read_ratio", "measure_enqueue", "NOW"]


def _record(report, calls, due_count, ratios, tick_ms, claims_per_s, reads, dues) -> None:
    read = sum(c.items_read for c in calls)
    ratios.append(read / max(1, report.due))
    tick_ms.append(report.duration_ms)
    claims_per_s.append(report.due / max(1e-9, report.duration_ms / 1000))
    reads.append(read)
    dues.append(report.due)
    assert report.due == due_count, (report.due, due_count)


@contextlib.contextmanager
def _whole_tick() -> Iterator[None]:
    """One inline tick reaches every due row: its 40 s budget lifted for the measure.

    The inline tick claims about 20 slots a second on the bench's moto, so 1,000 due
    rows take longer than ``TICK_BUDGET_S``, and the tick hands the rest to the next
    one (it did: 766 of 1,000 reached). The read ratio is a property of one whole pass;
    deployed, the ticks fan out per shard (``measure_enqueue``)."""
    from chalicelib.services.heartbeat import shards

    budget = shards.TICK_BUDGET_S
    shards.TICK_BUDGET_S = 600.0
    try:
        yield
    finally:
        shards.TICK_BUDGET_S = budget


def measure_read_ratio(env: MotoEnv, *, registered: int, repeats: int, seed: int = 7) -> dict:
    """Register ``registered`` triggers (1 % due), run ``repeats`` ticks; medians."""
    from chalicelib import assembly
    from chalicelib.settings import get_settings

    env.fresh()
    settings = get_settings()
    rng = random.Random(seed)
    now_ms = int(NOW.timestamp() * 1000)
    template = item_template()
    due_count = max(1, registered // 100)
    due_numbers = set(rng.sample(range(registered), due_count))
    horizon_ms = (settings.lookahead_s + 60) * 1000

    def due_slot() -> int:
        return now_ms - rng.randrange(0, 59_000)

    started = time.perf_counter()
    items = []
    due_items = []
    for n in range(registered):
        if n in due_numbers:
            item = slot_item(template, n, due_slot(), settings.due_shards)
            due_items.append(item)
        else:
            slot = now_ms + horizon_ms + rng.randrange(0, DAY_S * 1000)
            item = slot_item(template, n, slot, settings.due_shards)
        items.append(item)
    write_items(items)
    register_s = time.perf_counter() - started

    ratios, tick_ms, claims_per_s, reads, dues = [], [], [], [], []
    with CallLog() as log, _whole_tick():
        warm_clients()
        for _ in range(repeats):
            mark = log.mark()
            report = assembly.tick(now=NOW)
            calls = [c for c in log.since(mark) if c.service == "dynamodb"]
            _record(report, calls, due_count, ratios, tick_ms, claims_per_s, reads, dues)
            # Put the due triggers (and the cursors) back as they were, for the next repeat.
            with log.pause():
                write_items(due_items)
                forget_cursors()
    return {
        "registered": registered,
        "due": int(statistics.median(dues)),
        "items_read": int(statistics.median(reads)),
        "read_ratio": round(statistics.median(ratios), 3),
        "tick_ms": round(statistics.median(tick_ms), 1),
        "claims_per_s": round(statistics.median(claims_per_s), 1),
        "register_s": round(register_s, 1),
        "repeats": repeats,
    }


def _take_ticks() -> list[str]:
    """Every tick message queued (what the enqueuers' event source mapping receives)."""
    from chalicelib.settings import get_settings
    from chalicelib.store.aws import client

    sqs, url = client("sqs"), get_settings().tick_queue_url
    bodies: list[str] = []
    while got := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        bodies += [m["Body"] for m in got]
        entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)]
        sqs.delete_message_batch(QueueUrl=url, Entries=entries)
    return bodies


def _enqueuers(bodies: list[str], *, tick_started: float) -> tuple[list, float]:
    """Each tick message on a thread of its own (a Lambda environment per shard): their
    reports and the CPU they spent (each thread's own: moto's threads are not counted).

    An enqueuer's clock is the tick's ``NOW`` plus the real time since the tick began, so
    its DelaySeconds and its ``sent_late`` count the time the fan-out took.
    """
    from datetime import timedelta

    from chalicelib import assembly

    reports: list = []
    cpu: list[float] = []
    lock = threading.Lock()

    def clock() -> datetime:
        return NOW + timedelta(seconds=time.perf_counter() - tick_started)

    def enqueuer(body: str) -> None:
        at = time.thread_time()
        done = assembly.tick_messages([body], clock=clock, remaining_s=lambda: 60.0)
        with lock:
            reports.extend(r for r in done if r is not None)
            cpu.append(time.thread_time() - at)

    threads = [threading.Thread(target=enqueuer, args=(b,)) for b in bodies]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return reports, sum(cpu)


def _one_tick(*, fanout: bool) -> tuple[int, int, float, float, bool]:
    """One heartbeat tick at ``NOW`` (and its enqueuers, fanned out): enqueued, sent
    late, the heartbeat's CPU, the enqueuers' CPU, whether a shard handed over."""
    from chalicelib import assembly

    started, at = time.perf_counter(), time.thread_time()
    report = assembly.tick(now=NOW)
    heartbeat_cpu = time.thread_time() - at
    reports = [report]
    enqueuer_cpu = 0.0
    if fanout:
        found, enqueuer_cpu = _enqueuers(_take_ticks(), tick_started=started)
        reports += found
    enqueued = sum(r.enqueued for r in reports)
    late = sum(r.sent_late for r in reports)
    handed_over = any(r.handed_over for r in reports)
    return enqueued, late, heartbeat_cpu, enqueuer_cpu, handed_over


def measure_enqueue(
    env: MotoEnv,
    *,
    due: int,
    latency_ms: float,
    repeats: int,
    fanout: bool = False,
    shards: int | None = None,
    first_tick: bool = False,
) -> dict:
    """``due`` fires due within one minute, enqueued by one tick, every AWS call delayed
    by ``latency_ms`` (a ``before-send`` hook: the thread waits as on the network).

    The minute is the one the tick at ``NOW`` is for: in steady state the tick before it
    (one heartbeat period earlier) sent the slots up to its horizon, so each shard's
    cursor is there, and this tick's new slots are the minute after it
    (``settings.default_lookahead_s``: 30 s after ``NOW`` with the 60 s heartbeat). The
    first 10 % are due in that minute's first second (a :00 crowd). ``first_tick``: the
    first tick of a new stack instead (no cursor), with the same minute starting at
    ``NOW``: its first slots are due while the tick is still reading.

    Reports the tick's wall time, its CPU time per fire (what a Lambda is billed for once
    the network is free), and how many messages went out after their own second
    (``sent_late``; the goal is 0). The heartbeat claims nothing, so its cost per fire is
    a share of one query page and of one SendMessageBatch.

    ``fanout``: the heartbeat sends one tick message per due shard (``shards`` of them)
    and an enqueuer per message, each on its own thread, reads its shard; the heartbeat's
    and the enqueuers' CPU are counted apart (each thread's own CPU, moto's excluded).
    """
    import os

    extra = {"CRONHOOK_DUE_SHARDS": str(shards)} if shards else {}
    env.fresh(**extra, CRONHOOK_FANOUT_SHARDS="1" if fanout else "0")
    if fanout:
        _tick_queue()
    from bench.moto_speed import as_embedded

    try:
        # moto as the local stack runs it: stock moto scans its whole queue on every send
        # and receive, and a minute's 10,000 delayed fires made each batch take seconds.
        with as_embedded():
            return _measure_enqueue(
                due=due, latency_ms=latency_ms, repeats=repeats, fanout=fanout, first=first_tick
            )
    finally:  # the next sections run with the stack's defaults
        for name in ("CRONHOOK_DUE_SHARDS", "CRONHOOK_FANOUT_SHARDS", "CRONHOOK_TICK_QUEUE_URL"):
            if name in extra or name != "CRONHOOK_DUE_SHARDS":
                os.environ.pop(name, None)
        from chalicelib.settings import reset_settings

        reset_settings()


def _measure_enqueue(
    *, due: int, latency_ms: float, repeats: int, fanout: bool, first: bool
) -> dict:
    from chalicelib.services import heartbeat
    from chalicelib.settings import get_settings

    now_ms = int(NOW.timestamp() * 1000)
    settings = get_settings()
    shards = settings.due_shards
    # Where the tick before left the cursors: its horizon (None on a first tick).
    cursor_ms = None if first else now_ms + (settings.lookahead_s - settings.heartbeat_s) * 1000
    start_ms = now_ms if cursor_ms is None else cursor_ms
    write_items(_minute_items(due, start_ms, shards))
    warm_clients()
    rows = [
        _enqueue_minute(due=due, latency_ms=latency_ms, fanout=fanout, cursor_ms=cursor_ms)
        for _ in range(repeats)
    ]
    wall_ms, cpu_s, late, ticks, first_tick, hb_cpu, enq_cpu = (
        statistics.median(col) for col in zip(*rows, strict=True)
    )
    return {
        "due": due,
        "latency_ms": latency_ms,
        "repeats": repeats,
        "fanout": fanout,
        "first_tick": first,
        "lookahead_s": settings.lookahead_s,
        "heartbeat_s": settings.heartbeat_s,
        # The minute's first slot, after NOW (the tick's instant).
        "minute_starts_after_tick_s": (start_ms - now_ms) / 1000,
        "shards": shards,
        "tick_budget_s": heartbeat.TICK_BUDGET_S,
        "ticks": int(ticks),
        "enqueued_by_first_tick": int(first_tick),
        "wall_ms": round(wall_ms, 1),
        # moto runs in this process: its CPU is in here too (an upper bound for a Lambda).
        "cpu_ms_per_fire": round(cpu_s * 1000 / due, 3),
        # The heartbeat's own thread, and the enqueuers' threads: the client's CPU only.
        "heartbeat_cpu_ms_per_fire": round(hb_cpu * 1000 / due, 4),
        "heartbeat_cpu_ms": round(hb_cpu * 1000, 1),
        "enqueuer_cpu_ms_per_fire": round(enq_cpu * 1000 / due, 4),
        "sent_after_their_second": int(late),
    }


def _minute_items(due: int, start_ms: int, shards: int) -> list[dict]:
    """``due`` trigger items due within the minute after ``start_ms``: spread over the
    minute, the first 10 % in the first second (a :00 burst)."""
    template = item_template()
    return [
        slot_item(
            template,
            n,
            start_ms + 1 + (n * 60_000 // due if n >= due // 10 else n % 1000),
            shards,
        )
        for n in range(due)
    ]


def _delayed(latency_ms: float) -> Callable[[object], list]:
    """A ``hooked`` registrar: every DynamoDB and SQS call waits ``latency_ms`` first."""

    def delayed(client: object) -> list:
        def sleep(**kwargs: object) -> None:
            time.sleep(latency_ms / 1000)

        return [("before-send.dynamodb", sleep), ("before-send.sqs", sleep)]

    return delayed


def _enqueue_minute(
    *, due: int, latency_ms: float, fanout: bool, cursor_ms: int | None
) -> tuple[float, float, int, int, int, float, float]:
    """One repeat: the cursors set, then ticks at ``NOW`` until the minute's ``due`` fires
    are sent; the cursors forgotten and the queue purged after. Answers the wall time (ms),
    the process's CPU (s), the fires sent late, the ticks, the fires the first tick sent,
    and the heartbeat's and the enqueuers' CPU (s)."""
    from bench.hooks import hooked
    from chalicelib.settings import get_settings
    from chalicelib.store.aws import client

    set_cursors(cursor_ms)
    # A tick that runs out of its budget hands over to the next (here at the same
    # instant, so what is measured is the work, not the minute between ticks).
    cpu = time.process_time()
    started = time.perf_counter()
    enqueued, late, ticks, first_tick, hb_cpu, enq_cpu = 0, 0, 0, 0, 0.0, 0.0
    with hooked(_delayed(latency_ms)):
        while enqueued < due and ticks < 20:
            sent, sent_late, heartbeat_cpu, enqueuer_cpu, _ = _one_tick(fanout=fanout)
            enqueued += sent
            late += sent_late
            hb_cpu += heartbeat_cpu
            enq_cpu += enqueuer_cpu
            ticks += 1
            first_tick = first_tick or sent
    wall_ms = (time.perf_counter() - started) * 1000
    cpu_s = time.process_time() - cpu
    assert enqueued == due, (enqueued, due)
    forget_cursors()
    client("sqs").purge_queue(QueueUrl=get_settings().queue_url)
    return wall_ms, cpu_s, late, ticks, first_tick, hb_cpu, enq_cpu


def _tick_queue() -> None:
    """The tick queue of the fanned-out heartbeat, and the settings naming it."""
    import os

    from chalicelib.settings import reset_settings
    from chalicelib.store.aws import client

    url = client("sqs").create_queue(QueueName="cronhook-ticks")["QueueUrl"]
    os.environ["CRONHOOK_TICK_QUEUE_URL"] = url
    reset_settings()
