"""The heartbeat's claims on worker threads (``CRONHOOK_HEARTBEAT_WORKERS``).

The rest of the suite ticks with one worker (tests/conftest.py), so that call order, and
with it injected faults, stays the same from run to run; these tests run the same ticks
with several workers and compare.
"""

from __future__ import annotations

from chalicelib.services import heartbeat, triggers
from chalicelib.services.runner import Runner
from chalicelib.settings import reset_settings
from chalicelib.store.sqs import FireMessage
from tests.functional.test_protocol import EXECUTIONS, ticks_at_once


def _create_many(root, clock, count: int) -> list[str]:
    created = []
    for n in range(count):
        body = {"workflow": "count-executions", "schedule": {"interval_s": 60 + n}}
        created.append(triggers.create_trigger(root, body, now=clock())["id"])
    return created


def _workers(monkeypatch, n: int) -> None:
    monkeypatch.setenv("CRONHOOK_HEARTBEAT_WORKERS", str(n))
    reset_settings()


def test_a_tick_on_eight_workers_claims_every_due_trigger_once_most_urgent_first(
    aws, clock, root, monkeypatch
):
    _workers(monkeypatch, 8)
    created = _create_many(root, clock, 40)
    clock.advance(120)
    report = heartbeat.tick(now=clock())
    assert (report.due, report.claimed, report.errors, report.lost_races) == (40, 40, 0, 0)
    assert sorted(r.split(".")[0] for r in report.run_ids) == sorted(created)
    # Sent in the order of their slots (most urgent first), as with one worker.
    slots = [int(r.split(".")[1][:13]) for r in report.run_ids]
    assert slots == sorted(slots)
    aws.purge_delays()
    messages = []
    while batch := aws.receive():
        messages += [FireMessage.parse(m["Body"]) for m in batch]
    assert sorted(m.run_id for m in messages) == sorted(report.run_ids)
    # The next tick at the same instant finds nothing left to claim.
    again = heartbeat.tick(now=clock())
    assert (again.claimed, again.enqueued) == (0, 0)


def test_workers_give_the_same_report_as_one(aws, clock, root, monkeypatch):
    _create_many(root, clock, 12)
    clock.advance(120)
    _workers(monkeypatch, 1)
    one = heartbeat.tick(now=clock())
    aws.drain(Runner(clock=clock))
    clock.advance(60 * 20)
    _workers(monkeypatch, 6)
    many = heartbeat.tick(now=clock())
    counts = ("due", "claimed", "lost_races", "skipped", "busy", "reaped", "errors")
    assert {k: getattr(one, k) for k in counts} == {k: getattr(many, k) for k in counts}
    assert many.claimed == 12 and many.enqueued == 12


def test_concurrent_heartbeats_each_on_workers_dispatch_each_slot_once(
    aws, clock, root, monkeypatch
):
    monkeypatch.setenv("CRONHOOK_DUE_SHARDS", "1")
    _workers(monkeypatch, 4)
    ids = _create_many(root, clock, 8)
    runner = Runner(clock=clock)
    EXECUTIONS.clear()
    for round_no in range(5):
        clock.advance(120)
        now = clock()
        reports = ticks_at_once(6, now=now)
        claimed = [run_id for r in reports for run_id in r.run_ids]
        assert len(claimed) == len(set(claimed)) == 8, f"round {round_no}: {claimed}"
        assert sorted({c.split(".")[0] for c in claimed}) == sorted(ids)
        assert sorted(aws.drain(runner)) == ["succeeded"] * 8
    assert set(EXECUTIONS.values()) == {1}
