"""The audit log: who created, changed, deleted, enabled, disabled, fired or rotated what.

Entries are keyed ``(tenant, sk)`` with ``sk = <at_ms:013d>#<suffix>``, so a tenant's log
reads newest first with one Query. Details never hold a secret: values under names
that look like secrets are replaced before anything is written.

The trigger use cases call ``record`` directly; ``AuditPolicy`` (in the run pipeline,
``chalicelib.assembly``) records the disables the runner makes on its own (failures,
max_runs, expired, creator_gone...), with the actor ``system``.
"""

from __future__ import annotations

import json
import re
import secrets
from datetime import datetime
from typing import Any

from chalicelib.domain.epoch_ms import dt, ms
from chalicelib.domain.errors import ValidationError
from chalicelib.domain.records import AuditEntry
from chalicelib.services.auth import Principal
from chalicelib.services.lookup import load_owned
from chalicelib.services.pages import decode_cursor, encode_cursor, parse_limit
from chalicelib.services.pipeline import RunContext, RunPolicy
from chalicelib.services.runs import iso_ms
from chalicelib.store import audit as audit_store
from chalicelib.store import triggers
from chalicelib.workflows.remote import display_target

__all__ = [
    "record",
    "list_audit",
    "audit_view",
    "scrub",
    "SYSTEM_ACTOR",
    "AUDIT_RETENTION_DAYS",
]

SYSTEM_ACTOR = "system"
# Kept longer than runs: the log is what answers "who changed this, and when" months later.
AUDIT_RETENTION_DAYS = 400
_SECRET_NAME = re.compile(r"secret|token|password|passwd|api_?key|^key$|signature", re.I)
_MAX_DETAIL_BYTES = 8_000
CURSOR_SHAPE = {"tenant": "S", "sk": "S"}


def scrub(value: Any) -> Any:
    """``value`` with every entry whose name looks like a secret replaced by ``"[redacted]"``."""
    if isinstance(value, dict):
        return {
            k: "[redacted]" if _SECRET_NAME.search(str(k)) and v is not None else scrub(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [scrub(v) for v in value]
    # An http target's query values (users put tokens there) are masked too.
    return display_target(value) if isinstance(value, str) else value


def _detail_json(detail: dict | None) -> str:
    text = json.dumps(scrub(detail or {}), separators=(",", ":"), default=str)
    if len(text) > _MAX_DETAIL_BYTES:
        # A diff of huge values is not worth an item over DynamoDB's limits: keep the names.
        names = sorted((detail or {}).get("changes", {}) or (detail or {}))
        text = json.dumps({"clipped": True, "fields": names}, separators=(",", ":"))
    return text


def record(
    principal: Principal | None,
    action: str,
    *,
    tenant: str,
    trigger_id: str | None,
    now: datetime,
    detail: dict | None = None,
    sk: str | None = None,
) -> bool:
    """Write one audit entry; False if an entry with the same explicit ``sk`` exists already."""
    at_ms = ms(now)
    entry = AuditEntry(
        tenant=tenant,
        sk=sk or f"{at_ms:013d}#{secrets.token_hex(4)}",
        at_ms=at_ms,
        actor=principal.key_id if principal is not None else SYSTEM_ACTOR,
        action=action,
        trigger_id=trigger_id,
        detail=_detail_json(detail),
        expires=int(now.timestamp()) + AUDIT_RETENTION_DAYS * 86400,
    )
    return audit_store.put_entry(entry)


def audit_view(entry: AuditEntry) -> dict:
    """An audit entry as the API shows it."""
    try:
        detail = json.loads(entry.detail or "{}")
    except ValueError:
        detail = {}
    return {
        "id": entry.sk,
        "at": iso_ms(entry.at_ms),
        "actor": entry.actor,
        "action": entry.action,
        "trigger_id": entry.trigger_id,
        "detail": detail,
    }


def list_audit(principal: Principal, params: dict) -> dict:
    """The tenant's audit log, newest first; ``trigger_id`` and ``action`` narrow it."""
    limit = parse_limit(params.get("limit"))
    cursor = decode_cursor(
        params.get("cursor"), shape=CURSOR_SHAPE, fixed={"tenant": principal.tenant}
    )
    trigger_id = params.get("trigger_id")
    if trigger_id and len(trigger_id) > 64:
        raise ValidationError("trigger_id is too long", field="trigger_id")
    action = params.get("action")
    items: list[dict] = []
    last_key = cursor
    while len(items) < limit:
        page = audit_store.query_entries(
            principal.tenant,
            trigger_id=trigger_id,
            action=action,
            limit=limit - len(items),
            last_evaluated_key=last_key,
        )
        items.extend(audit_view(e) for e in page)
        last_key = page.last_evaluated_key
        if not last_key:
            break
    if trigger_id and not items and cursor is None:
        # As the runs of an unknown trigger: 404. A deleted trigger's entries stay
        # readable (they are found above), so only an id with no history at all is 404.
        load_owned(principal, trigger_id)
    return {"items": items, "next_cursor": encode_cursor(last_key)}


def _after_run(ctx: RunContext) -> None:
    """Record a disable the runner made, once (the sk is derived from the disabling write)."""
    if ctx.item.status != "active":
        return
    limits = ctx.spec.get("limits") or {}
    could_disable = (
        ctx.status != "succeeded"
        or ctx.item.kind == "at"
        or limits.get("max_runs") is not None
        or limits.get("expires_at") is not None
    )
    if not could_disable:
        return  # a plain successful run never disables: skip the read
    item = triggers.get_trigger(ctx.item.id)
    if item is None or item.status != "disabled" or item.disabled_reason in (None, "manual"):
        return
    updated_ms = int(item.updated_ms or 0)
    if updated_ms < ms(ctx.now):
        return  # disabled before this run started: not this run's doing
    record(
        None,
        "disable",
        tenant=item.tenant,
        trigger_id=item.id,
        now=dt(updated_ms),
        detail={"reason": item.disabled_reason, "run_id": ctx.message.run_id},
        sk=f"{updated_ms:013d}#disable#{item.id}",
    )


class AuditPolicy(RunPolicy):
    """``after_settle``: record a disable the run made (``_after_run``)."""

    name = "audit"

    def after_settle(self, ctx: RunContext) -> None:
        _after_run(ctx)
