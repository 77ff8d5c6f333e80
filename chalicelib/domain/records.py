"""Records that cross the store boundary: frozen, plain, and free of pynamodb.

The store's functions take and return these (issue 27, item 1); the services never see a
model object, so a service cannot save, update or delete an item behind the store's back,
and the store's twin (``tests/memory_store.py``) can hand back the same types.

Converted so far: API keys, audit entries, recorded webhook deliveries, run records, and
pages of them. The trigger and event aggregates still cross as models
(``tools/model_names_allowed.json`` counts them).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["ApiKey", "AuditEntry", "Delivery", "Page", "RunRecord"]

_R = TypeVar("_R")


@dataclass(frozen=True)
class ApiKey:
    """A stored API key: its SHA-256, never the key; the id is part of the key itself."""

    id: str
    tenant: str
    role: str
    key_hash: str
    created_ms: int
    created_by: str | None = None
    revoked: bool = False


@dataclass(frozen=True)
class AuditEntry:
    """One entry of a tenant's audit log, keyed ``(tenant, sk)``; never a secret."""

    tenant: str
    sk: str
    at_ms: int
    actor: str
    action: str
    trigger_id: str | None = None
    detail: str = "{}"
    expires: int | None = None


@dataclass(frozen=True)
class Delivery:
    """A webhook delivery that was not accepted (an accepted one is its event's item),
    keyed ``(trigger_id, sk)`` with ``sk = <received ms:013d>#<id>``."""

    trigger_id: str
    sk: str
    id: str
    received_ms: int
    outcome: str
    status: int | None = None
    size: int = 0
    headers: str = "{}"  # JSON of the clipped headers: never a credential
    detail: str | None = None
    event_id: str | None = None
    expires: int | None = None


@dataclass(frozen=True)
class RunRecord:
    """One fire's record, keyed ``(trigger_id, run_id)``; run ids are time-ordered within a
    trigger, and ``sort_key`` orders a tenant's runs (``ids.run_sort_key``). Instants are
    epoch milliseconds. A record changes by ``dataclasses.replace`` and a new ``put_run``."""

    trigger_id: str
    run_id: str
    tenant: str
    sort_key: str
    surface: str
    status: str
    workflow: str | None = None
    scheduled_for: int | None = None
    fire_at: int | None = None  # the slot plus its jitter (``schedule.jitter_s``)
    started_at: int | None = None
    finished_at: int | None = None
    lateness_ms: int | None = None
    error: str | None = None
    cost_usd: float = 0.0
    event_id: str | None = None
    attempt: int = 1
    output: str | None = None  # JSON text, clipped
    rerun_of: str | None = None  # a rerun's origin (reruns only)
    state_written: bool = False  # the run wrote its state
    expires: int | None = None


@dataclass(frozen=True)
class Page(Generic[_R]):
    """One page of a query: its records, and the key to resume after (None: the last page).

    Iterating a page iterates its records.
    """

    items: tuple[_R, ...]
    last_evaluated_key: dict | None = None

    def __iter__(self) -> Iterator[_R]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)
