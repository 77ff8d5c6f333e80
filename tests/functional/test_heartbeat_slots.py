"""Which slots a tick sends (services/heartbeat/slots.py): after a long downtime, one fire,
not one per missed slot.
"""

from __future__ import annotations

from datetime import timedelta

from chalicelib import assembly
from chalicelib.store import triggers
from tests.scenarios import create_scheduled


def test_after_three_hours_down_a_fifteen_minute_interval_fires_once(aws, clock, root):
    trigger_id = create_scheduled(root, clock, schedule={"interval_s": 900})
    clock.advance(3 * 3600 + 30)
    report = assembly.tick(now=clock())
    assert report.due == 1
    assert aws.drain(assembly.build_runner(clock=clock)) == ["succeeded"]
    item = triggers.get_trigger(trigger_id)
    # The next slot is the first one after now, not one of the twelve missed.
    assert triggers.next_slot_of(item) == int((clock().timestamp() + 870) * 1000)
    report = assembly.tick(now=clock() + timedelta(seconds=1))
    assert report.due == 0
