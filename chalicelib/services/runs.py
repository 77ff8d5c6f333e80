"""Run records: building them, and how they look through the API."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from chalicelib.domain.epoch_ms import ms
from chalicelib.domain.ids import run_sort_key
from chalicelib.domain.records import RunRecord, Trigger
from chalicelib.domain.run_detail import duration_of
from chalicelib.settings import get_settings
from chalicelib.workflows.remote import display_target

__all__ = ["new_run_record", "run_view", "iso_ms"]


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def iso_ms(ms: float | int | None) -> str | None:
    """Epoch milliseconds as ISO-8601 UTC with ``Z``."""
    if ms is None:
        return None
    # Whole milliseconds added to the epoch, exactly (a float of seconds would turn
    # 9999-12-31T23:59:59.999 into .998).
    at = _EPOCH + timedelta(milliseconds=ms if isinstance(ms, int) else float(ms))
    # isoformat, not strftime: glibc's %Y prints year 1 as "1", not "0001".
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_run_record(
    item: Trigger,
    *,
    run_id: str,
    surface: str,
    scheduled_ms: int | None,
    now: datetime,
    event_id: str | None = None,
) -> RunRecord:
    """A run record for ``run_id`` of ``item`` (not yet saved)."""
    now_ms = ms(now)
    retention_s = get_settings().run_retention_days * 86400
    return RunRecord(
        trigger_id=item.id,
        run_id=run_id,
        tenant=item.tenant,
        sort_key=run_sort_key(scheduled_ms or now_ms, run_id),
        surface=surface,
        status="queued",
        workflow=item.workflow,
        scheduled_for=scheduled_ms,
        event_id=event_id,
        expires=int(now.timestamp()) + retention_s,
    )


def run_view(run: RunRecord) -> dict:
    """A run as the API shows it."""
    output = None
    if run.output:
        try:
            output = json.loads(run.output)
        except ValueError:
            output = run.output
    return {
        "id": run.run_id,
        "trigger_id": run.trigger_id,
        "surface": run.surface,
        "status": run.status,
        # query values masked
        "workflow": display_target(run.workflow) if run.workflow is not None else None,
        "scheduled_for": iso_ms(run.scheduled_for),
        "fire_at": iso_ms(run.fire_at),
        "started_at": iso_ms(run.started_at),
        "finished_at": iso_ms(run.finished_at),
        "lateness_ms": run.lateness_ms,
        "error": run.error,
        "cost_usd": run.cost_usd,
        "event_id": run.event_id,
        "attempt": run.attempt,
        "output": output,
        "duration_ms": duration_of(run.started_at, run.finished_at),
        "rerun_of": run.rerun_of,
        "state_written": run.state_written,
    }
