"""bench/cost.py prices run storage per record kept, so ``history: failures`` shows its saving."""

from __future__ import annotations

from bench.calls import Call
from bench.cost import _run_records, deployed_bill


def _measured(run_records: float) -> dict:
    per_fire = {
        "dynamodb_wru": 4.0,
        "dynamodb_rru": 0.1,
        "state_read_rru": 0.0,
        "sqs_requests": 0.3,
        "runner_invocations": 0.1,
        "heartbeat_invocations": 0.01,
        "lambda_invocations": 0.11,
        "runner_ms_per_fire": 30.0,
        "heartbeat_ms_per_fire": 3.0,
        "run_records": run_records,
    }
    logs = {"fire line": 600.0}
    return {
        "per_fire": per_fire,
        "logs": logs,
        "logs_before_cut": logs,
        "run_record_bytes": 308.0,
    }


def test_run_storage_and_pitr_are_priced_per_record_kept():
    full = deployed_bill(_measured(1.0))["lines"]
    failures = deployed_bill(_measured(0.0))["lines"]
    assert full["run storage"] > 0 and full["PITR (runs table)"] > 0
    assert failures["run storage"] == failures["PITR (runs table)"] == 0
    half = deployed_bill(_measured(0.5))["lines"]
    assert abs(half["run storage"] - full["run storage"] / 2) < 1e-3


def test_only_puts_to_the_runs_table_count_as_run_records():
    from chalicelib.store.runs import RunModel

    runs = RunModel.Meta.table_name
    calls = [
        Call("dynamodb", "PutItem", "store.runs.put_run", table=runs),
        Call("dynamodb", "PutItem", "store.events.put", table="events"),
        Call("dynamodb", "UpdateItem", "store.runs.x", table=runs),
    ]
    assert _run_records(calls) == 1
