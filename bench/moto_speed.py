"""``BENCH_ONLY=moto``: the embedded AWS's moto patches, stock moto against patched.

The shapes of the fire path and the webhook burst (issue 12), on the bench's moto server
over HTTP, each timed on stock moto and then with ``devstack.moto_sqs_speed`` and
``moto_dynamo_speed`` applied (undone afterwards: the other sections see stock moto):

- SQS: the fire queue with the lookahead's delayed messages (3,000 delayed, 200 visible):
  a batch of 10 sends, a receive of 10, a delete.
- DynamoDB: 1,000 triggers over 4 due shards and 2,000 queued events of one trigger:
  a due-index read of one shard, the events' ``waiting_count`` (cap 1,000) and
  ``queue_of`` (the head), a page of events, and a first-fire ``mark_stateless``
  transaction.
- DynamoDB Query alone (``moto_query_speed``): moto's backend called directly, no HTTP,
  on the same tables: a page of 50 of the trigger's pending queue (KEYS_ONLY), the same
  from the queue's middle (``ExclusiveStartKey``), a trigger with nothing queued (cost of
  the table, not the partition), and ``iter_due``'s page of 500 of one due shard.
- ``dynamodb_items_kept``: the items moto's dashboard list kept during the DynamoDB
  rounds (stock moto keeps every copy a query makes, for the process's life).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

__all__ = ["measure_moto_speed", "as_embedded"]

T0_MS = 1_800_000_000_000
_ABSENT = object()


def _patches() -> list[tuple[Any, str]]:
    from devstack.moto_dynamo_speed import patched_dynamodb_names
    from devstack.moto_sqs_speed import patched_sqs_names

    return patched_sqs_names() + patched_dynamodb_names()


def _apply() -> None:
    from devstack.moto_dynamo_speed import make_dynamodb_fast
    from devstack.moto_sqs_speed import make_sqs_fast

    make_sqs_fast()
    make_dynamodb_fast()


@contextmanager
def as_embedded() -> Iterator[None]:
    """moto as the local stack's embedded AWS runs it (the speed patches), then stock again.

    A section that measures cronhook against many queued messages (the heartbeat's
    10,000 fires) would otherwise measure stock moto's scans of its queue.
    """
    saved = [(owner, name, owner.__dict__.get(name, _ABSENT)) for owner, name in _patches()]
    _apply()
    try:
        yield
    finally:
        for owner, name, value in saved:
            if value is _ABSENT:
                delattr(owner, name)  # the patch added it (``Item.__new__``)
            else:
                setattr(owner, name, value)


def _ms_each(call: Callable[[], Any], times: int) -> float:
    started = time.perf_counter()
    for _ in range(times):
        call()
    return round((time.perf_counter() - started) / times * 1000, 2)


def _fill_queue(name: str, *, delayed: int, visible: int) -> None:
    """The queue's state without the (quadratic, on stock moto) sends: straight into moto."""
    from moto.sqs.models import Message, sqs_backends

    for accounts in sqs_backends.values():
        for backend in accounts.values():
            if name not in backend.queues:
                continue
            queue = backend.queues[name]
            for i in range(delayed + visible):
                message = Message(f"m{i}", f'{{"n":{i}}}')
                message.mark_sent(delay_seconds=900 if i < delayed else 0)
                queue._messages.append(message)


def _sqs_round(mode: str, *, delayed: int, visible: int, receives: int) -> dict:
    from chalicelib.store.aws import client

    sqs = client("sqs")
    name = f"bench-moto-{mode}"
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    _fill_queue(name, delayed=delayed, visible=visible)
    batch = [{"Id": str(j), "MessageBody": "x", "DelaySeconds": 900} for j in range(10)]
    handles: list[str] = []

    def receive() -> None:
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=600)
        handles.extend(m["ReceiptHandle"] for m in got.get("Messages", []))

    out = {
        "send_batch_of_10_ms": _ms_each(
            lambda: sqs.send_message_batch(QueueUrl=url, Entries=batch), 3
        ),
        "receive_10_ms": _ms_each(receive, receives),
    }
    out["received"] = len(handles)
    out["delete_ms"] = _ms_each(
        lambda: sqs.delete_message(QueueUrl=url, ReceiptHandle=handles.pop()), 10
    )
    sqs.delete_queue(QueueUrl=url)
    return out


def _fill_tables(*, triggers: int, events: int) -> None:
    """Seed the tables with raw items (this bench measures the embedded DynamoDB itself)."""
    from bench.trigger_table import write_items
    from chalicelib.store.tables import table_name
    from chalicelib.store.triggers import shard_of

    def s(value: str) -> dict:
        return {"S": value}

    def n(value: int) -> dict:
        return {"N": str(value)}

    rows = []
    for i in range(triggers):
        tid, due = f"trg_{i:05d}", T0_MS + (i * 997) % 120_000
        rows.append({
            "id": s(tid), "tenant": s("t1"), "workflow": s("echo"), "kind": s("schedule"),
            "spec": s('{"a":1}' * 20), "sched": s('{"every":60}'), "status": s("active"),
            "due_shard": s(shard_of(tid, 4)), "due_at": n(due), "next_fire_at": n(due),
            "in_flight": {"M": {}}, "consecutive_failures": n(0), "run_count": n(0),
            "created_ms": n(T0_MS), "updated_ms": n(T0_MS), "version": n(1),
        })  # fmt: skip
    write_items(rows)
    rows = []
    for i in range(events):
        eid, ms = f"evt_{i:05d}", T0_MS + i
        rows.append({
            "id": s(eid), "trigger_id": s("trg_00001"), "tenant": s("t1"),
            "received_ms": n(ms), "received_sk": s(f"{ms:013d}#{eid}"), "status": s("pending"),
            "run_id": s(f"run_{i}"), "source": s("github"),
            "body": s('{"x":"' + "y" * 600 + '"}'), "headers": s('{"a":"b"}'),
            "pending_trigger": s("trg_00001"), "pending_shard": s(str(i % 4)),
            "pending_sk": s(f"{ms:013d}#run_{i}"), "attempt": n(0), "body_size": n(0),
        })  # fmt: skip
    write_items(rows, table=table_name("events"))


def _dynamodb_round(first_trigger: int, repeats: int) -> dict:
    from chalicelib.store import event_reads
    from chalicelib.store.state import mark_stateless
    from chalicelib.store.triggers import iter_due

    fresh = iter(range(first_trigger, first_trigger + repeats))
    return {
        "due_index_shard_ms": _ms_each(
            lambda: list(iter_due("0", until_ms=T0_MS + 60_000)), repeats
        ),
        "waiting_count_ms": _ms_each(
            lambda: event_reads.waiting_count("trg_00001", cap=1000), repeats
        ),
        "queue_head_ms": _ms_each(lambda: event_reads.queue_of("trg_00001", limit=1), repeats),
        "events_page_50_ms": _ms_each(
            lambda: event_reads.events_page("trg_00001", limit=50, cursor=None), repeats
        ),
        "mark_stateless_txn_ms": _ms_each(
            lambda: mark_stateless(f"trg_{next(fresh):05d}", version=1), repeats
        ),
    }


def _query_backend(table_name: str) -> Any:
    from moto.dynamodb.models import dynamodb_backends

    for accounts in dynamodb_backends.values():
        for backend in accounts.values():
            if table_name in backend.tables:
                return backend
    raise LookupError(table_name)


def _key_query(table: str, index: str, hash_attr: str, hash_value: dict, **options: Any) -> Any:
    """A call of moto's backend query as moto's Query handler makes it (key equality, and
    an optional ``range=(attr, operator, [values])``)."""
    backend = _query_backend(table)
    ranges = [options.pop("range")] if "range" in options else []

    def query() -> Any:
        return backend.query(
            table, hash_value, ranges[0][1] if ranges else None, ranges[0][2] if ranges else [],
            options.get("limit"), options.get("start"), options.get("forward", True), None,
            index_name=index, hash_key_conditions=[(hash_attr, hash_value)],
            range_key_conditions=ranges,
        )  # fmt: skip

    return query


def _query_round(repeats: int) -> dict:
    from chalicelib.store.tables import table_name

    events, triggers = table_name("events"), table_name("triggers")
    queue = {"S": "trg_00001"}
    middle = _key_query(events, "pending_by_trigger", "pending_trigger", queue, limit=1000)
    start = {name: value.to_json() for name, value in middle()[2].items()}  # as JSON sends it
    due = ("due_at", "<=", [{"N": str(T0_MS + 60_000)}])
    calls = {
        "queue_page_50_ms": _key_query(
            events, "pending_by_trigger", "pending_trigger", queue, limit=50
        ),
        "queue_page_50_from_middle_ms": _key_query(
            events, "pending_by_trigger", "pending_trigger", queue, limit=50, start=start
        ),
        "empty_queue_ms": _key_query(
            events, "pending_by_trigger", "pending_trigger", {"S": "trg_00002"}, limit=50
        ),
        "due_shard_page_500_ms": _key_query(
            triggers, "due", "due_shard", {"S": "0"}, limit=500, range=due
        ),
    }
    out = {name: _ms_each(call, repeats) for name, call in calls.items()}
    out["queue_page_rows"] = len(calls["queue_page_50_ms"]()[0])
    out["due_shard_rows"] = len(calls["due_shard_page_500_ms"]()[0])
    return out


def measure_moto_speed(env: Any, *, quick: bool = False) -> dict:
    """Per-call milliseconds, stock and patched moto, on the same shapes."""
    delayed, visible, receives = (300, 60, 3) if quick else (3000, 200, 5)
    triggers, events, repeats = (200, 400, 3) if quick else (1000, 2000, 5)
    env.fresh()
    _fill_tables(triggers=triggers, events=events)
    results: dict = {
        "sizes": {"delayed": delayed, "visible": visible, "triggers": triggers, "events": events}
    }
    from moto.dynamodb.models.dynamo_type import Item

    for mode, first in (("stock", 100), ("patched", 100 + repeats)):
        with as_embedded() if mode == "patched" else nullcontext():
            results[mode] = {
                "sqs": _sqs_round(mode, delayed=delayed, visible=visible, receives=receives)
            }
            kept = len(Item.instances_tracked)
            results[mode]["dynamodb"] = _dynamodb_round(first, repeats)
            results[mode]["dynamodb_query"] = _query_round(repeats)
            # moto's dashboard list: every item a query copied, kept for the process's life
            results[mode]["dynamodb_items_kept"] = len(Item.instances_tracked) - kept
    return results
