"""The claim → start → settle path end to end against the moto server, time driven by hand."""

from __future__ import annotations

from chalicelib import assembly
from chalicelib.services import triggers


def test_interval_trigger_fires_and_its_state_round_trips(aws, clock, root):
    created = triggers.create_trigger(
        root,
        {"workflow": "echo", "schedule": {"interval_s": 60}, "state": {"count": 0}},
        now=clock(),
    )
    runner = assembly.build_runner(clock=clock)
    for n in range(3):
        clock.advance(60)
        report = assembly.tick(now=clock())
        # Slots due by now + 60 s: the first tick sends two, each later one the next.
        assert report.due == (2 if n == 0 else 1)
        assert aws.drain(runner) == ["succeeded"]
    view = triggers.get_trigger_view(root, created["id"])
    assert view["state"] == {"count": 3}
    assert view["run_count"] == 3
    runs = triggers.list_trigger_runs(root, created["id"], {})["items"]
    assert [r["status"] for r in runs] == ["succeeded"] * 3
