"""One run as its page shows it, a rerun of it, and its log lines.

- ``GET /v1/runs/{id}``: the run (``run_lists.get_run_view``) with what its detail item
  keeps (``store/run_details``): the payload it was given and its error's detail. A run
  without a detail item ran on its trigger's own payload (shown from the trigger as it is
  now) or on its event's body (shown from the event while it is kept).
- ``POST /v1/runs/{id}/rerun``: a manual run with the same payload, marked ``rerun_of``.
- ``GET /v1/runs/{id}/logs``: the run's log lines (``run_logs``).
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from chalicelib.domain.errors import Conflict, NotFound, ValidationError
from chalicelib.domain.history import records_run
from chalicelib.domain.ids import trigger_id_of_run
from chalicelib.domain.records import Trigger
from chalicelib.domain.run_detail import clip_payload, error_detail
from chalicelib.domain.runs import SURFACE_CODES
from chalicelib.services.auth import Principal
from chalicelib.services.runs import iso_ms
from chalicelib.services.triggers.fire import start_manual
from chalicelib.services.triggers.run_lists import get_run_view, queued_run_view
from chalicelib.services.triggers.shared import last_run_of, stored_spec
from chalicelib.store import backfill, event_reads, payloads, run_details
from chalicelib.store import triggers as triggers_store
from chalicelib.store.backfill import NO_PAYLOAD

__all__ = ["get_run_page", "rerun", "owned_trigger_of_run", "RECORD_WAIT_S"]

# A run settled (``last_run``) less than this long ago whose record is not written yet is
# waited for, at most ``RECORD_WAIT_S``: a record lost with its runner is not waited for.
RECORD_DUE_WINDOW_MS = 30_000
RECORD_WAIT_S = 3.0


def owned_trigger_of_run(principal: Principal, run_id: str) -> Trigger | None:
    """The trigger of ``run_id`` if the caller's tenant owns it (None if gone)."""
    trigger_id = trigger_id_of_run(run_id) if len(run_id) <= 200 else None
    if trigger_id is None:
        raise NotFound(f"run {run_id[:80]!r} not found")
    item = triggers_store.get_trigger(trigger_id)
    if item is not None and item.tenant != principal.tenant:
        raise NotFound(f"run {run_id!r} not found")
    return item


def _waiting_view(principal: Principal, run_id: str) -> dict:
    """A run known only to its trigger or its request: a queued manual run not claimed
    yet, or a run between its settle (``last_run``) and its record (the next write)."""
    item = owned_trigger_of_run(principal, run_id)
    request = backfill.read_fire_request(run_id) if item is not None else None
    last = (last_run_of(item) or {}) if item is not None else {}
    settled = last.get("id") == run_id
    if item is None or (request is None and not settled):
        raise NotFound(f"run {run_id!r} not found")
    view = queued_run_view(item, run_id, request)
    if settled:
        view.update(
            status=str(last.get("status")),
            finished_at=iso_ms(last.get("finished_at")),
            error=last.get("error"),
        )
    return view


def _record_due(principal: Principal, run_id: str) -> bool:
    """Whether ``run_id`` has settled (the trigger's ``last_run`` names it) moments ago and
    its trigger keeps a record of it: the runner writes that record right after the settle."""
    trigger_id = trigger_id_of_run(run_id) if len(run_id) <= 200 else None
    item = triggers_store.get_trigger(trigger_id) if trigger_id else None
    if item is None or item.tenant != principal.tenant:
        return False
    last = last_run_of(item) or {}
    if last.get("id") != run_id or not isinstance(last.get("finished_at"), (int, float)):
        return False
    surface = SURFACE_CODES.get(run_id.partition(".")[2][13:14], "schedule")
    if not records_run(stored_spec(item).history, status=str(last.get("status")), surface=surface):
        return False
    return time.time() * 1000 - float(last["finished_at"]) < RECORD_DUE_WINDOW_MS


def _recorded_view(principal: Principal, run_id: str) -> dict | None:
    """The run from its record once the runner writes it (None when it did not in time).

    Between the settle and the record the run is final but only ``last_run`` knows it,
    without its output: a page read in that gap waits for the record (a few ms normally,
    at most ``RECORD_WAIT_S``), so a run shown as finished shows its output too.
    """
    if not _record_due(principal, run_id):
        return None
    deadline = time.monotonic() + RECORD_WAIT_S
    while time.monotonic() < deadline:
        time.sleep(0.05)
        try:
            return get_run_view(principal, run_id)
        except NotFound:
            continue
    return None


def _view(principal: Principal, run_id: str) -> dict:
    try:
        return get_run_view(principal, run_id)
    except NotFound:
        return _recorded_view(principal, run_id) or _waiting_view(principal, run_id)


def _event_payload(event_id: str | None) -> tuple[bool, Any]:
    """The body an event run was given, while its event is kept."""
    event = event_reads.get_event(event_id) if event_id else None
    if event is None:
        return False, None
    from chalicelib.services.events.policy import payload_of
    from chalicelib.store import s3

    if event.body is not None:
        raw = event.body.encode("utf-8")
    elif event.body_s3_key:
        raw = s3.get_body(event.body_s3_key)
    else:
        raw = b""
    return True, payload_of(raw)


def _payload(view: dict, detail: dict, item: Trigger | None) -> tuple[bool, Any, str]:
    """``(known, payload, source)``: the run's own, the event's, or the trigger's."""
    if "payload" in detail:
        return True, detail["payload"], "run"
    if view["surface"] == "event":
        found, payload = _event_payload(view.get("event_id"))
        return found, payload, "event"
    request = backfill.read_fire_request(view["id"]) if view["surface"] == "manual" else None
    if request and "p" in request:
        return True, request["p"], "run"
    if item is None:
        return False, None, "trigger"
    return True, payloads.load_spec(item).get("payload"), "trigger"


def get_run_page(principal: Principal, run_id: str) -> dict:
    """One run with its payload and its error's detail (also a queued or running one)."""
    view = _view(principal, run_id)
    item = triggers_store.get_trigger(view["trigger_id"])
    detail = run_details.get_detail(run_id) or {}
    known, payload, source = _payload(view, detail, item)
    shown, clipped = clip_payload(payload) if known else (None, False)
    found = detail.get("error_detail")
    if found is None and view.get("error") and view["status"] not in ("succeeded", "running"):
        found = error_detail(view["status"], view["error"], None)
    request = backfill.read_fire_request(run_id) if view["surface"] == "manual" else None
    return {
        **view,
        "rerun_of": view.get("rerun_of") or detail.get("rerun_of") or (request or {}).get("r"),
        "payload": shown,
        "payload_clipped": bool(detail.get("payload_clipped")) or clipped,
        "payload_source": source if known else None,
        "error_detail": found,
    }


def _no_fields(body: Any) -> None:
    """A rerun's optional body: a JSON object with no fields (422 naming the first one).

    A rerun runs the same payload: a ``payload`` sent here would be silently dropped, so
    it is refused like any unknown field (``POST /v1/triggers/{id}/fire`` takes one).
    """
    if body is None:
        return
    if not isinstance(body, dict):
        raise ValidationError("the body must be a JSON object", field=None)
    for name in body:
        raise ValidationError(f"unknown field {name!r}: a rerun takes no fields", field=name)


def rerun(principal: Principal, run_id: str, *, now: datetime, body: Any = None) -> dict:
    """A manual run of the run's trigger with the same payload; 202 ``{run_id}``.

    A payload the run's page keeps clipped (over 4 KB) cannot be given again: 409, and
    the caller fires with the payload in hand instead.
    """
    _no_fields(body)
    page = get_run_page(principal, run_id)
    if page["payload_clipped"]:
        raise Conflict(
            "this run's payload was over 4 KB and is kept clipped: fire the trigger with "
            "the payload instead (POST /v1/triggers/{id}/fire)"
        )
    own = page["payload_source"] in ("run", "event")
    payload = page["payload"] if own else NO_PAYLOAD
    started = start_manual(
        principal, page["trigger_id"], now=now, payload=payload, if_idle=False, rerun_of=run_id
    )
    return {**started, "rerun_of": run_id}
