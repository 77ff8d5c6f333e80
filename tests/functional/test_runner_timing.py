"""When a run starts (services/runner/timing.py): a message that lands before its second
waits out the fraction.
"""

from __future__ import annotations

import pytest

from chalicelib import assembly
from chalicelib.services import triggers
from tests.scenarios import create_scheduled


def test_a_message_that_lands_early_waits_out_the_fraction_and_starts_on_its_second(
    aws, clock, root
):
    trigger_id = create_scheduled(root, clock, schedule={"interval_s": 90})
    clock.advance(59.6)
    assembly.tick(now=clock())
    clock.advance(30)  # visible 0.4 s before the slot (DelaySeconds 30 rounded down)
    waited: list[float] = []

    def sleep(seconds: float) -> None:
        waited.append(seconds)
        clock.advance(seconds)

    assert aws.drain(assembly.build_runner(clock=clock, sleep=sleep)) == ["succeeded"]
    assert waited == [pytest.approx(0.4, abs=0.002)]
    (run,) = triggers.list_trigger_runs(root, trigger_id, {})["items"]
    assert run["lateness_ms"] == 0
    assert run["started_at"] == run["scheduled_for"]
