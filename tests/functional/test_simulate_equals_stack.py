"""The simulator's answer for a scenario equals what the engine records when the scenario
is played through it: the real heartbeat and runner on the moto server, on a one-minute
cadence, with a one-off skip, an extra run and an outage (no tick, no runner), in each
catch-up mode. Time is driven by hand (``assembly.tick(now=...)``, a runner on the test's
clock); the simulator is ``POST /v1/schedules/simulate``'s service.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from chalicelib import assembly
from chalicelib.services import triggers
from tests.scenarios import create_scheduled, runs_of

START = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
END = START + timedelta(minutes=19)
OUTAGE = (START + timedelta(minutes=8), START + timedelta(minutes=13))
RECORDED = {"run": "succeeded", "extra": "succeeded", "missed": "missed", "skipped": "skipped"}


def iso(instant: datetime) -> str:
    return instant.isoformat().replace("+00:00", "Z")


def play(aws, clock, trigger_id: str) -> dict[str, str]:
    """Every 30 s from 12:00 to 12:19: a tick and the queue drained, except in the outage."""
    runner = assembly.build_runner(clock=clock)
    clock.at = START
    while clock() <= END:
        if not OUTAGE[0] <= clock() < OUTAGE[1]:
            assembly.tick(now=clock())
            aws.drain(runner)
        clock.advance(30)
    recorded = {}
    for run in runs_of(trigger_id):
        slot = datetime.fromtimestamp(int(run.scheduled_for) / 1000, UTC)
        if START < slot <= END:
            recorded[iso(slot)] = run.status
    return recorded


@pytest.mark.parametrize("mode", ["latest", "all", "none"])
def test_the_simulator_equals_what_the_engine_records(aws, clock, root, mode):
    clock.at = START
    trigger_id = create_scheduled(
        root, clock, schedule={"cron": "* * * * *", "catchup": {"mode": mode}}
    )
    triggers.skip_slot(
        root, trigger_id, {"slot": iso(START + timedelta(minutes=3)), "reason": "x"}, now=clock()
    )
    triggers.add_extra(
        root, trigger_id, {"at": iso(START + timedelta(minutes=5, seconds=30))}, now=clock()
    )
    simulated = triggers.simulate_schedule(
        root,
        {
            "trigger_id": trigger_id,
            "from": iso(START),
            "to": iso(END),
            "outages": [{"from": iso(OUTAGE[0]), "to": iso(OUTAGE[1])}],
            "run_s": 0,
        },
        now=clock(),
    )
    expected = {s["slot"].replace(".000Z", "Z"): RECORDED[s["outcome"]] for s in simulated["slots"]}
    recorded = play(aws, clock, trigger_id)
    assert recorded == expected
    # The scenario shows what it is about: a skip, an extra, and the outage's slots.
    assert expected[iso(START + timedelta(minutes=3))] == "skipped"
    assert expected[iso(START + timedelta(minutes=5, seconds=30))] == "succeeded"
    during = [expected[iso(START + timedelta(minutes=m))] for m in range(9, 13)]
    assert (
        during == {"latest": ["missed"] * 4, "all": ["succeeded"] * 4, "none": ["missed"] * 4}[mode]
    )
    assert simulated["runs"] == sum(v == "succeeded" for v in expected.values())
