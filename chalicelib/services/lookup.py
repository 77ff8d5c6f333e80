"""Loading a trigger on behalf of a caller: the tenant fence every use case passes."""

from __future__ import annotations

from chalicelib.domain.errors import NotFound
from chalicelib.services.auth import Principal
from chalicelib.store import dynamo
from chalicelib.store.models import TriggerModel

__all__ = ["load_owned"]


def load_owned(principal: Principal, trigger_id: str) -> TriggerModel:
    """The trigger if it belongs to the caller's tenant; 404 otherwise (also for other tenants)."""
    if not trigger_id.startswith("trg_") or len(trigger_id) > 64:
        raise NotFound(f"trigger {trigger_id!r} not found")
    item = dynamo.get_trigger(trigger_id)
    if item is None or item.tenant != principal.tenant:
        raise NotFound(f"trigger {trigger_id!r} not found")
    return item
