"""The heartbeat's reaper (services/heartbeat/reaper.py): a run whose runner died is
recorded lost and its trigger fires again.
"""

from __future__ import annotations

from datetime import timedelta

from chalicelib import assembly
from chalicelib.domain.epoch_ms import ms as _ms
from chalicelib.services import triggers
from chalicelib.store import dynamo
from chalicelib.store.sqs import FireMessage
from tests.scenarios import create_scheduled


def _receive_slot(aws, trigger_id: str, slot_ms: int) -> tuple[FireMessage, dict]:
    """The queued message of one slot (the others are left in the queue)."""
    aws.purge_delays()
    for message in aws.receive(visibility=0):
        fire = FireMessage.parse(message["Body"])
        if fire.trigger_id == trigger_id and fire.scheduled_ms == slot_ms:
            return fire, message
    raise AssertionError(f"no message for slot {slot_ms}")


def test_a_runner_that_dies_between_start_and_settle_is_reaped_and_the_trigger_fires_again(
    aws, clock, root
):
    trigger_id = create_scheduled(root, clock)
    clock.advance(60)
    assembly.tick(now=clock())
    fire, message = _receive_slot(aws, trigger_id, _ms(clock()))
    lease_ms = _ms(clock() + timedelta(seconds=360))
    # The runner writes its claim (which starts the run), then its process dies.
    outcome, _ = dynamo.claim_slot_and_start(
        trigger_id,
        slot_ms=fire.scheduled_ms,
        sched=fire.sched,
        next_slot_ms=fire.scheduled_ms + 60_000,
        run_id=fire.run_id,
        lease_ms=lease_ms,
        capacity=1,
        shard=dynamo.shard_of(trigger_id, 4),
    )
    assert outcome == dynamo.ClaimResult.CLAIMED
    aws.delete([message])

    # While the lease is live, the next slot is skipped (overlap: skip), not run.
    clock.advance(60)
    assembly.tick(now=clock())
    assert aws.drain(assembly.build_runner(clock=clock)) == ["skipped"]

    # Past the lease: the dead run is reaped and recorded lost, the trigger fires again
    # (a spare message of a slot sent again after the gap is dropped).
    clock.advance(360)
    assembly.tick(now=clock())
    assert [s for s in aws.drain(assembly.build_runner(clock=clock)) if s != "dropped"] == [
        "succeeded"
    ]
    lost = triggers.get_run_view(root, fire.run_id)
    assert lost["status"] == "lost"
    assert "lease expired" in lost["error"]
    view = triggers.get_trigger_view(root, trigger_id)
    assert view["last_run"]["status"] == "succeeded"
    assert view["consecutive_failures"] == 0
    statuses = [r["status"] for r in triggers.list_trigger_runs(root, trigger_id, {})["items"]]
    assert sorted(statuses) == ["lost", "skipped", "succeeded"]
