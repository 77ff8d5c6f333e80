"""Run records: one item per fire, keyed by trigger and a time-ordered run id."""

from __future__ import annotations

import time

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.exceptions import DoesNotExist, PutError, TransactWriteError
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.transactions import TransactWrite

from chalicelib.domain.records import RunRecord
from chalicelib.store.base import TableBase, condition_failed, opt_int
from chalicelib.store.conditions import transaction_cancelled
from chalicelib.store.state import transaction_connection
from chalicelib.store.triggers import TriggerModel, entry_after_error, entry_lease

__all__ = [
    "RunModel",
    "RunsByTenant",
    "RUN_RECORD_ATTEMPTS",
    "put_run",
    "put_run_if_in_flight",
    "get_run",
    "run_record",
    "run_item",
]


class RunsByTenant(GlobalSecondaryIndex):
    class Meta:
        index_name = "by_tenant"
        projection = AllProjection()

    tenant = UnicodeAttribute(hash_key=True)
    sort_key = UnicodeAttribute(range_key=True)


class RunModel(TableBase):
    """One fire's record; run ids are time-ordered within a trigger."""

    class Meta(TableBase.Meta):
        table_name = "runs"

    trigger_id = UnicodeAttribute(hash_key=True)
    run_id = UnicodeAttribute(range_key=True)
    tenant = UnicodeAttribute()
    sort_key = UnicodeAttribute()
    surface = UnicodeAttribute()
    status = UnicodeAttribute()
    workflow = UnicodeAttribute(null=True)
    scheduled_for = NumberAttribute(null=True)
    # When the fire started to be due: the slot plus its jitter (``schedule.jitter_s``).
    fire_at = NumberAttribute(null=True)
    started_at = NumberAttribute(null=True)
    finished_at = NumberAttribute(null=True)
    lateness_ms = NumberAttribute(null=True)
    error = UnicodeAttribute(null=True)
    cost_usd = NumberAttribute(default=0)
    event_id = UnicodeAttribute(null=True)
    attempt = NumberAttribute(default=1)
    output = UnicodeAttribute(null=True)
    rerun_of = UnicodeAttribute(null=True)  # a rerun's origin (reruns only)
    state_written = NumberAttribute(null=True, attr_name="sw")  # 1: the run wrote its state
    expires = NumberAttribute(null=True)

    by_tenant = RunsByTenant()


RUN_RECORD_ATTEMPTS = 3


def run_record(stored: RunModel) -> RunRecord:
    """The record a stored run item holds."""
    return RunRecord(
        trigger_id=stored.trigger_id,
        run_id=stored.run_id,
        tenant=stored.tenant,
        sort_key=stored.sort_key,
        surface=stored.surface,
        status=stored.status,
        workflow=stored.workflow,
        scheduled_for=opt_int(stored.scheduled_for),
        fire_at=opt_int(stored.fire_at),
        started_at=opt_int(stored.started_at),
        finished_at=opt_int(stored.finished_at),
        lateness_ms=opt_int(stored.lateness_ms),
        error=stored.error,
        cost_usd=float(stored.cost_usd or 0),
        event_id=stored.event_id,
        attempt=int(stored.attempt or 1),
        output=stored.output,
        rerun_of=stored.rerun_of,
        state_written=bool(stored.state_written),
        expires=opt_int(stored.expires),
    )


def run_item(run: RunRecord) -> RunModel:
    """The item that stores ``run`` (not saved). Attributes left at None are not written:
    a record of a run that wrote no state carries no ``sw`` (4 bytes a record)."""
    return RunModel(
        run.trigger_id,
        run.run_id,
        tenant=run.tenant,
        sort_key=run.sort_key,
        surface=run.surface,
        status=run.status,
        workflow=run.workflow,
        scheduled_for=run.scheduled_for,
        fire_at=run.fire_at,
        started_at=run.started_at,
        finished_at=run.finished_at,
        lateness_ms=run.lateness_ms,
        error=run.error,
        cost_usd=run.cost_usd,
        event_id=run.event_id,
        attempt=run.attempt,
        output=run.output,
        rerun_of=run.rerun_of,
        state_written=1 if run.state_written else None,
        expires=run.expires,
    )


def put_run(run: RunRecord, *, only_new: bool = False) -> bool:
    """Write a run record (its final state, or a terminal status like ``lost``).

    The write is a whole item keyed by run id, so repeating it is harmless: it is tried a
    few times, because the record is written after the claim is settled and a run must
    not go missing from the history over one failed call. ``only_new`` never overwrites
    an existing record (False if one exists).
    """
    condition = RunModel.run_id.does_not_exist() if only_new else None
    item = run_item(run)
    for attempt in range(RUN_RECORD_ATTEMPTS):
        try:
            item.save(condition=condition)
            return True
        except PutError as exc:
            if only_new and condition_failed(exc):
                return False
            if attempt == RUN_RECORD_ATTEMPTS - 1:
                raise
            time.sleep(0.02 * 2**attempt)
    return True


def put_run_if_in_flight(run: RunRecord, *, lease_ms: int) -> bool:
    """Write a run record only while the run is in flight on ``lease_ms`` (the reaper's
    ``lost``); False, nothing written, if its entry is gone or holds another lease.

    One transaction: a check of the trigger's ``in_flight[run_id].l`` and the put. A run
    that settled since the lease was read (its own record may be there already) or was
    reaped by another is never recorded over. A cancellation while the entry is still
    ours (a conflicting write of the trigger) is tried again, as any other error.
    """
    t = TriggerModel
    condition = t.in_flight[run.run_id]["l"] == lease_ms
    item = run_item(run)
    for attempt in range(RUN_RECORD_ATTEMPTS):
        try:
            with TransactWrite(connection=transaction_connection()) as tx:
                tx.condition_check(TriggerModel, run.trigger_id, condition=condition)
                tx.save(item)
            return True
        except TransactWriteError as exc:
            if transaction_cancelled(exc):
                entry = entry_after_error(run.trigger_id, run.run_id)[1]
                if entry is None or entry_lease(entry) != lease_ms:
                    return False
            if attempt == RUN_RECORD_ATTEMPTS - 1:
                raise
            time.sleep(0.02 * 2**attempt)
    return True


def get_run(trigger_id: str, run_id: str, *, consistent: bool = False) -> RunRecord | None:
    """One run record, or None."""
    try:
        return run_record(RunModel.get(trigger_id, run_id, consistent_read=consistent))
    except DoesNotExist:
        return None
