"""An in-memory twin of the store functions a fire calls (the Chalice todo-app's ``InMemoryTodoDB``).

``MemoryStore`` has the fire path's, the heartbeat's and the run policies' store functions
under their names in the store's modules (``store/claims``, ``store/triggers``,
``store/state``, ``store/runs``, ``store/payloads``, ``store/cursors``, ``store/ledger``,
``store/locks``): the claim (``claim_slot_and_start``,
``claim_and_start``), ``start_run``, ``defer_run``, ``release_claim``, ``reap_run``,
``settle_run``, the state (``get_state``, ``write_state``, ``state_of``,
``mark_stateless``), the run record (``put_run``, ``put_run_if_in_flight``, ``get_run``),
the heartbeat's reads of the due index (``iter_due``, ``iter_standing``, ``query_due``)
and its writes of it (``advance_slot``, ``key_standing``, ``set_due``,
``disable_trigger``), the shards' enqueue cursors (``get_cursor``, ``advance_cursor``),
the budget ledger (``reserve``, ``reconcile``, ``recent_holds``, ``totals``,
``newest_totals``) and the serialize leases (``acquire``, ``wait``, ``leave``, ``release``,
``holder``), and the pure helpers a caller reads an item with (``in_flight_of``, ``next_slot_of``,
...), so an instance stands in for each of those modules where a service imported it
(``install``). Items are kept as the table keeps them (the store's pynamodb model, never
saved), and each read or write answers what the real store answers: a frozen ``Trigger``
record made from a copy of the item's DynamoDB form. The due index is what DynamoDB keeps
of it: the items that have both a ``due_shard`` and a ``due_at``, read earliest ``due_at``
first (ties in id order, as the moto server orders them). A ledger period keeps its money
as DynamoDB does, in exact decimals (each amount as pynamodb writes it, ``json.dumps`` of
the float), so ``0.1 + 0.2`` is ``0.3`` there too and a reservation's room is compared
exactly; its periods are read newest first in the order of their keys (the sort key's
order, not time's). A lock keeps its owner, its lease and its waiters as the lock item
does, and answers ``Holder`` and the hand-off as ``store/locks`` does.

A fenced write whose condition fails answers exactly as the real one does: the fire path's
fences report a lost race by their answer (``ClaimResult.LOST``, None, False), not by an
exception, and a write the real store would refuse (a required attribute missing) raises
the same ``ValueError`` pynamodb raises. A fenced write of a trigger that does not exist
does what DynamoDB's UpdateItem does: refused when its condition reads an attribute,
written into a new bare item (the key and what the write sets) when its condition only
asks for an attribute's absence (``set_due`` with ``expected_due_at=None``). A bare
item's missing attributes read back as their defaults (pynamodb fills them in), as the
real one's do, while the fences see them absent.
A ledger or lock write that the real store makes in a second UpdateItem (``acquire``
leaving the queue it was handed the key from) is made under the same lock here.
``tests/functional/test_store_contract.py`` holds the two to the same semantics.

It lives in ``tests/``, not in ``chalicelib/store/``: nothing in the product calls it, and
``chalicelib/`` is what Chalice ships to every Lambda (issue 27: the product package holds
the product).
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from types import ModuleType
from typing import Any, TypeVar

import botocore.client
import pytest

from chalicelib.domain.budget import estimate_usd, reservation_room, usd
from chalicelib.domain.records import RunRecord, Trigger
from chalicelib.domain.rules import due_with_slot
from chalicelib.store import claims, ledger, locks, payloads, triggers
from chalicelib.store import state as real_state
from chalicelib.store.base import plain_map
from chalicelib.store.triggers import STANDING_DUE, DueRow, TriggerModel

__all__ = ["MemoryStore", "STANDS_FOR", "no_aws", "without_queues"]

# The store modules whose fire-path and heartbeat functions the twin has (a consumer's
# other store modules stay real).
STANDS_FOR = frozenset(
    f"chalicelib.store.{name}"
    for name in ("claims", "triggers", "state", "runs", "payloads", "cursors", "ledger", "locks")
)

M = TypeVar("M", bound=TriggerModel)


def _copy(item: M) -> M:
    """The item as a read of the table would return it (its DynamoDB form and back)."""
    return type(item).from_raw_data(item.serialize(null_check=False))


def _read(item: TriggerModel) -> Trigger:
    """What the store hands out for ``item``: the record of a copy (nothing shared)."""
    return triggers.trigger_record(_copy(item))


def _dec(amount: float) -> Decimal:
    """A number as DynamoDB keeps it: the decimal string pynamodb writes (``json.dumps``)."""
    return Decimal(json.dumps(amount))


def _num(value: Decimal) -> Any:
    """A kept number as pynamodb reads it back (``json.loads`` of its string)."""
    return json.loads(str(value))


def _plain(value: dict) -> dict:
    """A map as it is written and read back (its own copy; tuples become lists)."""
    return json.loads(json.dumps(value))


@dataclass
class _Period:
    """A ledger item: one trigger's budget period (``LedgerModel``)."""

    expires: int | None
    spent: Decimal = Decimal(0)
    reserved: Decimal = Decimal(0)
    committed: Decimal = Decimal(0)  # spent + reserved: the one number a condition reads
    last_cost: Decimal | None = None
    holds: dict[str, Decimal] = field(default_factory=dict)

    def totals(self) -> ledger.LedgerTotals:
        return ledger.LedgerTotals(float(self.spent), float(self.reserved))


@dataclass
class _Lock:
    """A lock item (``LockModel``): the owner and its lease, and the queue."""

    owner: str | None = None
    lease_until: int | None = None
    waiters: dict[str, dict] = field(default_factory=dict)


class MemoryStore:
    """The fire path's store, in a few dicts (thread-safe: one lock around every write)."""

    # The pure helpers and constants callers use beside the writes, as in ``store/``.
    STANDING_DUE = triggers.STANDING_DUE
    DueRow = triggers.DueRow
    ClaimResult = claims.ClaimResult
    in_flight_of = staticmethod(triggers.in_flight_of)
    entry_lease = staticmethod(triggers.entry_lease)
    next_slot_of = staticmethod(triggers.next_slot_of)
    is_standing = staticmethod(triggers.is_standing)
    shard_of = staticmethod(triggers.shard_of)
    has_state = staticmethod(real_state.has_state)
    load_spec = staticmethod(payloads.load_spec)
    LedgerModel = ledger.LedgerModel
    Reservation = ledger.Reservation
    LedgerTotals = ledger.LedgerTotals
    holds_of = staticmethod(ledger.holds_of)
    LockModel = locks.LockModel
    Holder = locks.Holder

    def install(self, monkeypatch: Any, *consumers: ModuleType) -> None:
        """Stand in for the store's fire-path modules wherever ``consumers`` imported them
        (``from chalicelib.store import claims as claims_store`` and the like)."""
        for consumer in consumers:
            for name, value in vars(consumer).items():
                if isinstance(value, ModuleType) and value.__name__ in STANDS_FOR:
                    monkeypatch.setattr(consumer, name, self)

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._triggers: dict[str, TriggerModel] = {}
        self._states: dict[str, tuple[str, int]] = {}
        self._runs: dict[tuple[str, str], RunRecord] = {}
        self._cursors: dict[str, int] = {}
        self._ledger: dict[tuple[str, str], _Period] = {}
        self._locks: dict[str, _Lock] = {}

    # -- triggers -----------------------------------------------------------------------

    def put_trigger(self, item: TriggerModel | Trigger) -> None:
        """Store a trigger whole (what ``insert_trigger`` does, unconditionally; a test's seed)."""
        if isinstance(item, Trigger):
            item = triggers.trigger_item(item)
        item.serialize()  # pynamodb's own check: a required attribute missing raises
        with self._lock:
            self._triggers[item.id] = _copy(item)

    def get_trigger(self, trigger_id: str, *, consistent: bool = True) -> Trigger | None:
        with self._lock:
            item = self._triggers.get(trigger_id)
            return None if item is None else _read(item)

    def _entry(self, trigger_id: str, run_id: str) -> tuple[TriggerModel | None, dict | None]:
        item = self._triggers.get(trigger_id)
        if item is None:
            return None, None
        entry = plain_map(item.in_flight).get(run_id)
        return item, entry if isinstance(entry, dict) else None

    @staticmethod
    def _set_entry(item: TriggerModel, run_id: str, entry: dict | None) -> None:
        in_flight = plain_map(item.in_flight)
        if entry is None:
            in_flight.pop(run_id, None)
        else:
            in_flight[run_id] = entry
        item.in_flight = in_flight  # type: ignore[assignment]

    # -- the claim ----------------------------------------------------------------------

    def claim_slot_and_start(
        self,
        trigger_id: str,
        *,
        slot_ms: int,
        sched: str,
        next_slot_ms: int | None,
        run_id: str,
        lease_ms: int,
        capacity: int,
        shard: str,
        standing: bool = False,
        stands: bool = False,
        move_shard: bool = False,
        started_ms: int | None = None,
    ) -> tuple[str, Trigger | None]:
        with self._lock:
            item = self._triggers.get(trigger_id)
            if item is None:
                return claims.ClaimResult.LOST, None
            pointer = item.next_slot if standing else item.next_fire_at
            in_flight = plain_map(item.in_flight)
            if not (
                pointer is not None
                and int(pointer) == slot_ms
                and item.sched == sched
                and item.status == "active"
                and len(in_flight) < capacity
                and run_id not in in_flight
            ):
                return claims.ClaimResult.LOST, None
            entry = {"l": lease_ms, "s": 1, "k": "s", "t": slot_ms, "o": secrets.token_hex(4)}
            if started_ms is not None:
                entry["a"] = started_ms
            self._set_entry(item, run_id, entry)
            self._move_slot(
                item,
                next_slot_ms=next_slot_ms,
                lease_ms=lease_ms,
                shard=shard,
                standing=standing,
                stands=stands,
                move_shard=move_shard,
            )
            return claims.ClaimResult.CLAIMED, _read(item)

    @staticmethod
    def _move_slot(
        item: TriggerModel,
        *,
        next_slot_ms: int | None,
        lease_ms: int,
        shard: str,
        standing: bool,
        stands: bool,
        move_shard: bool,
    ) -> None:
        """``claims._slot_actions``, applied."""
        if stands and next_slot_ms is not None:
            item.next_slot = next_slot_ms
            if not standing:
                item.next_fire_at = None
                item.due_at = STANDING_DUE
            if move_shard or not standing:
                item.due_shard = shard
            return
        if next_slot_ms is None:
            item.next_fire_at, item.due_at = None, lease_ms
        else:
            item.next_fire_at = next_slot_ms
            item.due_at = due_with_slot([lease_ms], next_slot_ms=next_slot_ms)
        item.due_shard = shard
        if standing:
            item.next_slot = None

    def claim_and_start(
        self,
        trigger_id: str,
        *,
        run_id: str,
        surface: str,
        lease_ms: int,
        capacity: int,
        shard: str,
        slot_ms: int | None = None,
        started: bool = True,
        event_id: str | None = None,
        started_ms: int | None = None,
    ) -> tuple[str, Trigger | None]:
        with self._lock:
            item = self._triggers.get(trigger_id)
            in_flight = plain_map(item.in_flight) if item is not None else {}
            if (
                item is None
                or item.status != "active"
                or len(in_flight) >= capacity
                or run_id in in_flight
            ):
                return claims.ClaimResult.BUSY, None
            entry: dict = {"l": lease_ms, "s": 1 if started else 0, "k": surface[0]}
            if slot_ms is not None:
                entry["t"] = slot_ms
            if event_id is not None:
                entry["e"] = event_id
            if started and started_ms is not None:
                entry["a"] = started_ms
            self._set_entry(item, run_id, entry)
            item.due_at = lease_ms if item.due_at is None else item.due_at  # if_not_exists
            item.due_shard = shard if item.due_shard is None else item.due_shard
            return claims.ClaimResult.CLAIMED, _read(item)

    def start_run(
        self, trigger_id: str, *, run_id: str, lease_ms: int, started_ms: int | None = None
    ) -> Trigger | None:
        with self._lock:
            item, entry = self._entry(trigger_id, run_id)
            if item is None or entry is None or int(entry.get("s", -1)) != 0:
                return None
            entry.update({"s": 1, "l": lease_ms, "o": secrets.token_hex(4)})
            if started_ms is not None:
                entry["a"] = started_ms
            self._set_entry(item, run_id, entry)
            return _read(item)

    def release_claim(
        self, trigger_id: str, *, run_id: str, slot_ms: int | None, shard: str = "0"
    ) -> bool:
        with self._lock:
            item, entry = self._entry(trigger_id, run_id)
            if item is None or entry is None or int(entry.get("s", -1)) != 0:
                return False
            self._set_entry(item, run_id, None)
            if slot_ms is not None:
                item.next_fire_at, item.due_at, item.due_shard = slot_ms, slot_ms, shard
                item.next_slot = None
            return True

    def defer_run(self, trigger_id: str, *, run_id: str, lease_ms: int | None) -> bool:
        with self._lock:
            item, entry = self._entry(trigger_id, run_id)
            if item is None or entry is None or int(entry.get("s", -1)) != 1:
                return False
            self._set_entry(
                item, run_id, None if lease_ms is None else {**entry, "s": 0, "l": lease_ms}
            )
            return True

    # -- settle and reap ----------------------------------------------------------------

    def settle_run(
        self,
        trigger_id: str,
        *,
        run_id: str,
        succeeded: bool | None,
        last_run: dict,
        next_fire_override_ms: int | None = None,
        shard: str,
        failure_counts: bool = True,
    ) -> Trigger | None:
        with self._lock:
            item, entry = self._entry(trigger_id, run_id)
            if item is None:
                return None
            if entry is None:
                # As the real settle reads after a refused write: our own settle applied
                # already (its reply lost) if last_run is this very run's.
                last = plain_map(item.last_run)
                same = last.get("id") == run_id and _int(last.get("finished_at")) == _int(
                    last_run.get("finished_at")
                )
                return _read(item) if same else None
            self._set_entry(item, run_id, None)
            item.last_run = dict(last_run)  # type: ignore[assignment]
            if succeeded is not None:
                item.run_count = int(item.run_count or 0) + 1
            if succeeded is True:
                item.consecutive_failures = 0
            elif succeeded is False and failure_counts:
                item.consecutive_failures = int(item.consecutive_failures or 0) + 1
            if next_fire_override_ms is not None:
                item.next_fire_at = item.due_at = next_fire_override_ms
                item.due_shard, item.next_slot = shard, None
            return _read(item)

    def reap_run(
        self,
        trigger_id: str,
        *,
        run_id: str,
        lease_ms: int,
        last_run: dict,
        failure_counts: bool = True,
    ) -> bool:
        with self._lock:
            item, entry = self._entry(trigger_id, run_id)
            if item is None or entry is None or _int(entry.get("l")) != lease_ms:
                return False
            self._set_entry(item, run_id, None)
            item.run_count = int(item.run_count or 0) + 1
            item.last_run = dict(last_run)  # type: ignore[assignment]
            if failure_counts:
                item.consecutive_failures = int(item.consecutive_failures or 0) + 1
            return True

    # -- the due index (the heartbeat's reads) ------------------------------------------

    def _due_rows(self, shard: str, keep: Any) -> list[TriggerModel]:
        """The items of ``shard`` in the due index whose ``due_at`` ``keep`` accepts, in the
        index's order (copies: a caller that reads on never sees a later write)."""
        with self._lock:
            found = [
                _copy(item)
                for item in self._triggers.values()
                if item.due_shard == shard and item.due_at is not None and keep(int(item.due_at))
            ]
        return sorted(found, key=lambda item: (int(item.due_at), item.id))

    def iter_due(
        self, shard: str, *, until_ms: int, after_ms: int | None = None, page_size: int = 500
    ) -> Iterator[DueRow]:
        def keep(due: int) -> bool:
            return due <= until_ms and (after_ms is None or due > after_ms)

        for item in self._due_rows(shard, keep):
            yield DueRow(
                trigger_id=item.id,
                due_at=int(item.due_at),
                next_fire_at=_int(item.next_fire_at),
                sched=item.sched,
            )

    def iter_standing(self, shard: str, *, page_size: int = 500) -> Iterator[DueRow]:
        for item in self._due_rows(shard, lambda due: due == STANDING_DUE):
            yield DueRow(
                trigger_id=item.id, due_at=STANDING_DUE, next_fire_at=None, sched=item.sched
            )

    def query_due(self, shard: str, *, until_ms: int, limit: int = 1000) -> list[DueRow]:
        rows = []
        for row in self.iter_due(shard, until_ms=until_ms, page_size=min(limit, 500)):
            rows.append(row)
            if len(rows) >= limit:
                break
        return rows

    # -- the due index (the heartbeat's writes) -----------------------------------------

    def advance_slot(
        self,
        trigger_id: str,
        *,
        slot_ms: int,
        next_slot_ms: int | None,
        due_at: int | None,
        shard: str,
        standing: bool = False,
    ) -> bool:
        with self._lock:
            item = self._triggers.get(trigger_id)
            pointer = None if item is None else item.next_slot if standing else item.next_fire_at
            if item is None or _int(pointer) != slot_ms:
                return False
            if standing and next_slot_ms is not None:
                item.next_slot = next_slot_ms  # the index is not touched...
                if due_at is None:  # ...unless the row leaves it
                    item.due_at = item.due_shard = None
                return True
            if next_slot_ms is None:
                item.next_fire_at = item.next_slot = None
            else:
                item.next_fire_at = next_slot_ms
            if due_at is None:
                item.due_at = item.due_shard = None
            else:
                item.due_at, item.due_shard = due_at, shard
            return True

    def key_standing(self, trigger_id: str, *, slot_ms: int, shard: str) -> bool:
        with self._lock:
            item = self._triggers.get(trigger_id)
            if item is None or _int(item.next_slot) != slot_ms or _int(item.due_at) != STANDING_DUE:
                return False
            item.next_fire_at, item.due_at, item.due_shard = slot_ms, slot_ms, shard
            item.next_slot = None
            return True

    def set_due(
        self, trigger_id: str, *, expected_due_at: int | None, due_at: int | None, shard: str
    ) -> bool:
        with self._lock:
            item = self._triggers.get(trigger_id)
            if item is None or _int(item.due_at) != expected_due_at:
                return False  # the trigger is gone, or was re-keyed since it was read
            if due_at is None:
                item.due_at = item.due_shard = None
            else:
                item.due_at, item.due_shard = due_at, shard
            return True

    def disable_trigger(self, trigger_id: str, *, reason: str, now_ms: int) -> Trigger | None:
        with self._lock:
            item = self._triggers.get(trigger_id)
            if item is None or item.status != "active":
                return None
            # Idle (an in_flight map that is there and empty): it leaves the due index too.
            if item.in_flight is not None and not plain_map(item.in_flight):
                item.due_at = item.due_shard = None
            item.status, item.disabled_reason = "disabled", reason
            item.disabled_ms = item.updated_ms = now_ms
            item.version = int(item.version or 0) + 1  # ADD: an absent version counts from 0
            return _read(item)

    # -- the enqueue cursors ------------------------------------------------------------

    def get_cursor(self, shard: str) -> int | None:
        with self._lock:
            return self._cursors.get(shard)

    def advance_cursor(self, shard: str, *, expected: int | None, cursor_ms: int | None) -> bool:
        with self._lock:
            if self._cursors.get(shard) != expected:
                return False
            if cursor_ms is None:
                self._cursors.pop(shard, None)
            else:
                self._cursors[shard] = cursor_ms
            return True

    # -- state --------------------------------------------------------------------------

    def get_state(self, trigger_id: str) -> tuple[dict, int]:
        with self._lock:
            found = self._states.get(trigger_id)
        return ({}, 0) if found is None else (json.loads(found[0] or "{}"), found[1])

    def write_state(self, trigger_id: str, state: dict, *, expected_version: int) -> bool:
        text = json.dumps(state, separators=(",", ":"))
        with self._lock:
            found = self._states.get(trigger_id)
            held = 0 if found is None else found[1]  # a state's first version is 1
            if held != expected_version:
                return False
            self._states[trigger_id] = (text, expected_version + 1)
            item = self._triggers.get(trigger_id)
            if expected_version == 0 and item is not None:
                item.stateless_version = None  # the first state removes the stamp
            return True

    def mark_stateless(self, trigger_id: str, *, version: int) -> bool:
        with self._lock:
            item = self._triggers.get(trigger_id)
            if trigger_id in self._states or item is None or _int(item.version) != version:
                return False
            item.stateless_version = version
            return True

    def state_of(self, item: Trigger) -> tuple[dict, int]:
        if not real_state.has_state(item):
            return {}, 0
        state, version = self.get_state(item.id)
        if version == 0:
            self.mark_stateless(item.id, version=int(item.version or 1))
        return state, version

    # -- run records --------------------------------------------------------------------

    def put_run(self, run: RunRecord, *, only_new: bool = False) -> bool:
        key = (run.trigger_id, run.run_id)
        with self._lock:
            if only_new and key in self._runs:
                return False
            self._runs[key] = run  # frozen: what is kept cannot change under the store
            return True

    def put_run_if_in_flight(self, run: RunRecord, *, lease_ms: int) -> bool:
        with self._lock:
            _, entry = self._entry(run.trigger_id, run.run_id)
            if entry is None or _int(entry.get("l")) != lease_ms:
                return False
            self._runs[(run.trigger_id, run.run_id)] = run
            return True

    def get_run(
        self, trigger_id: str, run_id: str, *, consistent: bool = False
    ) -> RunRecord | None:
        with self._lock:
            return self._runs.get((trigger_id, run_id))

    # -- the budget ledger --------------------------------------------------------------

    def reserve(
        self, trigger_id: str, period: str, *, run_id: str, max_usd: float, expires: int | None
    ) -> ledger.Reservation:
        with self._lock:
            item = self._ledger.get((trigger_id, period))
            last = None if item is None or item.last_cost is None else _num(item.last_cost)
            if item is None:  # created first, even when the reservation is then refused
                item = self._ledger[(trigger_id, period)] = _Period(expires=expires)
            estimate = estimate_usd(last)
            room = reservation_room(max_usd, estimate)
            if room >= 0 and item.committed <= _dec(room) and run_id not in item.holds:
                item.holds[run_id] = _dec(estimate)
                item.reserved += _dec(estimate)
                item.committed += _dec(estimate)
                return ledger.Reservation(True, period, estimate)
            held = item.holds.get(run_id)
            if held is not None:  # this very run reserved already (a redelivered message)
                return ledger.Reservation(True, period, float(held))
            return ledger.Reservation(
                False,
                period,
                estimate,
                spent_usd=float(item.spent),
                reserved_usd=float(item.reserved),
            )

    def reconcile(
        self,
        trigger_id: str,
        period: str,
        *,
        run_id: str,
        estimate: float,
        actual_usd: float,
        record_cost: bool = True,
    ) -> ledger.LedgerTotals | None:
        actual = usd(actual_usd)
        with self._lock:
            item = self._ledger.get((trigger_id, period))
            held = None if item is None else item.holds.get(run_id)
            if item is None or held is None or held != _dec(estimate):
                return None  # the hold is gone (reconciled already) or was another's
            del item.holds[run_id]
            item.reserved += _dec(-estimate)
            item.committed += _dec(round(actual - estimate, 6))
            item.spent += _dec(actual)
            if record_cost:
                item.last_cost = _dec(actual)
            return item.totals()

    def _periods(self, trigger_id: str) -> list[tuple[str, _Period]]:
        """The trigger's ledger items, newest first (the sort key's order, descending)."""
        found = [(p, item) for (t, p), item in self._ledger.items() if t == trigger_id]
        return sorted(found, key=lambda pair: pair[0], reverse=True)

    def recent_holds(self, trigger_id: str, *, periods: int = 10) -> list[tuple[str, dict]]:
        with self._lock:
            newest = self._periods(trigger_id)[: max(periods, 0)]
            return [(p, {run: _num(v) for run, v in item.holds.items()}) for p, item in newest]

    def totals(self, trigger_id: str, period: str) -> ledger.LedgerTotals:
        with self._lock:
            item = self._ledger.get((trigger_id, period))
            return ledger.LedgerTotals(0.0, 0.0) if item is None else item.totals()

    def newest_totals(self, trigger_id: str) -> tuple[str, ledger.LedgerTotals] | None:
        with self._lock:
            for period, item in self._periods(trigger_id)[:1]:
                return period, item.totals()
            return None

    # -- the serialize leases -----------------------------------------------------------

    def holder(self, key: str) -> locks.Holder:
        with self._lock:
            item = self._locks.get(key)
            if item is None:
                return locks.Holder(None, None, {})
            lease = None if item.lease_until is None else int(item.lease_until)
            return locks.Holder(item.owner, lease, _plain(item.waiters))

    def acquire(self, key: str, *, run_id: str, lease_until_ms: int, now_ms: int) -> bool:
        with self._lock:
            item = self._locks.get(key)
            if item is not None and not (
                item.owner is None
                or item.owner == run_id
                or (item.lease_until is not None and item.lease_until < now_ms)
            ):
                return False  # held by another run whose lease has not run out
            if item is None:
                item = self._locks[key] = _Lock()  # an UpdateItem of no item creates it
            item.owner, item.lease_until = run_id, lease_until_ms
            item.waiters.pop(run_id, None)  # the owner leaves the queue (``leave``)
            return True

    def wait(self, key: str, *, run_id: str, entry: dict) -> None:
        with self._lock:
            item = self._locks.setdefault(key, _Lock())  # a queue with no owner yet
            if run_id not in item.waiters:  # keeps its original place (if_not_exists)
                item.waiters[run_id] = _plain(entry)

    def leave(self, key: str, *, run_id: str) -> None:
        with self._lock:
            item = self._locks.get(key)
            if item is not None:  # a missing key: the fenced REMOVE creates nothing
                item.waiters.pop(run_id, None)

    def release(self, key: str, *, run_id: str, handoff_until_ms: int) -> tuple[str, dict] | None:
        with self._lock:
            item = self._locks.get(key)
            if item is None or item.owner != run_id:
                return None  # not ours (any more)
            if not item.waiters:
                item.owner = item.lease_until = None
                return None
            next_id, entry = min(
                item.waiters.items(), key=lambda kv: (int(kv[1].get("w", 0)), kv[0])
            )
            del item.waiters[next_id]
            item.owner, item.lease_until = next_id, handoff_until_ms
            return next_id, _plain(entry)


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


@pytest.fixture
def no_aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every AWS call (boto3 or pynamodb) fails and is noted; the test fails if there was one
    (even one that the code under test caught): a test on the twin touches no AWS at all."""
    calls: list[str] = []

    def refuse(self: Any, operation_name: str, api_params: dict) -> dict:
        calls.append(operation_name)
        raise RuntimeError(f"AWS called: {operation_name}")

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", refuse)
    yield calls
    assert calls == []


def without_queues(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings with no queue at all (nothing is sent; call ``reset_settings`` after)."""
    for name in ("CRONHOOK_ALERTS_QUEUE_URL", "CRONHOOK_QUEUE_URL", "CRONHOOK_TICK_QUEUE_URL"):
        monkeypatch.delenv(name, raising=False)
