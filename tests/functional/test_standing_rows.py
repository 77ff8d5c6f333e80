"""Standing rows (store/triggers.py, ``rules.stands``): a schedule with a slot at least
every 15 minutes keeps one fixed due key; every tick computes its slots, and a claim
moves only a pointer the due index does not project.
"""

from __future__ import annotations

import pytest

from bench.calls import CallLog
from chalicelib import assembly
from chalicelib.domain.epoch_ms import ms as _ms
from chalicelib.domain.ids import schedule_run_id
from chalicelib.services import triggers
from chalicelib.settings import reset_settings
from chalicelib.store import claims as claims_store
from chalicelib.store import cursors
from chalicelib.store import triggers as triggers_store
from chalicelib.store.sqs import FireMessage
from tests.scenarios import EXECUTIONS, create_scheduled, fire_next, runs_of


@pytest.fixture(autouse=True)
def _standing_rows_on(monkeypatch):
    """Standing rows are on by default (settings.standing_rows): set here all the same, so
    a ``CRONHOOK_STANDING_ROWS=0`` in the environment cannot turn these tests keyed."""
    monkeypatch.setenv("CRONHOOK_STANDING_ROWS", "1")
    reset_settings()
    yield
    monkeypatch.delenv("CRONHOOK_STANDING_ROWS")
    reset_settings()


def _runner(clock):
    return assembly.build_runner(clock=clock)


def _fire_ids(trigger_id: str) -> list[str]:
    return sorted(k for k in EXECUTIONS if trigger_id in k)


def _queued(aws, clock) -> list[tuple[FireMessage, dict]]:
    """The messages due by the test's clock (SQS delivers a fire at most 1 s early)."""
    aws.purge_delays(clock())
    return [(FireMessage.parse(m["Body"]), m) for m in aws.receive(visibility=0)]


def _standing(aws, clock, root, **body) -> str:
    """A trigger every minute whose row stands, with no keyed message left in the queue.

    Its first claim stands the row; the next slot's message went out keyed before that
    (the lookahead), and its claim fails once on the keyed fence, then takes the
    standing one. From then on the queue holds the standing message of the next slot.
    """
    trigger_id = create_scheduled(root, clock, **body)
    assert fire_next(aws, clock, _runner(clock)) == ["succeeded"]
    assert fire_next(aws, clock, _runner(clock)) == ["succeeded"]
    assert int(triggers_store.get_trigger(trigger_id).due_at) == triggers_store.STANDING_DUE
    return trigger_id


def _due_now(aws, clock) -> tuple[FireMessage, dict]:
    """The next minute's tick, and the one standing message due then."""
    clock.advance(60)
    assembly.tick(now=clock())
    [(fire, message)] = _queued(aws, clock)
    assert fire.standing_shard is not None and fire.scheduled_ms == _ms(clock())
    return fire, message


@pytest.mark.parametrize(
    "schedule",
    [{"interval_s": 60}, {"interval_s": 900}, {"cron": "*/15 * * * *"}],
    ids=["interval-1m", "interval-15m", "cron-quarter-hour"],
)
def test_a_frequent_schedule_stands_after_its_first_claim_and_never_moves_again(
    aws, clock, root, schedule
):
    trigger_id = create_scheduled(root, clock, schedule=schedule)
    first = triggers_store.next_slot_of(triggers_store.get_trigger(trigger_id))
    clock.advance((first - _ms(clock())) / 1000)
    assembly.tick(now=clock())
    assert aws.drain(_runner(clock)) == ["succeeded"]
    item = triggers_store.get_trigger(trigger_id)
    assert (int(item.due_at), item.next_fire_at) == (triggers_store.STANDING_DUE, None)
    period = first_gap = triggers_store.next_slot_of(item) - first
    assert first_gap > 0
    fires = 1
    for _ in range(3):
        clock.advance(period / 1000)
        ran = [s for s in (fire_next(aws, clock, _runner(clock), 0)) if s != "dropped"]
        fires += len(ran)
        stood = triggers_store.get_trigger(trigger_id)
        assert int(stood.due_at) == triggers_store.STANDING_DUE
        assert triggers_store.next_slot_of(stood) == first + (fires * period)
    assert fires == 4
    assert int(triggers_store.get_trigger(trigger_id).run_count) == 4
    assert all(count == 1 for count in (EXECUTIONS[f] for f in _fire_ids(trigger_id)))


def test_a_standing_claim_writes_one_unit_and_nothing_in_the_due_index(aws, clock, root):
    with CallLog() as log:  # from the create on: the log bills each write on its images
        trigger_id = _standing(aws, clock, root)
        clock.advance(60)
        assembly.tick(now=clock())
        mark = log.mark()
        assert aws.drain(_runner(clock)) == ["succeeded"]
    claims = [c for c in log.since(mark) if c.caller.endswith("claim_slot_and_start")]
    assert [(c.ok, c.wru, c.gsi_wru) for c in claims] == [(True, 1, 0)]
    assert int(triggers_store.get_trigger(trigger_id).due_at) == triggers_store.STANDING_DUE


def test_a_slower_schedule_stays_keyed_on_its_next_slot(aws, clock, root):
    trigger_id = create_scheduled(root, clock, schedule={"interval_s": 1200})
    fire_next(aws, clock, _runner(clock), 1200)
    item = triggers_store.get_trigger(trigger_id)
    assert item.next_slot is None
    assert int(item.due_at) == int(item.next_fire_at) == _ms(clock()) + 1_200_000


def test_a_standing_slot_delivered_twice_runs_once(aws, clock, root):
    trigger_id = _standing(aws, clock, root)
    fire, _ = _due_now(aws, clock)
    runner = _runner(clock)
    assert [runner.handle(fire), runner.handle(fire)] == ["succeeded", "dropped"]
    assert int(triggers_store.get_trigger(trigger_id).run_count) == 3
    assert all(EXECUTIONS[f] == 1 for f in _fire_ids(trigger_id))


def _records(root, trigger_id: str) -> dict[int, dict]:
    items = triggers.list_trigger_runs(root, trigger_id, {})["items"]
    return {_ms(_parse(r["scheduled_for"])): r for r in items}


def _parse(text: str):
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_a_lost_standing_message_s_slot_runs_once_late_with_the_next_slot_s_message(
    aws, clock, root
):
    trigger_id = _standing(aws, clock, root)
    lost, message = _due_now(aws, clock)
    aws.delete([message])  # that slot's message is lost
    assert fire_next(aws, clock, _runner(clock)) == ["succeeded"]
    item = triggers_store.get_trigger(trigger_id)
    assert int(item.run_count) == 3
    assert triggers_store.next_slot_of(item) == _ms(clock()) + 60_000
    # The pointer's slot ran, a minute late and recorded so; the next slot merged into
    # it (a trigger fires once), as a keyed row's first missed slot after downtime.
    run = _records(root, trigger_id)[int(lost.scheduled_ms)]
    assert run["status"] == "succeeded" and run["lateness_ms"] >= 59_000
    assert EXECUTIONS[lost.run_id] == 1
    assert not [f for f in _fire_ids(trigger_id) if str(_ms(clock())) in f]


def test_a_later_slot_s_message_first_runs_the_earlier_slot_once_and_drops_its_own_later(
    aws, clock, root
):
    """A failed send goes out again a tick later, beside the next slot's message, and
    the two arrive in the wrong order: the earlier slot still runs (late), exactly once,
    and no slot is passed without a run or a record."""
    trigger_id = _standing(aws, clock, root)
    earlier, message = _due_now(aws, clock)
    aws.delete([message])
    later, _ = _due_now(aws, clock)
    runner = _runner(clock)
    assert runner.handle(later) == "succeeded"  # runs the pointer's slot: the earlier one
    assert runner.handle(earlier) == "dropped"  # its own message comes after: fenced out
    assert runner.handle(later) == "dropped"  # and a duplicate of the later one
    assert EXECUTIONS[earlier.run_id] == 1 and EXECUTIONS.get(later.run_id, 0) == 0
    run = _records(root, trigger_id)[int(earlier.scheduled_ms)]
    assert run["status"] == "succeeded" and run["lateness_ms"] >= 59_000
    item = triggers_store.get_trigger(trigger_id)
    assert triggers_store.next_slot_of(item) == int(later.scheduled_ms) + 60_000
    assert triggers_store.in_flight_of(item) == {}
    # The next minute runs on time, from its own message.
    assert fire_next(aws, clock, _runner(clock)) == ["succeeded"]
    assert int(triggers_store.get_trigger(trigger_id).run_count) == 4


def test_a_message_behind_a_due_pointer_runs_the_pointer_s_slot(aws, clock, root):
    """A message for a slot the pointer has passed, while the pointer itself is due and
    its message is missing (a cursor that lagged behind a failed write): the pointer's
    slot runs, rather than waiting a tick for the next slot's message."""
    trigger_id = _standing(aws, clock, root)
    stale, message = _due_now(aws, clock)
    runner = _runner(clock)
    assert runner.handle(stale) == "succeeded"
    aws.delete([message])
    pointer = triggers_store.next_slot_of(triggers_store.get_trigger(trigger_id))
    clock.advance(90)  # the pointer is due; its message never came
    assert runner.handle(stale) == "succeeded"
    assert EXECUTIONS[stale.run_id] == 1
    pointer_run = schedule_run_id(trigger_id, pointer)
    assert _records(root, trigger_id)[pointer]["status"] == "succeeded"
    assert EXECUTIONS[pointer_run] == 1, _fire_ids(trigger_id)


def test_a_message_behind_a_pointer_not_yet_due_is_dropped(aws, clock, root):
    trigger_id = _standing(aws, clock, root)
    stale, _ = _due_now(aws, clock)
    runner = _runner(clock)
    assert runner.handle(stale) == "succeeded"
    clock.advance(30)  # the pointer is 30 s ahead: its own message will run it
    assert runner.handle(stale) == "dropped"
    assert int(triggers_store.get_trigger(trigger_id).run_count) == 3


def test_after_downtime_a_standing_trigger_fires_once_then_on_schedule(aws, clock, root):
    trigger_id = _standing(aws, clock, root)
    clock.advance(3600 + 30)  # no tick for an hour
    ran = [s for s in fire_next(aws, clock, _runner(clock), 0) if s != "dropped"]
    assert ran == ["succeeded"]  # one catch-up fire, not sixty
    # The slot whose message was queued before the downtime runs, an hour late and
    # recorded so; the catch-up slot the tick sent is then dropped by the fence.
    # The slots it passed are each recorded missed (catchup: latest, the default).
    records = runs_of(trigger_id)
    late = [r for r in records if r.status == "succeeded" and int(r.lateness_ms) > 3_500_000]
    assert len(late) == 1
    assert sum(r.status == "missed" for r in records) == 59
    assert fire_next(aws, clock, _runner(clock), 30) == ["succeeded"]
    assert int(triggers_store.get_trigger(trigger_id).run_count) == 4


def test_a_forgotten_cursor_sends_the_latest_slot_again_and_the_fence_drops_it(aws, clock, root):
    trigger_id = _standing(aws, clock, root)
    aws.delete([m for _, m in _queued(aws, clock)])
    for shard in range(4):  # what a restart of the local stack does (local/restore.py)
        cursor = cursors.get_cursor(str(shard))
        if cursor is not None:
            cursors.advance_cursor(str(shard), expected=cursor, cursor_ms=None)
    clock.advance(1)
    assembly.tick(now=clock())
    assert aws.drain(_runner(clock)) == ["dropped"]  # the slot that ran, fenced out
    assert int(triggers_store.get_trigger(trigger_id).run_count) == 2


def test_an_edit_keys_a_standing_row_again_and_its_next_claim_stands_it(aws, clock, root):
    trigger_id = _standing(aws, clock, root)
    triggers.patch_trigger(root, trigger_id, {"schedule": {"interval_s": 120}}, now=clock())
    item = triggers_store.get_trigger(trigger_id)
    assert item.next_slot is None
    assert int(item.due_at) == int(item.next_fire_at) > triggers_store.STANDING_DUE
    ran = [s for s in fire_next(aws, clock, _runner(clock), 120) if s != "dropped"]
    assert ran == ["succeeded"]
    stood = triggers_store.get_trigger(trigger_id)
    assert (int(stood.due_at), triggers_store.next_slot_of(stood)) == (
        triggers_store.STANDING_DUE,
        _ms(clock()) + 120_000,
    )


def test_a_standing_slot_due_while_a_run_executes_is_skipped_and_the_pointer_moves(
    aws, clock, root
):
    trigger_id = _standing(aws, clock, root)
    fire, message = _due_now(aws, clock)
    shard = triggers_store.shard_of(trigger_id, 4)
    outcome, _ = claims_store.claim_slot_and_start(  # a runner claims it, then hangs
        trigger_id,
        slot_ms=fire.scheduled_ms,
        sched=fire.sched,
        next_slot_ms=fire.scheduled_ms + 60_000,
        run_id=fire.run_id,
        lease_ms=_ms(clock()) + 360_000,
        capacity=1,
        shard=shard,
        standing=True,
        stands=True,
    )
    assert outcome == claims_store.ClaimResult.CLAIMED
    aws.delete([message])
    assert fire_next(aws, clock, _runner(clock)) == ["skipped"]
    item = triggers_store.get_trigger(trigger_id)
    assert triggers_store.next_slot_of(item) == _ms(clock()) + 60_000
    assert int(item.due_at) == triggers_store.STANDING_DUE


def test_a_paused_standing_trigger_leaves_the_index_and_comes_back_keyed(aws, clock, root):
    trigger_id = _standing(aws, clock, root)
    triggers.set_enabled(root, trigger_id, enabled=False, now=clock())
    # The first message dropped for it takes it out of the index (as a keyed row).
    assert fire_next(aws, clock, _runner(clock)) == []
    assert triggers_store.get_trigger(trigger_id).due_at is None
    assert fire_next(aws, clock, _runner(clock)) == []
    triggers.set_enabled(root, trigger_id, enabled=True, now=clock())
    item = triggers_store.get_trigger(trigger_id)
    assert item.next_slot is None and int(item.due_at) == int(item.next_fire_at)
    assert [s for s in fire_next(aws, clock, _runner(clock)) if s != "dropped"] == ["succeeded"]
    assert int(triggers_store.get_trigger(trigger_id).due_at) == triggers_store.STANDING_DUE


def test_a_standing_row_read_from_a_former_shard_moves_to_its_shard(aws, clock, root):
    trigger_id = _standing(aws, clock, root)
    fire, message = _due_now(aws, clock)
    aws.delete([message])
    moved = FireMessage(**{**fire.__dict__, "standing_shard": "7"})  # a former count's
    assert _runner(clock).handle(moved) == "succeeded"
    item = triggers_store.get_trigger(trigger_id)
    assert item.due_shard == triggers_store.shard_of(trigger_id, 4)
    assert int(item.due_at) == triggers_store.STANDING_DUE


def test_a_standing_row_over_its_slot_cap_ends_the_window_there_and_loses_no_slot(
    aws, clock, root, monkeypatch
):
    from chalicelib.services.heartbeat import shards, slots

    monkeypatch.setenv("CRONHOOK_MIN_INTERVAL_S", "1")
    reset_settings()
    trigger_id = _standing(aws, clock, root, schedule={"interval_s": 10})
    triggers.patch_trigger(root, trigger_id, {"schedule": {"interval_s": 1}}, now=clock())
    assert aws.drain(_runner(clock))  # its first 1-second slot stands it again
    monkeypatch.setattr(slots, "MAX_STANDING_SLOTS", 25)
    monkeypatch.setattr(shards, "MAX_STANDING_SLOTS", 25)
    sent: list[int] = []
    per_tick: list[int] = []
    # Ticks 30 s apart: each window holds 30 slots, 25 are sent and the window ends at
    # the last; the next tick goes on from there. (The cursor loses 5 s a tick on its
    # 60 s lead; once behind now it would be a gap, and the missed slots would collapse
    # into one fire, as after downtime.)
    for _ in range(6):
        clock.advance(30)
        report = assembly.tick(now=clock())
        sent += [int(r.rsplit(".", 1)[1].rstrip("s")) for r in report.run_ids]
        per_tick.append(len(report.run_ids))
    ordered = sorted(set(sent))
    assert len(ordered) == len(sent)  # none twice
    assert ordered == list(range(ordered[0], ordered[-1] + 1000, 1000))  # none skipped
    assert per_tick == [25] * 6  # the cap was reached: each window ended at its last slot
