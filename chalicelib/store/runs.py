"""Run records: one item per fire, keyed by trigger and a time-ordered run id."""

from __future__ import annotations

import time

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.exceptions import DoesNotExist, PutError
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex

from chalicelib.store.base import TableBase, condition_failed

__all__ = ["RunModel", "RunsByTenant", "RUN_RECORD_ATTEMPTS", "put_run", "get_run"]


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


def put_run(run: RunModel, *, only_new: bool = False) -> bool:
    """Write a run record (its final state, or a terminal status like ``lost``).

    The write is a whole item keyed by run id, so repeating it is harmless: it is tried a
    few times, because the record is written after the claim is settled and a run must
    not go missing from the history over one failed call. ``only_new`` never overwrites
    an existing record (False if one exists).
    """
    condition = RunModel.run_id.does_not_exist() if only_new else None
    for attempt in range(RUN_RECORD_ATTEMPTS):
        try:
            run.save(condition=condition)
            return True
        except PutError as exc:
            if only_new and condition_failed(exc):
                return False
            if attempt == RUN_RECORD_ATTEMPTS - 1:
                raise
            time.sleep(0.02 * 2**attempt)
    return True


def get_run(trigger_id: str, run_id: str) -> RunModel | None:
    """One run record, or None."""
    try:
        return RunModel.get(trigger_id, run_id)
    except DoesNotExist:
        return None
