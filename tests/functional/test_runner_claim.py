"""The runner's start fence (services/runner/claim.py) on the moto server: a message
delivered twice runs once.

Time is driven by hand: ``assembly.tick(now=...)`` and
``assembly.build_runner(clock=...)``.
"""

from __future__ import annotations

from chalicelib import assembly
from chalicelib.store import state
from chalicelib.store.sqs import FireMessage
from tests.scenarios import EXECUTIONS, create_scheduled


def test_a_duplicate_sqs_delivery_runs_once(aws, clock, root):
    trigger_id = create_scheduled(root, clock)
    clock.advance(60)
    assembly.tick(now=clock())
    aws.purge_delays(clock())
    (message,) = aws.receive()
    fire = FireMessage.parse(message["Body"])
    EXECUTIONS.clear()
    first = assembly.build_runner(clock=clock).handle(fire)
    second = assembly.build_runner(clock=clock).handle(fire)
    assert (first, second) == ("succeeded", "dropped")
    assert EXECUTIONS[fire.run_id] == 1
    assert state.get_state(trigger_id)[0] == {"n": 1}
