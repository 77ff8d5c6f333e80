"""Records that cross the store boundary: frozen plain dataclasses, nothing else.

The store's functions take and return these (issue 27, item 1); the services only ever
hold plain values, so a service cannot save, update or delete an item behind the store's
back, and the store's twin (``tests/memory_store.py``) can hand back the same types.

Every aggregate crosses as one of these: triggers, API keys, audit entries, recorded
webhook deliveries, run records, events (and the rows of their queue indexes), and pages
of them. A change to a stored item is one of the store's named writes (most of them fenced),
never a record handed back to be saved: to build a new trigger, ``dataclasses.replace`` the
record and give it to ``store/trigger_writes.insert_trigger``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

__all__ = [
    "ApiKey",
    "AuditEntry",
    "Delivery",
    "EventRecord",
    "Notification",
    "Page",
    "PendingRow",
    "RunRecord",
    "Trigger",
]

_R = TypeVar("_R")


@dataclass(frozen=True)
class Trigger:
    """A trigger as stored: its settings (``spec``, compact JSON), its schedule (``sched``),
    where the due index keys it, who owns it now (``in_flight``: ``run_id`` → ``{l: lease,
    s: started, k: surface, t: slot}``) and its counters. The field names are the item's.

    A read of the item, not a handle on it: the store's writes take the id (and, where they
    are fenced, the ``version`` or the ``in_flight`` size read here).
    """

    id: str
    tenant: str = ""
    workflow: str = ""
    kind: str = "schedule"
    spec: str = "{}"
    created_ms: int = 0
    updated_ms: int = 0
    sched: str | None = None
    status: str = "active"
    disabled_reason: str | None = None
    due_shard: str | None = None
    due_at: int | None = None
    next_fire_at: int | None = None
    in_flight: dict[str, Any] = field(default_factory=dict)
    consecutive_failures: int = 0
    # The failure streak a person's enable cleared, kept until the next success: that
    # success is still the trigger's ``recovered`` (alerts). None when there is none.
    failures_paused: int | None = None
    run_count: int = 0
    last_run: dict[str, Any] | None = None
    created_by: str | None = None
    version: int = 1
    webhook_token: str | None = None
    secret_sealed: str | None = None
    secret_prev_sealed: str | None = None
    secret_prev_until: int | None = None
    secret_older: str | None = None
    outbound_secret_sealed: str | None = None
    disabled_note: str | None = None
    disabled_by: str | None = None
    disabled_ms: int | None = None
    backfill_left: int | None = None
    stateless_version: int | None = None
    next_slot: int | None = None
    key: str | None = None
    managed_by: str | None = None
    drift: str | None = None


@dataclass(frozen=True)
class Notification:
    """One alert notification as kept: what it said (``body``) and how its sending ended."""

    body: dict[str, Any]
    outcome: str | None = None
    error: str | None = None


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
class EventRecord:
    """A received webhook (or EventBridge, S3, mail) event; its id comes from the dedupe key,
    so its put is the dedupe. Instants are epoch milliseconds.

    A *mark* (a delivery that stores no event) has no run (``run_id`` and ``received_sk``
    are empty and not stored) and none of the pending keys; an event has the pending keys
    while pending or running (``pending_sk = "<ready ms:013d>#<run id>"``).
    """

    id: str
    trigger_id: str
    tenant: str
    received_ms: int
    source: str
    run_id: str = ""
    received_sk: str = ""
    status: str = "pending"
    attempt: int = 0
    event_type: str | None = None
    dedupe_key: str | None = None
    body: str | None = None
    body_s3_key: str | None = None
    body_size: int = 0
    headers: str = "{}"
    pending_trigger: str | None = None
    pending_shard: str | None = None
    pending_sk: str | None = None
    retry_at: int | None = None
    dedupe_until: int | None = None
    finished_ms: int | None = None
    started_ms: int | None = None  # set by each attempt's start, with its run's lease
    lease_ms: int | None = None
    expires: int | None = None
    surface: str = "event"
    # An alias (a mark under a delivery's ``Idempotency-Key``): the event it names.
    alias_of: str | None = None


@dataclass(frozen=True)
class PendingRow:
    """A row of a pending index (the trigger's queue, or the sweep's): the event's id and
    its pending sort key, which carries the ready time and the run id."""

    id: str
    pending_sk: str | None


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
