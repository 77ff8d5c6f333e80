"""``BENCH_ONLY=journal``: what the embedded AWS's write-ahead journal costs a write (issue 26).

Two embedded AWS processes, as the local stack starts them (``EmbeddedAws``): one with
no data dir (nothing journaled, as before issue 26 between two saves) and one saving to a
temporary data dir (every write journaled and fsync'd before its answer). The same
table; the same writes from boto3 over HTTP: a PutItem of a ~300-byte item, then a
conditional UpdateItem of it (the shape of a claim), one client, one after another
(each write waits for its own fsync), and then 8 client threads (fsyncs shared by the
writes that arrive together: the group commit). Reported: the median and p99 ms per
write each way, and the difference per write.
"""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["measure_journal_cost"]

_TABLE = "cronhook-local-bench-journal"


def _client(endpoint: str) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client(
        "dynamodb",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
        config=Config(max_pool_connections=16, retries={"max_attempts": 1}),
    )


def _writes(ddb: Any, prefix: str, n: int) -> list[float]:
    """``n`` PutItem + UpdateItem pairs; the ms each write took."""
    took = []
    for i in range(n):
        key = {"id": {"S": f"{prefix}-{i}"}}
        item = {**key, "body": {"S": "x" * 300}, "v": {"N": "0"}}
        started = time.perf_counter()
        ddb.put_item(TableName=_TABLE, Item=item)
        took.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        ddb.update_item(
            TableName=_TABLE,
            Key=key,
            UpdateExpression="SET v = :one",
            ConditionExpression="v = :zero",
            ExpressionAttributeValues={":one": {"N": "1"}, ":zero": {"N": "0"}},
        )
        took.append((time.perf_counter() - started) * 1000)
    return took


def _measure(endpoint: str, *, n: int, threads: int) -> dict:
    ddb = _client(endpoint)
    ddb.create_table(
        TableName=_TABLE,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    _writes(ddb, "warm", 20)
    one = _writes(ddb, "one", n)
    many: list[float] = []
    lock = threading.Lock()

    def worker(w: int) -> None:
        took = _writes(_client(endpoint), f"t{w}", n // threads)
        with lock:
            many.extend(took)

    started = time.perf_counter()
    pool = [threading.Thread(target=worker, args=(w,)) for w in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    wall_s = time.perf_counter() - started
    return {
        "one_client_p50_ms": round(statistics.median(one), 2),
        "one_client_p99_ms": round(_p99(one), 2),
        f"{threads}_threads_p50_ms": round(statistics.median(many), 2),
        f"{threads}_threads_writes_per_s": round(len(many) / wall_s),
    }


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def measure_journal_cost(*, quick: bool = False) -> dict:
    """Per-write latency of the embedded AWS without and with the journal."""
    from devstack.embedded_aws import EmbeddedAws
    from tests.ports import free_port

    n, threads = (100, 4) if quick else (400, 8)
    results: dict[str, Any] = {"writes_each_way": 2 * n, "threads": threads}
    # Where ``make run`` keeps its data dir (.cronhook under the working directory): the
    # fsync's cost is the file system's.
    with tempfile.TemporaryDirectory(prefix=".bench-journal-", dir=Path.cwd()) as data_dir:
        for name, save_to in (("unjournaled", None), ("journaled", Path(data_dir) / "t.json")):
            aws = EmbeddedAws(port=free_port(), save_to=save_to)
            aws.start()
            try:
                results[name] = _measure(aws.endpoint, n=n, threads=threads)
            finally:
                aws.stop()
    base, with_journal = results["unjournaled"], results["journaled"]
    results["added_ms_per_write_p50"] = round(
        with_journal["one_client_p50_ms"] - base["one_client_p50_ms"], 2
    )
    results["journal_dir"] = str(Path.cwd())
    return results
