"""The settle's part in a run's detail item: written only when the run has something to keep.

A success on the trigger's own payload writes nothing here (the fire path's two writes
stay two); a failure writes one item (its error's detail and its payload), and so does a
manual run with a body of its own or a rerun (``domain/run_detail.detail_to_keep``).
"""

from __future__ import annotations

from dataclasses import replace

from chalicelib.domain.records import RunRecord
from chalicelib.domain.run_detail import detail_to_keep, error_detail
from chalicelib.observability import logger
from chalicelib.services.pipeline import Pipeline, RunContext
from chalicelib.store import run_details

__all__ = ["keep_detail"]


def _redacted(ctx: RunContext, detail: dict | None, *, pipeline: Pipeline) -> dict | None:
    """The error's detail with the trigger's secrets masked, as its one-line error is."""
    if not detail:
        return None
    masked = dict(detail)
    for key in ("message", "traceback"):
        if isinstance(masked.get(key), str):
            masked[key] = pipeline.redact(ctx, masked[key])
    return masked


def keep_detail(
    ctx: RunContext,
    run: RunRecord,
    *,
    status: str,
    error: str | None,
    detail: dict | None,
    pipeline: Pipeline,
) -> RunRecord:
    """Write the run's detail item when there is something to keep (before its record);
    the record, marked as a rerun or as a run that wrote its state.

    A rerun also says so on its record (``rerun_of``, ~40 bytes on reruns only), so every
    listing can link it, and so does a run that wrote its state (``sw``). The detail is best effort: its write failing never keeps the
    run's record from being written.
    """
    failed = status == "failed"
    if failed and detail is None and error:
        detail = error_detail("Error", error, None)
    request = ctx.notes.get("fire_request") or {}
    keep = detail_to_keep(
        failed=failed,
        error_detail=_redacted(ctx, detail, pipeline=pipeline),
        payload_given=bool(request.get("given")),
        payload=ctx.fire.payload if ctx.fire is not None else None,
        rerun_of=request.get("rerun_of"),
    )
    if request.get("rerun_of"):
        run = replace(run, rerun_of=str(request["rerun_of"]))
    if ctx.notes.get("state_written"):
        run = replace(run, state_written=True)  # 4 bytes on the record (``sw``)
    if keep is None:
        return run
    try:
        run_details.save_detail(run.run_id, keep, expires=run.expires)
    except Exception:
        logger.warning(
            "run detail not saved", extra={"trigger_id": run.trigger_id, "run_id": run.run_id}
        )
    return run
