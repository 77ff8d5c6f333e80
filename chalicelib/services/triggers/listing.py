"""``GET /v1/triggers`` and ``GET /v1/workflows``: a tenant's triggers, the registered workflows."""

from __future__ import annotations

from chalicelib.domain.records import Trigger
from chalicelib.services.auth import Principal
from chalicelib.services.pages import choice, decode_cursor, encode_cursor, parse_limit
from chalicelib.services.triggers.shared import described_spec
from chalicelib.services.triggers.views import trigger_view
from chalicelib.store import payloads, trigger_reads
from chalicelib.workflows import REGISTRY, get_workflow
from chalicelib.workflows.remote import display_target

__all__ = ["TRIGGER_CURSOR", "WORKFLOW_CURSOR", "list_triggers", "list_workflows"]

TRIGGER_CURSOR = {"id": "S", "tenant": "S", "created_ms": "N"}
WORKFLOW_CURSOR = {"name": "S"}


def _shown(
    item: Trigger | None,
    about: dict,
    *,
    tag: str | None,
    workflow: str | None,
    status: str | None,
) -> dict | None:
    """The view of one listed trigger, or None when the filters drop it (or it is gone).

    ``about`` is its title and tags as the page read them (``payloads.load_abouts``; an
    old item still has them inline in its spec).
    """
    if item is None:
        return None
    if workflow and workflow not in (item.workflow, display_target(item.workflow)):
        return None
    if status and item.status != status:
        return None
    if tag and not described_spec(item, about).has_tag(tag):
        return None
    return trigger_view(item, about=about)


def list_triggers(principal: Principal, params: dict) -> dict:
    """A page of the tenant's triggers, newest first, filtered by tag/workflow/status."""
    limit = parse_limit(params.get("limit"))
    cursor = decode_cursor(
        params.get("cursor"), shape=TRIGGER_CURSOR, fixed={"tenant": principal.tenant}
    )
    tag, wf = params.get("tag") or None, params.get("workflow") or None
    status = choice(params, "status", ("active", "disabled"))

    def materialize(ids: list[str]) -> list:
        found = {t.id: t for t in trigger_reads.get_triggers(ids)}
        abouts = payloads.load_abouts(found.values())
        return [
            _shown(found.get(i), abouts.get(i, {}), tag=tag, workflow=wf, status=status)
            for i in ids
        ]

    items, last_key = trigger_reads.tenant_triggers_page(
        principal.tenant, limit=limit, cursor=cursor, materialize=materialize
    )
    return {"items": items, "next_cursor": encode_cursor(last_key)}


def list_workflows(params: dict) -> dict:
    """The registered Python workflows: name, description and state schema."""
    get_workflow("echo")  # loads the built-ins
    limit = parse_limit(params.get("limit"), default=100)
    # The same opaque cursor as every other list: one we did not issue is a 422.
    key = decode_cursor(params.get("cursor"), shape=WORKFLOW_CURSOR)
    after = key["name"]["S"] if key else ""
    names = sorted(n for n in REGISTRY if n > after)
    page = names[:limit]
    items = [
        {
            "name": name,
            "description": REGISTRY[name].description or None,
            "state_schema": REGISTRY[name].state_schema,
        }
        for name in page
    ]
    more = len(names) > limit
    cursor = encode_cursor({"name": {"S": page[-1]}}) if more and page else None
    return {"items": items, "next_cursor": cursor}
