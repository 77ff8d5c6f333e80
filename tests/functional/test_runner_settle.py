"""How a run settles (services/runner/settle.py): a failed run, or one whose state cannot be
saved, never leaks its claim.
"""

from __future__ import annotations

from chalicelib import assembly
from chalicelib.services import triggers
from chalicelib.store import triggers as triggers_store
from chalicelib.workflows import Result, workflow
from tests.scenarios import create_scheduled


def test_a_failed_run_never_leaks_its_claim(aws, clock, root):
    failing = create_scheduled(root, clock, workflow="fail")

    @workflow("bad-state")
    def bad_state(fire):
        return Result(state={"not json": object()})

    unserialisable = create_scheduled(root, clock, workflow="bad-state")
    runner = assembly.build_runner(clock=clock)
    for _ in range(3):
        clock.advance(60)
        assembly.tick(now=clock())
        assert aws.drain(runner) == ["failed", "failed"]
        for trigger_id in (failing, unserialisable):
            item = triggers_store.get_trigger(trigger_id)
            assert triggers_store.in_flight_of(item) == {}
    view = triggers.get_trigger_view(root, unserialisable)
    assert view["consecutive_failures"] == 3
    error = view["last_run"]["error"]
    assert "state not saved" in error or "state that is not JSON" in error, error
