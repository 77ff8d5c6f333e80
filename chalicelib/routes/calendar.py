"""A trigger's calendar: a slot skipped, an extra run, and what-if simulation."""

from __future__ import annotations

from urllib.parse import unquote

from chalicelib import wiring
from chalicelib.declare import WRITE_ERRORS
from chalicelib.routes.resource import Resource, route

triggers = wiring.lazy_module("chalicelib.services.triggers")

bp = Resource(__name__)


@route(
    bp,
    "/v1/triggers/{trigger_id}/skip",
    "POST",
    role="operator",
    summary="Skip one future slot, with a reason",
    answers={200: "TriggerOut"},
    body="SkipIn",
    errors=(*WRITE_ERRORS, 409),
    description="The slot must be one the schedule has (see the preview), after now and after "
    "the last slot that fired. When it comes it is recorded `skipped` with the reason and "
    "not run. Previews list it under `calendar` (`change: skipped`).",
)
def skip_slot(who, trigger_id):
    return triggers.skip_slot(who, trigger_id, bp.json(), now=bp.now())


@route(
    bp,
    "/v1/triggers/{trigger_id}/skip/{slot}",
    "DELETE",
    role="operator",
    summary="Undo a skip that has not passed",
    answers={200: "TriggerOut"},
    errors=(*WRITE_ERRORS, 409),
    description="`slot` is the skipped instant (ISO-8601). 404 when there is no skip there; "
    "409 when the slot has passed (its `skipped` record stands).",
)
def unskip_slot(who, trigger_id, slot):
    return triggers.unskip_slot(who, trigger_id, unquote(slot), now=bp.now())


@route(
    bp,
    "/v1/triggers/{trigger_id}/extra",
    "POST",
    role="operator",
    summary="One extra run at an instant",
    answers={200: "TriggerOut"},
    body="ExtraIn",
    errors=(*WRITE_ERRORS, 409),
    description="A future instant (at most 366 days ahead) that fires once as a slot of the "
    "schedule (run id and record as a slot's), with `payload` if given. Previews list it "
    "under `calendar` (`change: extra`).",
)
def add_extra(who, trigger_id):
    return triggers.add_extra(who, trigger_id, bp.json(), now=bp.now())


@route(
    bp,
    "/v1/schedules/simulate",
    "POST",
    role="viewer",
    summary="What-if: a trigger's slots over a window, through outages, and what each becomes",
    answers={200: "SimulationOut"},
    body="SimulateIn",
    errors=WRITE_ERRORS,
    description="`trigger` (a create body) or `trigger_id`, `from`, `to` (at most 366 days "
    "apart), `outages` (nothing runs from `from` to `to`) and `run_s` (how long a run holds "
    "the trigger, 30). Each slot's `outcome` is `run`, `skipped`, `missed`, `moved`, "
    "`holiday` or `extra`, decided by the engine's own schedule, catch-up and overlap "
    "rules; `estimated_usd` prices the runs at the benchmark's cost per fire.",
)
def simulate_schedule(who):
    return triggers.simulate_schedule(who, bp.json(), now=bp.now())
