"""A restart of the local stack: load the saved tables, then settle what the old process left.

The queue is in memory and died with the old process; the tables were saved to
``$CRONHOOK_DATA_DIR/tables.json``. Claims that were in flight are released (not started)
or recorded ``lost`` (started), and the heartbeat's cursors are forgotten, so the first
tick sends every due slot again. A standing row (``store/triggers.py``) is keyed on its
next slot again: its pointer is not in the due index, and its slot's message may have
died with the queue; keyed, the first tick sends it (late, if its time has passed) and
its claim stands the row again.
"""

from __future__ import annotations

import base64
import json
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

__all__ = [
    "load_tables",
    "load_objects",
    "recover_claims",
    "forget_queue",
    "finish_running_events",
    "record_settled_runs",
]


def load_tables(state_file: Path) -> None:
    """Put every saved item back into its table (a table that is gone is skipped, said)."""
    from chalicelib.store.aws import client
    from devstack.embedded_aws import item_for_boto3

    ddb = client("dynamodb")
    data = json.loads(state_file.read_text())
    existing = set(ddb.list_tables()["TableNames"])
    for name, items in data.get("tables", {}).items():
        if name not in existing:
            print(f"not loading {name}: no such table any more", file=sys.stderr)
            continue
        for start in range(0, len(items), 25):
            chunk = [
                {"PutRequest": {"Item": item_for_boto3(it)}} for it in items[start : start + 25]
            ]
            ddb.batch_write_item(RequestItems={name: chunk})


def load_objects(state_file: Path) -> None:
    """Put every saved object of the stack's buckets back (large event bodies, mail)."""
    from chalicelib.store.aws import client

    s3 = client("s3")
    objects = json.loads(state_file.read_text()).get("objects", {})
    existing = {bucket["Name"] for bucket in s3.list_buckets().get("Buckets", [])}
    for bucket, keys in objects.items():
        if bucket not in existing:
            s3.create_bucket(Bucket=bucket)
        for key, body in keys.items():
            s3.put_object(Bucket=bucket, Key=key, Body=base64.b64decode(body))


def _forget_cursors() -> None:
    """The heartbeat's cursors say which slots were sent; the messages died with the old
    queue, so forget them: the first tick sends every due slot again."""
    from chalicelib.settings import get_settings
    from chalicelib.store import cursors as cursors_store
    from chalicelib.store import shard_registry

    for shard in shard_registry.shards_to_read(get_settings().due_shards):
        cursor = cursors_store.get_cursor(str(shard))
        if cursor is not None:
            cursors_store.advance_cursor(str(shard), expected=cursor, cursor_ms=None)


def _key_standing_rows() -> None:
    """Key every standing row on its next slot (``forget_queue``)."""
    from chalicelib.settings import get_settings
    from chalicelib.store import trigger_reads
    from chalicelib.store import triggers as triggers_store

    shards = get_settings().due_shards
    for item in trigger_reads.scan_triggers(standing=True):
        if item.next_slot is not None:
            triggers_store.key_standing(
                item.id, slot_ms=item.next_slot, shard=triggers_store.shard_of(item.id, shards)
            )


def forget_queue() -> None:
    """What the queue's death undoes: the cursors (which slots were sent), and the standing
    rows' fixed keys (a standing slot is sent only from a window)."""
    _forget_cursors()
    _key_standing_rows()


# Why a run that was running when the local stack went down is recorded lost.
STOPPED_ERROR = (
    "lost: the local stack was stopped (Ctrl-C) while the run was in progress,"
    " and it did not finish within the stop's grace period"
)
ENDED_ERROR = "lost: the local stack ended while the run was in progress (killed or crashed)"


def recover_claims(*, now: datetime | None = None, clean_stop: bool = False) -> None:
    """After a restart the queue is empty: release unstarted claims, reap started ones.

    ``clean_stop``: the stack was stopped by Ctrl-C or SIGTERM (it left its mark in the
    data dir), so a run it lost is said to be stopped, not crashed.
    """
    from chalicelib.assembly import reap_expired
    from chalicelib.services.heartbeat import refresh_due
    from chalicelib.settings import get_settings
    from chalicelib.store import claims as claims_store
    from chalicelib.store import trigger_reads
    from chalicelib.store import triggers as triggers_store

    now = now or datetime.now(UTC)
    forget_queue()
    record_settled_runs()  # before the reaps below write a newer last_run
    shards = get_settings().due_shards
    for item in trigger_reads.scan_triggers():
        in_flight = triggers_store.in_flight_of(item)
        if not in_flight:
            continue
        for run_id, entry in in_flight.items():
            if not int(entry.get("s", 0)):
                slot = entry.get("t") if entry.get("k", "s") == "s" else None
                claims_store.release_claim(
                    item.id,
                    run_id=run_id,
                    slot_ms=int(slot) if slot is not None else None,
                    shard=triggers_store.shard_of(item.id, shards),
                )
        fresh = triggers_store.get_trigger(item.id)
        if fresh is not None:
            # Every run that had started died with the old process.
            error = STOPPED_ERROR if clean_stop else ENDED_ERROR
            reap_expired(fresh, now=now, reap_all=True, error=error)
            refresh_due(triggers_store.get_trigger(item.id), now=now)
    finish_running_events(now=now)


def record_settled_runs() -> None:
    """Write the record of a scheduled run that settled on its trigger but has none.

    The runner settles the trigger first (the claim cleared, the pointer on, ``last_run``)
    and writes the run record after: a process killed between the two left a slot passed
    with no run and no record. ``last_run`` says how it ended; the record is written from
    it, never over one that is there (its start and lateness are not known).
    """
    from chalicelib.domain.history import records_run
    from chalicelib.domain.trigger_spec import TriggerSpec
    from chalicelib.services.runs import new_run_record
    from chalicelib.store import runs, trigger_reads

    for item in trigger_reads.scan_triggers(with_last_run=True):
        last = item.last_run or {}
        run_id, status = str(last.get("id") or ""), str(last.get("status") or "")
        slot_ms, finished_ms = _schedule_slot(item.id, run_id), last.get("finished_at")
        history = TriggerSpec.from_json(item.spec).history
        if slot_ms is None or finished_ms is None:
            continue
        if not records_run(history, status=status, surface="schedule"):
            continue
        finished = datetime.fromtimestamp(int(finished_ms) / 1000, tz=UTC)
        record = new_run_record(
            item, run_id=run_id, surface="schedule", scheduled_ms=slot_ms, now=finished
        )
        record = replace(
            record, status=status, error=last.get("error"), finished_at=int(finished_ms)
        )
        runs.put_run(record, only_new=True)


def _schedule_slot(trigger_id: str, run_id: str) -> int | None:
    """The slot of a scheduled run's id (``schedule_run_id``), or None for another kind."""
    prefix, _, tail = run_id.rpartition(".")
    if prefix != trigger_id or not tail.endswith("s") or not tail[:-1].isdigit():
        return None
    return int(tail[:-1])


def finish_running_events(*, now: datetime) -> None:
    """Finish every event still ``running`` whose run is no longer in flight.

    Its run ended (or died) without its bookkeeping: the old process was killed between
    the run's settle and the event's. The heartbeat's sweep would finish it once its
    lease (the runner timeout) and a grace had passed; after a restart every run of the
    old process is known to be dead (as ``reap_all`` knows), so it is finished now, by
    the sweep's own ``recover`` (a lost attempt is retried while attempts are left).
    """
    from chalicelib.services.events.recovery import recover
    from chalicelib.settings import get_settings
    from chalicelib.store import event_reads, shard_registry

    for shard in shard_registry.shards_to_read(get_settings().due_shards):
        for row in list(event_reads.overdue(str(shard), until_sk="9" * 13 + "~", limit=100_000)):
            event = event_reads.get_event(row.id)
            if event is not None and event.status == "running":
                recover(event, now=now)
