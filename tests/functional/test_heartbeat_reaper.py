"""The heartbeat's reaper (services/heartbeat/reaper.py): a run whose runner died is
recorded lost and its trigger fires again.
"""

from __future__ import annotations

from datetime import timedelta

from chalicelib import assembly
from chalicelib.domain.epoch_ms import ms as _ms
from chalicelib.domain.rules import stands
from chalicelib.services import triggers
from chalicelib.store import claims
from chalicelib.store import triggers as triggers_store
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
    outcome, _ = claims.claim_slot_and_start(
        trigger_id,
        slot_ms=fire.scheduled_ms,
        sched=fire.sched,
        next_slot_ms=fire.scheduled_ms + 60_000,
        run_id=fire.run_id,
        lease_ms=lease_ms,
        capacity=1,
        shard=triggers_store.shard_of(trigger_id, 4),
    )
    assert outcome == claims.ClaimResult.CLAIMED
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
    # The slots passed while the dead run held the trigger are recorded missed.
    assert sorted(s for s in statuses if s != "missed") == ["lost", "skipped", "succeeded"]


def _die_after_the_claim(aws, trigger_id: str, slot_ms: int, *, period_ms: int) -> FireMessage:
    """Take ``slot_ms``'s message, claim (and start) it as a runner would, then die."""
    fire, message = _receive_slot(aws, trigger_id, slot_ms)
    outcome, _ = claims.claim_slot_and_start(
        trigger_id,
        slot_ms=slot_ms,
        sched=fire.sched,
        next_slot_ms=slot_ms + period_ms,
        run_id=fire.run_id,
        lease_ms=slot_ms + 360_000,
        capacity=2,
        shard=triggers_store.shard_of(trigger_id, 4),
        standing=fire.standing_shard is not None,
        stands=stands(fire.sched or ""),  # as the runner's claim does
    )
    assert outcome == claims.ClaimResult.CLAIMED
    aws.delete([message])
    return fire


def test_a_twenty_minute_schedule_moves_its_row_once_a_fire_not_back_after_the_lease(
    aws, clock, root
):
    # Keyed on the claim's lease (7 minutes), the row moved twice a fire: to the lease at
    # the claim, back to the next slot when a tick found the lease passed (3.6 WRU more).
    # (Up to 15 minutes a schedule stands and its row does not move at all.)
    trigger_id = create_scheduled(root, clock, schedule={"interval_s": 1200})
    clock.advance(1200)
    assembly.tick(now=clock())
    assert aws.drain(assembly.build_runner(clock=clock)) == ["succeeded"]
    item = triggers_store.get_trigger(trigger_id)
    assert int(item.next_fire_at) == _ms(clock()) + 1_200_000
    assert int(item.due_at) == int(item.next_fire_at)  # the claim keyed it on the slot
    for _ in range(8):  # the lease ends (minute 7): nothing to reap, nothing to move
        clock.advance(60)
        assert assembly.tick(now=clock()).reaped == 0
        assert int(triggers_store.get_trigger(trigger_id).due_at) == int(item.next_fire_at)


def test_a_fifteen_minute_run_that_never_settles_is_reaped_by_the_next_slots_claim(
    aws, clock, root
):
    trigger_id = create_scheduled(root, clock, schedule={"interval_s": 900})
    clock.advance(900)
    assembly.tick(now=clock())
    dead = _die_after_the_claim(aws, trigger_id, _ms(clock()), period_ms=900_000)
    # A 15-minute schedule stands: the lease does not key the row, the next claim reaps.
    assert int(triggers_store.get_trigger(trigger_id).due_at) == triggers_store.STANDING_DUE
    clock.advance(900)
    assembly.tick(now=clock())
    assert aws.drain(assembly.build_runner(clock=clock)) == ["succeeded"]
    assert triggers.get_run_view(root, dead.run_id)["status"] == "lost"
    item = triggers_store.get_trigger(trigger_id)
    assert triggers_store.in_flight_of(item) == {}
    assert item.last_run["status"] == "succeeded"
    statuses = [r["status"] for r in triggers.list_trigger_runs(root, trigger_id, {})["items"]]
    assert sorted(statuses) == ["lost", "succeeded"]


def test_a_claim_with_room_left_reaps_the_expired_lease_it_finds(aws, clock, root):
    # overlap: allow, two at a time: the next slot's claim succeeds beside the dead run,
    # and reaps it then (no tick looks at a lease the index left to the claim).
    trigger_id = create_scheduled(
        root, clock, schedule={"interval_s": 900}, overlap="allow", concurrency=2
    )
    clock.advance(900)
    assembly.tick(now=clock())
    dead = _die_after_the_claim(aws, trigger_id, _ms(clock()), period_ms=900_000)
    clock.advance(900)
    assembly.tick(now=clock())
    assert aws.drain(assembly.build_runner(clock=clock)) == ["succeeded"]
    assert triggers.get_run_view(root, dead.run_id)["status"] == "lost"
    assert triggers_store.in_flight_of(triggers_store.get_trigger(trigger_id)) == {}
