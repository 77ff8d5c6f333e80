"""What a workflow reaches through its fire: ``fire.secrets`` and ``fire.triggers``.

``fire.secrets`` (``services/secrets.py``) reads the tenant's secrets; the values a fire
read are masked in its error, output and the state it writes back. ``fire.triggers``
manages triggers as the trigger's creator; deleting its own trigger is carried out after
the run settles.
"""

from __future__ import annotations

from datetime import datetime
from types import ModuleType

from chalicelib.domain.errors import Forbidden, NotFound
from chalicelib.domain.records import Trigger
from chalicelib.services.auth import ROOT_KEY_ID, Principal, require
from chalicelib.services.pipeline import RunContext, RunPolicy
from chalicelib.services.secrets import SecretReader
from chalicelib.store.key_lookup import find_key

__all__ = ["TriggersClient", "creator_principal", "WorkflowAccessPolicy"]


def creator_principal(item: Trigger) -> Principal:
    """The trigger's creator as a principal: its key's tenant and role, if it still may act."""
    key_id = item.created_by
    if key_id == ROOT_KEY_ID:
        return Principal(ROOT_KEY_ID, item.tenant, "admin")
    stored = find_key(key_id) if key_id else None
    if key_id is None or stored is None or stored.revoked or stored.tenant != item.tenant:
        raise Forbidden("the key that created this trigger no longer exists")
    return Principal(key_id, stored.tenant, stored.role)


def _triggers() -> ModuleType:
    """The trigger use cases, imported on a workflow's first ``fire.triggers`` call.

    Cold start: they load the request models (pydantic), which no fire needs unless its
    workflow manages triggers.
    """
    from chalicelib.services import triggers

    return triggers


class TriggersClient:
    """``fire.triggers``: manage triggers as the trigger's creator, within its tenant and role.

    Every call goes through the same use cases as the REST API (validation, tenancy,
    audit). A fire may make at most ``MAX_WRITES`` changes, and may not change the
    trigger that is firing (its own state and next fire come back in the ``Result``).
    It may delete it: ``delete(fire.trigger_id)`` is carried out after the run settles
    (settle writes the trigger item, so deleting it first would race that write).
    """

    MAX_WRITES = 20

    def __init__(self, item: Trigger, *, now: datetime, notes: dict | None = None):
        self._item = item
        self._now = now
        self._writes = 0
        self._notes = notes if notes is not None else {}

    def _as(self, role: str) -> Principal:
        principal = creator_principal(self._item)
        require(principal, role)
        return principal

    def _write(self, trigger_id: str | None = None) -> Principal:
        if trigger_id == self._item.id:
            raise Forbidden(
                "a workflow cannot change the trigger it runs under; return a Result instead"
            )
        if self._writes >= self.MAX_WRITES:
            raise Forbidden(f"a fire may change at most {self.MAX_WRITES} triggers")
        principal = self._as("operator")
        self._writes += 1
        return principal

    def create(self, body: dict) -> dict:
        """Create a trigger (the ``POST /v1/triggers`` body); the new trigger's view."""
        return _triggers().create_trigger(self._write(), body, now=self._now)

    def update(self, trigger_id: str, body: dict) -> dict:
        """Change a trigger (the ``PATCH /v1/triggers/{id}`` body)."""
        return _triggers().patch_trigger(self._write(trigger_id), trigger_id, body, now=self._now)

    def delete(self, trigger_id: str) -> None:
        """Delete a trigger; the fire's own trigger is deleted once this run has settled."""
        if trigger_id == self._item.id:
            self._as("operator")
            self._notes["delete_self"] = True
            return
        _triggers().delete_trigger(self._write(trigger_id), trigger_id, now=self._now)

    def get(self, trigger_id: str) -> dict:
        """One trigger of the tenant, with its state."""
        return _triggers().get_trigger_view(self._as("viewer"), trigger_id)

    def list(self, **params: str) -> dict:
        """A page of the tenant's triggers (``tag=``, ``workflow=``, ``status=``...)."""
        return _triggers().list_triggers(self._as("viewer"), params)

    def __repr__(self) -> str:
        return f"TriggersClient(as={self._item.created_by!r})"


def _fire_extras(ctx: RunContext) -> dict:
    reader = SecretReader(tenant=ctx.item.tenant, scope=ctx.spec.get("secret_scope"))
    ctx.notes["secrets"] = reader
    return {"secrets": reader, "triggers": TriggersClient(ctx.item, now=ctx.now, notes=ctx.notes)}


def _deleted_after_fire(ctx: RunContext) -> bool:
    """An ``at`` trigger with ``after_fire: delete`` whose one scheduled run succeeded."""
    return (
        ctx.spec.get("after_fire") == "delete"
        and ctx.item.kind == "at"
        and ctx.message.surface == "schedule"
        and ctx.status == "succeeded"
    )


def _delete_self_finish(ctx: RunContext) -> None:
    """A workflow asked, through ``fire.triggers.delete``, to delete its own trigger; or
    an ``at`` trigger's ``after_fire: delete`` (once its run succeeded)."""
    by = "workflow" if ctx.notes.get("delete_self") else None
    if by is None and _deleted_after_fire(ctx):
        by = "after_fire"
    if by is None:
        return
    try:
        _triggers().delete_trigger(
            creator_principal(ctx.item), ctx.item.id, now=ctx.now, detail={"by": by}
        )
    except NotFound:
        pass  # deleted meanwhile: what was asked is done


def _mask_secrets(ctx: RunContext, text: str) -> str:
    reader = ctx.notes.get("secrets")
    return reader.mask(text) if reader is not None else text


def _mask_secrets_in_state(ctx: RunContext, state: dict) -> dict:
    # State is read by every viewer of the trigger: a secret a workflow copied into it is
    # masked like one in its error or output (the workflow reads it again next time).
    reader = ctx.notes.get("secrets")
    return reader.mask_value(state) if reader is not None else state


class WorkflowAccessPolicy(RunPolicy):
    """``fire_fields``: secrets and triggers; ``redact*``: mask the secrets read;
    ``after_settle``: delete the fire's own trigger if it asked to."""

    name = "workflow_access"

    def fire_fields(self, ctx: RunContext) -> dict:
        return _fire_extras(ctx)

    def redact(self, ctx: RunContext, text: str) -> str:
        return _mask_secrets(ctx, text)

    def redact_state(self, ctx: RunContext, state: dict) -> dict:
        return _mask_secrets_in_state(ctx, state)

    def after_settle(self, ctx: RunContext) -> None:
        _delete_self_finish(ctx)
