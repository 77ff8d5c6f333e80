"""The heartbeat: once a minute, find due, enqueue, reap. It claims nothing.

1. For each shard of the due index, read the rows with ``due_at <= now + lookahead``,
   page after page until the tick's deadline (``TICK_BUDGET_S``). The cost of a tick
   grows with what is due, never with what is registered, and nothing caps a shard at
   a fixed number of rows: what a tick does not reach is handed over to the next one
   through the cursor (step 3).
2. Each row's slots in ``(cursor, now + lookahead]`` are sent (ten per batch) with
   ``DelaySeconds`` rounded *down*, so the message lands up to a second early and the
   runner waits out the fraction: a fire starts on its second. No write per fire: the
   runner's claim is the fence (``claims_store.claim_slot_and_start``), taken when the fire
   is due, so overlap and busy are decided then, and a duplicate message never runs.
3. The shard's cursor (one item per shard) moves to the horizon before the rows are
   read, fenced on the value read, so two ticks never enqueue the same window twice and
   a slot written during the read is sent by its writer (``_Window._take_window``). A
   read that fails or runs out of time, or a send that fails, moves it back (to where
   it was, or to just before the first slot not reached or not sent): nothing is dropped.
4. A row whose slot is at or before the cursor was sent already. If that slot is
   ``OVERDUE_S`` past, its message was lost (a restart of the local stack, the dead-
   letter queue): it is sent again, after 1, 2, 4... times ``OVERDUE_S``; the claim's
   fence drops any spare. A fire that waited in a backlog runs late, with its lateness
   recorded: it is neither lost nor a failure.
5. A row that is due only because of a lease (a run that never settled) is reaped,
   fenced on the run id and its lease, and recorded ``lost``.
6. A standing row (``STANDING_DUE``: a schedule with a slot at least every 15 minutes,
   ``rules.stands``) is read by every tick that takes a window, first: its slots in the
   window are computed from its projected schedule (``slots.standing_slots``), and its
   claims move only a pointer the index does not project. Its leases are reaped by its
   next claim. A message of it that is lost loses only that slot; the next still runs.

Whoever else sets a slot at or before the cursor (a create, an edit, an enable, a
workflow's ``next_fire_at``) sends its message itself: ``enqueue_if_sent_window``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime

from chalicelib.domain.epoch_ms import ms
from chalicelib.observability import logger, record_metric
from chalicelib.services.heartbeat.fanout import fan_out, fans_out
from chalicelib.services.heartbeat.reaper import reap_expired, refresh_due
from chalicelib.services.heartbeat.report import TickReport
from chalicelib.services.heartbeat.send import send
from chalicelib.services.heartbeat.slots import (
    MAX_STANDING_SLOTS,
    fire_message,
    slots_of,
    standing_slots,
)
from chalicelib.services.pipeline import Pipeline
from chalicelib.settings import get_settings
from chalicelib.store import cursors, shard_registry, triggers
from chalicelib.store.sqs import FireMessage

__all__ = ["TICK_BUDGET_S", "Sweep", "tick", "tick_shard"]

# A tick stops reading due rows after this long (the heartbeat Lambda's timeout is 60 s)
# and hands what it did not reach to the next tick through the cursor.
TICK_BUDGET_S = 40.0

# An extra pass run by each tick after the sends (the pending-event sweep): it takes
# ``now=`` and ``report=`` (chalicelib.assembly.build_sweeps lists them).
Sweep = Callable[..., None]


def _rows(
    shard: str, *, until_ms: int | None, after_ms: int | None, deadline: float
) -> Iterator[triggers.DueRow | None]:
    """The due rows of a shard, earliest first (``until_ms`` None: its standing rows);
    None once the deadline has passed."""
    rows = (
        triggers.iter_standing(shard)
        if until_ms is None
        else triggers.iter_due(shard, until_ms=until_ms, after_ms=after_ms)
    )
    for row in rows:
        if time.perf_counter() > deadline:
            yield None
            return
        yield row


def tick(*, now: datetime, pipeline: Pipeline, sweeps: Sequence[Sweep]) -> TickReport:
    """One heartbeat at ``now``: every shard, then every sweep; reaped runs go to ``pipeline``."""
    started = time.perf_counter()
    deadline = started + TICK_BUDGET_S
    settings = get_settings()
    now_ms = ms(now)
    report = TickReport(now_ms=now_ms, started=started)
    current = settings.due_shards
    # The shards of the current count, and those of a former one still holding rows.
    count = _shards_this_tick(current, report)
    report.shards_read = count
    empty: set[int] = set()
    # Fan-out: the enqueuers read the shards whose tick message was sent (fanout.py);
    # this tick reads the others.
    inline = set(range(count))
    if fans_out(count):
        inline = set(fan_out(range(count), now_ms=now_ms, report=report))
    # One failed AWS call costs only its own shard or row, never the whole tick.
    for shard_no in range(count):
        read = shard_no not in inline or tick_shard(
            shard_no, now=now, deadline=deadline, pipeline=pipeline, report=report
        )
        # A former count's shard retires once found empty, whoever read it this tick.
        if read and shard_no >= current and _found_empty(shard_no, report):
            empty.add(shard_no)
    for sweep in sweeps:
        try:
            sweep(now=now, report=report)
        except Exception:
            report.errors += 1
            logger.exception("heartbeat sweep failed; the next tick sweeps again")
    if count > current:
        _retire(current=current, count=count, empty=empty, now_ms=now_ms)
    report.duration_ms = (time.perf_counter() - started) * 1000
    _record(report)
    return report


def _shards_this_tick(current: int, report: TickReport) -> int:
    """How many shards to read; the configured count when the registry cannot be reached.

    Reading only the configured shards for one tick loses nothing: rows a former, higher
    count left behind wait for the next tick that reaches the registry.
    """
    try:
        return shard_registry.begin_tick(current)
    except Exception:
        report.errors += 1
        logger.exception("shard registry unreadable; this tick reads the configured shards")
        return current


def _found_empty(shard_no: int, report: TickReport) -> bool:
    try:
        return shard_registry.is_empty(shard_no)
    except Exception:
        report.errors += 1
        logger.exception("due shard not probed; it is not retired this tick")
        return False


def tick_shard(
    shard_no: int, *, now: datetime, deadline: float, pipeline: Pipeline, report: TickReport
) -> bool:
    """Read, enqueue and reap one due shard into ``report``; False if it failed."""
    horizon_ms = ms(now) + get_settings().lookahead_s * 1000
    window = _Window(str(shard_no), now=now, horizon_ms=horizon_ms, report=report)
    try:
        window.run(deadline=deadline, pipeline=pipeline)
    except Exception:
        report.errors += 1
        logger.exception("due shard failed; it is read again next tick", extra={"shard": shard_no})
        return False
    return True


def _retire(*, current: int, count: int, empty: set[int], now_ms: int) -> None:
    """Lower the registry over the old shards this tick found empty (fenced)."""
    try:
        lowered = shard_registry.retire(
            current=current, read_count=count, empty=empty, now_ms=now_ms
        )
    except Exception:
        logger.exception("shard registry not updated; the next tick tries again")
        return
    if lowered is not None:
        logger.info("due shards retired", extra={"from": count, "to": lowered})
        record_metric("DueShardsRetired", count - lowered)


def _record(report: TickReport) -> None:
    record_metric("HeartbeatDuration", report.duration_ms, unit="Milliseconds")
    record_metric("DueCount", report.due)
    record_fire_counts(report)
    logger.info(
        "heartbeat",
        extra={k: v for k, v in report.__dict__.items() if k not in ("run_ids", "started")},
    )


def record_fire_counts(report: TickReport) -> None:
    """The fire metrics of a tick or of one enqueuer's shard (sent, resent, reaped, errors)."""
    record_metric("Fires", report.enqueued, surface="schedule")
    if report.overdue:
        record_metric("FiresResent", report.overdue)
    if report.reaped:
        record_metric("LeasesReaped", report.reaped)
    if report.errors:
        record_metric("HeartbeatErrors", report.errors)


class _Window:
    """One shard's window ``(cursor, horizon]``: read, enqueue, move the cursor (steps 1-5)."""

    def __init__(self, shard: str, *, now: datetime, horizon_ms: int, report: TickReport):
        self.shard, self.now, self.horizon_ms, self.report = shard, now, horizon_ms, report
        self.now_ms = ms(now)
        self.cursor: int | None = None
        self.computed: list[FireMessage] = []
        self.lease_rows: list[triggers.DueRow] = []
        self.standing_reach: int | None = None  # a standing row's slots ran over its cap

    def run(self, *, deadline: float, pipeline: Pipeline) -> None:
        self.cursor = cursors.get_cursor(self.shard)
        planned = self._take_window()
        try:
            reach = self._read(deadline=deadline, planned=planned)
        except Exception:
            self._give_back(planned, to=self.cursor)  # read again by the next tick
            raise
        if reach is not None and self.standing_reach is not None:
            reach = min(reach, self.standing_reach)
        if reach != planned:
            self._give_back(planned, to=reach)  # the deadline: hand the rest over
        self._enqueue(reach)
        self._reap(pipeline=pipeline)

    def _take_window(self) -> int | None:
        """Step 3, first half: move the cursor to the horizon *before* reading the rows.

        A create (an edit, a settle) that sets a slot writes its row, then reads the
        cursor, and sends the slot itself if the cursor is past it. Moved after the read,
        the cursor could pass a slot written between the two: the read did not see the
        row, the writer's read saw the old cursor, and neither sent it. Moved first,
        either the writer sees the window taken and sends, or the read sees the row
        (a spare sent by both is dropped by the claim). Returns the cursor as it was
        read if another tick took the window: this one then sends only what is overdue.
        """
        cursor = self.cursor
        planned = self.horizon_ms if cursor is None else max(cursor, self.horizon_ms)
        if planned == cursor or cursors.advance_cursor(
            self.shard, expected=cursor, cursor_ms=planned
        ):
            return planned
        # Another tick took this window first and sends it: only resend what is overdue.
        logger.info("another tick enqueued this shard's window", extra={"shard": self.shard})
        return cursor

    def _give_back(self, planned: int | None, *, to: int | None) -> None:
        """Move the cursor back from ``planned`` to ``to`` (fenced on our own value)."""
        if planned == self.cursor or planned == to:
            return
        try:
            moved = cursors.advance_cursor(self.shard, expected=planned, cursor_ms=to)
        except Exception:
            moved = False
            logger.exception("cursor not moved back", extra={"shard": self.shard})
        if not moved:
            # Another tick moved it meanwhile (or the write failed): what this tick did
            # not reach goes out as overdue (late, never lost).
            self.report.errors += 1
            logger.warning(
                "cursor not moved back; unreached fires go out as overdue",
                extra={"shard": self.shard},
            )

    def _look_at(self, row: triggers.DueRow) -> None:
        self.report.rows_read += 1
        if row.standing:
            slots = standing_slots(
                row, cursor=self.cursor, horizon_ms=self.horizon_ms, now_ms=self.now_ms
            )
            if len(slots) >= MAX_STANDING_SLOTS:
                # Its later slots are known only from a window: this one ends there.
                self.standing_reach = min(self.standing_reach or slots[-1], slots[-1])
            self.computed.extend(
                fire_message(
                    row.trigger_id,
                    s,
                    row.sched or "",
                    now_ms=self.now_ms,
                    standing_shard=self.shard,
                )
                for s in slots
            )
            return  # its leases are reaped by its next claim (``rules.stands``)
        slots = slots_of(row, cursor=self.cursor, horizon_ms=self.horizon_ms, now_ms=self.now_ms)
        self.computed.extend(
            fire_message(row.trigger_id, s, row.sched or "", now_ms=self.now_ms) for s in slots
        )
        by_lease = row.next_fire_at is None or not row.sched or row.due_at < int(row.next_fire_at)
        if by_lease and row.due_at <= self.now_ms:
            self.lease_rows.append(row)  # due because of a lease that has run out: reap it

    def _read(self, *, deadline: float, planned: int | None) -> int | None:
        """Steps 1-2: look at the shard's rows; how far the cursor may stay moved."""
        cursor = self.cursor
        reach = planned
        last_due: int | None = None
        # 1. The new rows, due after the cursor: what this tick is for (if it took the
        #    window). A row already sent and still waiting for its runner stays at the
        #    head of the index, so the new rows are read by key range, never behind a
        #    backlog of old ones.
        took_window = planned != cursor
        # 0. The standing rows: each has slots in every window. Cut by the deadline, the
        #    whole window is handed over (their order says nothing about their slots).
        standing = _rows(self.shard, until_ms=None, after_ms=None, deadline=deadline)
        for row in standing if took_window else ():
            if row is None:
                self.report.handed_over += 1
                return cursor
            self._look_at(row)
        after = cursor if cursor is not None else triggers.STANDING_DUE
        new_rows = _rows(self.shard, until_ms=self.horizon_ms, after_ms=after, deadline=deadline)
        for row in new_rows if took_window else ():
            if row is None:
                # Deadline: hand the rest over. A row not reached is due at or after the
                # last one reached, and its slots come at or after its due_at, so every
                # slot up to just before that instant is known: the cursor stops there.
                self.report.handed_over += 1
                stop = (last_due - 1) if last_due is not None else None
                reach = cursor if stop is None else stop if cursor is None else max(cursor, stop)
                break
            last_due = row.due_at
            self._look_at(row)
        # 2. The old rows (due at or before the cursor): overdue slots, the later slots of
        #    a schedule faster than the lookahead, expired leases. Cut by the deadline,
        #    they are read again next tick (a slot not reached goes out as overdue).
        if cursor is not None:
            old_rows = _rows(
                self.shard, until_ms=cursor, after_ms=triggers.STANDING_DUE, deadline=deadline
            )
            for row in old_rows:
                if row is None:
                    self.report.handed_over += 1
                    break
                self._look_at(row)
        return reach

    def _enqueue(self, reach: int | None) -> None:
        """Step 3, second half: send what is new (up to ``reach``) or overdue."""
        cursor, shard, report = self.cursor, self.shard, self.report

        def is_overdue(m: FireMessage) -> bool:
            return cursor is not None and int(m.scheduled_ms or 0) <= cursor

        def is_new(m: FireMessage) -> bool:
            return not is_overdue(m) and reach is not None and int(m.scheduled_ms or 0) <= reach

        messages = [m for m in self.computed if is_overdue(m) or is_new(m)]
        report.overdue += sum(1 for m in messages if is_overdue(m))
        report.due += sum(1 for m in messages if not is_overdue(m))
        # Most urgent first: a fire due in two seconds must not wait for those due in fifty.
        messages.sort(key=lambda m: int(m.scheduled_ms or 0))
        send(messages, shard=shard, cursor_before=cursor, cursor_after=reach, report=report)

    def _reap(self, *, pipeline: Pipeline) -> None:
        """Step 5: reap the rows due only because of a lease that ran out."""
        for row in self.lease_rows:
            try:
                item = triggers.get_trigger(row.trigger_id)
                if item is not None:
                    self.report.reaped += reap_expired(item, now=self.now, pipeline=pipeline)
                    refresh_due(triggers.get_trigger(row.trigger_id), now=self.now)
            except Exception:
                self.report.errors += 1
                logger.exception(
                    "due row failed; it stays due for the next tick",
                    extra={"trigger_id": row.trigger_id},
                )
