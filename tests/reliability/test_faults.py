"""Fault injection: 10 % of DynamoDB and SQS calls fail (throttles, 500s, timeouts, and
replies lost after the write was applied) over 1,000 scheduled fires.

The heartbeat and the runners are driven with an explicit clock. A tick never fails
as a whole (a failed call costs its own row, which the next tick retries); a runner
invocation that fails comes back as Lambda's event source mapping would redeliver it.
Then the faults stop, the clock runs past every lease, and:

- no fire ran twice (counted inside the workflow, by fire id);
- every due slot ended one way: it ran exactly once, or it has a run record saying
  ``failed``/``skipped``/``lost`` with a reason, or it was passed by a late fire of an
  earlier slot (``catchup: latest``, the default: after an outage a trigger fires once,
  not once per missed slot): merged into it with no record when the fire came within
  ``MISSED_AFTER_S``, recorded ``missed`` with a reason when it came later;
- no claim is stuck: every trigger's ``in_flight`` is empty and it fires again.
"""

from __future__ import annotations

import itertools
from collections import defaultdict

import pytest

from bench.hooks import hooked
from chalicelib import assembly
from chalicelib.domain.epoch_ms import ms as _ms
from chalicelib.domain.ids import schedule_run_id
from chalicelib.services import triggers
from chalicelib.services.triggers import create as trigger_create
from chalicelib.settings import get_settings
from chalicelib.store import claims as claims_store
from chalicelib.store import triggers as triggers_store
from chalicelib.store.triggers import TriggerModel
from tests.reliability.faults import FaultInjector
from tests.scenarios import Esm, runs_of

TRIGGERS = 100
FAULT_MINUTES = 10  # 100 triggers x 10 minutes = 1,000 due slots under faults
MINUTE_MS = 60_000
TERMINAL = {"succeeded", "failed", "skipped", "lost", "missed"}


@pytest.mark.soak
@pytest.mark.parametrize("seed", [20261130])
def test_faults_never_run_a_fire_twice_or_lose_one_silently_or_leave_a_claim_stuck(
    aws, clock, root, executions, monkeypatch, seed
):
    numbers = itertools.count()
    monkeypatch.setattr(trigger_create, "new_trigger_id", lambda: f"trg_fault{next(numbers):011d}")
    start_ms = _ms(clock())
    trigger_ids = [
        triggers.create_trigger(
            root,
            {
                "workflow": "count-executions",
                "payload": {"stateless": True},
                "schedule": {"interval_s": 60},
                "limits": {"max_failures": 1000},
            },
            now=clock(),
        )["id"]
        for _ in range(TRIGGERS)
    ]

    # Every claim attempt, with the time of the tick that made it (run id -> [ms]).
    claim_times: dict[str, list[int]] = defaultdict(list)
    real_claim = claims_store.claim_slot_and_start

    def claim_slot_and_start(trigger_id, **kwargs):
        claim_times[kwargs["run_id"]].append(_ms(clock()))
        return real_claim(trigger_id, **kwargs)

    monkeypatch.setattr(claims_store, "claim_slot_and_start", claim_slot_and_start)

    injector = FaultInjector(seed=seed, rate=0.10)
    runner = assembly.build_runner(clock=clock)
    esm = Esm(aws, runner, rounds=200)
    with hooked(injector.register):
        injector.active = True
        for _ in range(FAULT_MINUTES):
            clock.advance(60)
            # Never raises: a failed call costs only its own row, never the whole tick
            # (whose claims already made would then be lost until their leases expire).
            assembly.tick(now=clock())
            esm.drain()
        injector.active = False
        last_fault_ms = _ms(clock())

        # Faults stop. One tick past every lease (a claim's, and a started run's) reaps
        # what is stuck and fires every trigger again.
        settings = get_settings()
        clock.advance(max(settings.lease_s, settings.runner_timeout_s + 60) + 60)
        assembly.tick(now=clock())
        esm.drain()

    assert injector.total() >= 100, injector.injected  # the faults did happen
    assert all(n == 1 for n in executions.values()), {k: n for k, n in executions.items() if n != 1}

    unaccounted = []
    outcomes: dict[str, int] = defaultdict(int)
    for trigger_id in trigger_ids:
        records = {int(r.scheduled_for): r for r in runs_of(trigger_id)}
        fired_or_recorded = {slot: r.run_id for slot, r in records.items()}
        for run_id in executions:
            if run_id.startswith(trigger_id + "."):
                fired_or_recorded[int(run_id.split(".")[1][:13])] = run_id
        for n in range(1, (last_fault_ms - start_ms) // MINUTE_MS + 1):
            slot = start_ms + n * MINUTE_MS
            run_id = schedule_run_id(trigger_id, slot)
            record = records.get(slot)
            if record is not None:
                assert record.status in TERMINAL, (run_id, record.status)
                if record.status == "succeeded":
                    assert executions[run_id] == 1, run_id
                else:
                    assert record.error, (run_id, record.status)
                if record.status == "missed":
                    assert executions[run_id] == 0, run_id  # a slot recorded missed never ran
                outcomes[record.status] += 1
            elif executions[run_id] == 1:
                outcomes["ran (record write failed)"] += 1
            elif any(
                earlier < slot and any(t >= slot for t in claim_times[run])
                for earlier, run in fired_or_recorded.items()
            ):
                outcomes["merged into a late fire"] += 1
            else:
                unaccounted.append(run_id)
    assert not unaccounted, (unaccounted, dict(outcomes), injector.injected)
    # Under 10 % faults nearly every slot still simply runs: a failed send goes out on the
    # next tick, a failed claim write comes back with its message. What fails is a run
    # whose own reads or writes kept failing (state read, settle after its retries).
    # A fire sent one tick late moves the trigger past the slot after it, which is merged
    # into it, not lost. A shard's window is four calls a tick (cursor read, due query,
    # send batch, cursor move), so at 10 % a call about a third of the windows fail and
    # their triggers fire one tick late: with the concurrent batch the split varies from
    # run to run (seen: 540 ran, 440 merged, 15 failed, 1 lost of 1,000; and 710 / 210 /
    # 80 / 0 before the state read left the fire path). Ran stays the larger part.
    ran = outcomes["succeeded"] + outcomes["ran (record write failed)"]
    assert ran >= TRIGGERS * FAULT_MINUTES * 45 // 100, dict(outcomes)
    merged = outcomes["merged into a late fire"] + outcomes["missed"]
    assert ran + merged >= TRIGGERS * FAULT_MINUTES * 9 // 10, dict(outcomes)
    # A run is lost only when every attempt of its settle failed: rare, never the rule.
    assert outcomes["lost"] <= TRIGGERS * FAULT_MINUTES // 100, dict(outcomes)

    for item in TriggerModel.batch_get(trigger_ids):
        assert triggers_store.in_flight_of(item) == {}, (item.id, triggers_store.in_flight_of(item))
        assert item.status == "active"
        assert int(item.last_run["finished_at"]) > last_fault_ms, item.id  # it fires again
