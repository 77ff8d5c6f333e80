"""Loading a trigger (or an event) on behalf of a caller: the tenant fence every use case passes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

from chalicelib.domain.errors import NotFound
from chalicelib.domain.records import EventRecord, Trigger
from chalicelib.services.auth import Principal
from chalicelib.store import event_reads, triggers

__all__ = ["load_owned", "load_owned_event"]


class _Owned(Protocol):
    @property
    def tenant(self) -> str: ...


T = TypeVar("T", bound=_Owned)


def _owned(
    principal: Principal, what: str, key: str, prefix: str, read: Callable[[str], T | None]
) -> T:
    """The record if it belongs to the caller's tenant; 404 otherwise (also for other
    tenants: another tenant's record is not there, as far as the caller can tell)."""
    if not key.startswith(prefix) or len(key) > 64:
        raise NotFound(f"{what} {key!r} not found")
    found = read(key)
    if found is None or found.tenant != principal.tenant:
        raise NotFound(f"{what} {key!r} not found")
    return found


def load_owned(principal: Principal, trigger_id: str) -> Trigger:
    """The trigger if it belongs to the caller's tenant; 404 otherwise (also for other tenants)."""
    return _owned(principal, "trigger", trigger_id, "trg_", triggers.get_trigger)


def load_owned_event(principal: Principal, event_id: str) -> EventRecord:
    """The caller's stored event; 404 for anything else (another tenant's is not there)."""
    return _owned(principal, "event", event_id, "evt_", event_reads.get_event)
