"""The table models under their old address: each is defined in its aggregate's module.

Kept so that ``from chalicelib.store.models import TriggerModel`` (and the table helpers)
keep working; new code imports from ``store/<aggregate>.py`` or ``store/tables.py``.
"""

from __future__ import annotations

from chalicelib.store.audit import AuditModel
from chalicelib.store.base import TableBase
from chalicelib.store.deliveries import DeliveryModel
from chalicelib.store.events import EventModel, EventsByTrigger, PendingAll, PendingByTrigger
from chalicelib.store.heartbeats import HeartbeatModel
from chalicelib.store.keys import KeyModel, KeysByTenant
from chalicelib.store.ledger import LedgerModel
from chalicelib.store.locks import LockModel
from chalicelib.store.runs import RunModel, RunsByTenant
from chalicelib.store.state import StateModel
from chalicelib.store.tables import (
    ALL_MODELS,
    TTL_ATTRIBUTES,
    base_name,
    configure_models,
    create_tables,
    table_definition,
)
from chalicelib.store.triggers import DueIndex, TriggerModel, TriggersByTenant

__all__ = [
    "TriggerModel",
    "StateModel",
    "RunModel",
    "EventModel",
    "LedgerModel",
    "AuditModel",
    "KeyModel",
    "LockModel",
    "DeliveryModel",
    "HeartbeatModel",
    "ALL_MODELS",
    "TTL_ATTRIBUTES",
    "configure_models",
    "create_tables",
    "table_definition",
    "base_name",
    "TableBase",
    "DueIndex",
    "TriggersByTenant",
    "RunsByTenant",
    "EventsByTrigger",
    "PendingByTrigger",
    "PendingAll",
    "KeysByTenant",
]
