"""Records that cross the store boundary: frozen, plain, and free of pynamodb.

The store's functions take and return these (issue 27, item 1); the services never see a
model object, so a service cannot save, update or delete an item behind the store's back,
and the store's twin (``tests/memory_store.py``) can hand back the same types.

Converted so far: API keys, audit entries, and pages of either. The trigger, run and
event aggregates still cross as models (``tools/model_names_allowed.json`` counts them).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["ApiKey", "AuditEntry", "Page"]

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
