"""Trigger use cases behind the REST API: create, read, list, change, delete, fire, preview.

One module per use case (its seams):

- ``create``: ``POST /v1/triggers``.
- ``by_key`` (and ``drift``): triggers as code, ``PUT/GET/DELETE /v1/triggers/by-key/{key}``.
- ``views``: a trigger as the API shows it; ``GET /v1/triggers/{id}``.
- ``listing``: ``GET /v1/triggers`` and ``GET /v1/workflows``.
- ``patch`` (the version fence, the quota, the audit diff) and ``patch_write`` (the
  merged settings validated, the slot recomputed, the fenced write); the decisions are
  pure, in ``domain/trigger_patch.py``.
- ``enable``: enable, pause, and the bulk switch by tag or workflow.
- ``delete``: one trigger, or every trigger of a workflow.
- ``fire``: a manual run, now.
- ``previews``: the next fires of a schedule.
- ``run_lists``: the runs of a trigger or a tenant, and one run.

``shared`` holds what several use cases read the same way (the stored spec, the runs in
flight, the slot checks). The writes are in ``store/trigger_writes.py``, the reads in
``store/trigger_reads.py`` and ``store/run_reads.py``. This package re-exports the names
the routes, the other services and the tests use; its modules never import it.
"""

from __future__ import annotations

from chalicelib.domain.due import sched_json
from chalicelib.domain.runs import RUN_STATUSES, RUN_SURFACES
from chalicelib.domain.source_names import SOURCE_NAMES
from chalicelib.services.lookup import load_owned
from chalicelib.services.pages import decode_cursor, encode_cursor
from chalicelib.services.triggers.by_key import delete_by_key, get_by_key, plan_put, put_trigger
from chalicelib.services.triggers.create import create_trigger
from chalicelib.services.triggers.delete import delete_trigger, delete_workflow_triggers
from chalicelib.services.triggers.enable import set_enabled, set_enabled_many
from chalicelib.services.triggers.exceptions import add_extra, skip_slot, unskip_slot
from chalicelib.services.triggers.fire import fire_now
from chalicelib.services.triggers.listing import (
    TRIGGER_CURSOR,
    WORKFLOW_CURSOR,
    list_triggers,
    list_workflows,
)
from chalicelib.services.triggers.patch import PATCH_ATTEMPTS, patch_trigger
from chalicelib.services.triggers.patch_preview import dry_run_patch
from chalicelib.services.triggers.previews import preview_schedule, preview_trigger
from chalicelib.services.triggers.run_lists import (
    RUN_CURSOR,
    TRIGGER_RUN_CURSOR,
    get_run_view,
    list_runs,
    list_trigger_runs,
)
from chalicelib.services.triggers.shared import last_claimed_slot_ms
from chalicelib.services.triggers.simulate import simulate_schedule
from chalicelib.services.triggers.views import get_trigger_view, trigger_view
from chalicelib.store.paging import take_page

__all__ = [
    "create_trigger",
    "put_trigger",
    "plan_put",
    "get_by_key",
    "delete_by_key",
    "get_trigger_view",
    "list_triggers",
    "delete_trigger",
    "fire_now",
    "set_enabled",
    "set_enabled_many",
    "patch_trigger",
    "dry_run_patch",
    "skip_slot",
    "unskip_slot",
    "add_extra",
    "simulate_schedule",
    "delete_workflow_triggers",
    "list_workflows",
    "take_page",
    "preview_schedule",
    "preview_trigger",
    "list_trigger_runs",
    "list_runs",
    "get_run_view",
    "load_owned",
    "trigger_view",
    "encode_cursor",
    "decode_cursor",
    "TRIGGER_CURSOR",
    "WORKFLOW_CURSOR",
    "RUN_CURSOR",
    "TRIGGER_RUN_CURSOR",
    "RUN_STATUSES",
    "RUN_SURFACES",
    "SOURCE_NAMES",
    "PATCH_ATTEMPTS",
    "last_claimed_slot_ms",
    "sched_json",
]
