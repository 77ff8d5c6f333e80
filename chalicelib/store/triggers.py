"""The trigger item, the hot one: its table, its indexes, its reads and the due-index writes.

The due index is keyed ``(due_shard, due_at)``. ``due_at`` is the earliest instant the
heartbeat must look at the trigger: its next slot, or the lease of a run in flight when
that comes first (so a crashed run is reaped on time, even for a weekly cron).

A trigger whose schedule *stands* (``rules.stands``: a slot at least every 15 minutes)
is instead keyed at ``STANDING_DUE`` once its first slot is claimed, and stays there:
every tick reads it and sends the slots of its window from the projected schedule.
Its next slot is then ``next_slot`` (``ns``), which the index does not project, so a
claim that moves it writes one unit and nothing in the index; ``next_fire_at`` is
removed. ``next_slot_of`` reads whichever form the item is in. Every write other than
the claim that sets a slot writes the keyed form (and removes ``ns``); the next claim
stands the row again.
``in_flight`` is a map ``run_id → {l: lease_ms, s: started 0|1, k: surface, t: slot_ms}``;
its size is the number of runs that own the trigger now. The writes that change who owns
a trigger are in ``store/claims.py``.

Cost rule from DESIGN.md: the trigger item that the heartbeat and runner rewrite on every
fire stays well under 1 KB (DynamoDB bills a write unit per KB of the item written).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import Any

from pynamodb.attributes import MapAttribute, NumberAttribute, UnicodeAttribute
from pynamodb.exceptions import DoesNotExist, UpdateError
from pynamodb.expressions.condition import size
from pynamodb.indexes import GlobalSecondaryIndex, IncludeProjection, KeysOnlyProjection

from chalicelib.domain.records import Trigger
from chalicelib.store.base import TableBase, condition_failed, plain_map

__all__ = [
    "TriggerModel",
    "DueIndex",
    "TriggersByTenant",
    "DueRow",
    "STANDING_DUE",
    "trigger_record",
    "trigger_item",
    "next_slot_of",
    "is_standing",
    "iter_standing",
    "shard_of",
    "iter_due",
    "query_due",
    "get_trigger",
    "entry_lease",
    "in_flight_of",
    "entry_after_error",
    "advance_slot",
    "key_standing",
    "set_due",
    "disable_trigger",
]


class DueIndex(GlobalSecondaryIndex):
    """Sparse, sharded: only triggers with something to look at (a slot or a lease)."""

    class Meta:
        index_name = "due"
        projection = IncludeProjection(["next_fire_at", "sched"])

    due_shard = UnicodeAttribute(hash_key=True)
    due_at = NumberAttribute(range_key=True)


class TriggersByTenant(GlobalSecondaryIndex):
    class Meta:
        index_name = "by_tenant"
        projection = KeysOnlyProjection()

    tenant = UnicodeAttribute(hash_key=True)
    created_ms = NumberAttribute(range_key=True)


class TriggerModel(TableBase):
    """The hot item: claimed, started and settled on every fire."""

    class Meta(TableBase.Meta):
        table_name = "triggers"

    id = UnicodeAttribute(hash_key=True)
    tenant = UnicodeAttribute()
    workflow = UnicodeAttribute()
    kind = UnicodeAttribute()
    spec = UnicodeAttribute()  # compact JSON of the user's settings (never secrets)
    sched = UnicodeAttribute(null=True)  # compact JSON of the schedule, projected into `due`
    status = UnicodeAttribute(default="active")
    disabled_reason = UnicodeAttribute(null=True)
    due_shard = UnicodeAttribute(null=True)
    due_at = NumberAttribute(null=True)
    next_fire_at = NumberAttribute(null=True)
    in_flight: MapAttribute[str, Any] = MapAttribute(default=dict)
    consecutive_failures = NumberAttribute(default=0)
    failures_paused = NumberAttribute(null=True)  # records.Trigger.failures_paused
    run_count = NumberAttribute(default=0)
    last_run: MapAttribute[str, Any] = MapAttribute(null=True)
    created_by = UnicodeAttribute(null=True)
    created_ms = NumberAttribute()
    updated_ms = NumberAttribute()
    version = NumberAttribute(default=1)
    webhook_token = UnicodeAttribute(null=True)
    secret_sealed = UnicodeAttribute(null=True)
    secret_prev_sealed = UnicodeAttribute(null=True)
    secret_prev_until = NumberAttribute(null=True)
    # Older secrets still in their grace, JSON [[sealed, until_ms], ...] (rare: a rotation
    # during another's grace), so a second rotation does not end the first one's grace.
    secret_older = UnicodeAttribute(null=True)
    outbound_secret_sealed = UnicodeAttribute(null=True)
    # Who paused the trigger, when, and why (a person's note); cleared on enable.
    disabled_note = UnicodeAttribute(null=True)
    disabled_by = UnicodeAttribute(null=True)
    disabled_ms = NumberAttribute(null=True)
    # Slots of a backfill still to run (the slots themselves are in the states table):
    # a settle that sees it starts the next slot (services/backfill.py).
    backfill_left = NumberAttribute(null=True)
    # The trigger's ``version`` when a fire found it had no state item (store/state.py):
    # while ``version`` still has that value, a fire skips the state read. Two letters:
    # this item is rewritten on every fire.
    stateless_version = NumberAttribute(null=True, attr_name="sv")
    # The next slot of a standing trigger (``STANDING_DUE``): not projected into ``due``.
    next_slot = NumberAttribute(null=True, attr_name="ns")
    # Triggers as code (services/triggers/by_key.py): the stable name unique per tenant
    # (its reservation is store/trigger_keys.py), the tool that manages it, and the edit
    # made elsewhere since it last applied (JSON {at, by, fields}). Absent on most items.
    key = UnicodeAttribute(null=True)
    managed_by = UnicodeAttribute(null=True)
    drift = UnicodeAttribute(null=True)

    due = DueIndex()
    by_tenant = TriggersByTenant()


# The due key of a standing trigger: read by every tick, never moved by a fire.
STANDING_DUE = -1  # before every instant a lease or a slot can be


@dataclass(frozen=True)
class DueRow:
    """One row of the due index: all the heartbeat needs to claim."""

    trigger_id: str
    due_at: int
    next_fire_at: int | None
    sched: str | None

    @property
    def standing(self) -> bool:
        return self.due_at == STANDING_DUE


_MAPS = frozenset({"in_flight", "last_run"})
# The number fields (DynamoDB hands numbers back as ints or floats: the record has ints).
_NUMBERS = frozenset(f.name for f in fields(Trigger) if str(f.type).startswith("int"))


def _field_value(name: str, value: Any) -> Any:
    if value is None:
        return None
    if name in _MAPS:
        return plain_map(value)
    return int(value) if name in _NUMBERS else value


def trigger_record(stored: TriggerModel) -> Trigger:
    """The record a stored trigger item holds (its maps as plain dicts)."""
    values = {f.name: _field_value(f.name, getattr(stored, f.name)) for f in fields(Trigger)}
    if values["last_run"] == {}:
        values["last_run"] = None
    values["in_flight"] = values["in_flight"] or {}
    return Trigger(**values)


def trigger_item(record: Trigger) -> TriggerModel:
    """The item that stores ``record`` (not saved)."""
    values = {f.name: getattr(record, f.name) for f in fields(Trigger) if f.name != "id"}
    return TriggerModel(record.id, **values)


def next_slot_of(item: Trigger) -> int | None:
    """The trigger's next slot, standing (``next_slot``) or keyed (``next_fire_at``)."""
    value = item.next_slot if item.next_slot is not None else item.next_fire_at
    return None if value is None else int(value)


def is_standing(item: Trigger) -> bool:
    """Whether the item is in the standing form (its claims fence on ``next_slot``)."""
    return item.next_slot is not None


def shard_of(trigger_id: str, shards: int) -> str:
    """The due-index shard of a trigger (stable)."""
    return str(zlib.crc32(trigger_id.encode()) % max(1, shards))


def iter_due(
    shard: str, *, until_ms: int, after_ms: int | None = None, page_size: int = 500
) -> Iterator[DueRow]:
    """Rows of one shard whose ``due_at`` is at or before ``until_ms`` (and after
    ``after_ms``), earliest first.

    Read page by page as the caller consumes them: no cap on how many, the caller stops
    when its time is up.
    """
    key = (
        TriggerModel.due_at <= until_ms
        if after_ms is None
        else TriggerModel.due_at.between(after_ms + 1, until_ms)
    )
    for item in TriggerModel.due.query(shard, key, page_size=page_size):
        yield DueRow(
            trigger_id=item.id,
            due_at=int(item.due_at),
            next_fire_at=int(item.next_fire_at) if item.next_fire_at is not None else None,
            sched=item.sched,
        )


def iter_standing(shard: str, *, page_size: int = 500) -> Iterator[DueRow]:
    """The standing rows of one shard (``due_at == STANDING_DUE``), in id order."""
    for item in TriggerModel.due.query(
        shard, TriggerModel.due_at == STANDING_DUE, page_size=page_size
    ):
        yield DueRow(trigger_id=item.id, due_at=STANDING_DUE, next_fire_at=None, sched=item.sched)


def query_due(shard: str, *, until_ms: int, limit: int = 1000) -> list[DueRow]:
    """At most ``limit`` rows of ``iter_due``."""
    rows = []
    for row in iter_due(shard, until_ms=until_ms, page_size=min(limit, 500)):
        rows.append(row)
        if len(rows) >= limit:
            break
    return rows


def get_trigger(trigger_id: str, *, consistent: bool = True) -> Trigger | None:
    """The trigger, or None."""
    try:
        return trigger_record(TriggerModel.get(trigger_id, consistent_read=consistent))
    except DoesNotExist:
        return None


def entry_lease(entry: Any) -> int:
    """The lease (epoch ms) of an ``in_flight`` entry."""
    return int(entry.get("l", 0)) if isinstance(entry, dict) else 0


def in_flight_of(item: Trigger) -> dict:
    """The ``in_flight`` map of a trigger as a plain dict."""
    return plain_map(item.in_flight)


def entry_after_error(trigger_id: str, run_id: str) -> tuple[Trigger | None, dict | None]:
    """After a write that failed or went unanswered: the item and our ``in_flight`` entry.

    Used to tell a write that was applied (its reply lost) from one that was not. A read
    that fails too answers (None, None): nothing is known.
    """
    try:
        item = get_trigger(trigger_id)
    except Exception:
        return None, None
    if item is None:
        return None, None
    entry = in_flight_of(item).get(run_id)
    return item, entry if isinstance(entry, dict) else None


def _fenced_update(trigger_id: str, actions: list[Any], condition: Any) -> bool:
    """One conditional UpdateItem of the trigger; False if its condition failed."""
    try:
        TriggerModel(trigger_id).update(actions=actions, condition=condition)
    except UpdateError as exc:
        if condition_failed(exc):
            return False
        raise
    return True


def advance_slot(
    trigger_id: str,
    *,
    slot_ms: int,
    next_slot_ms: int | None,
    due_at: int | None,
    shard: str,
    standing: bool = False,
) -> bool:
    """Move past a slot without claiming it (overlap ``skip``), fenced on the slot.

    ``standing``: the item is standing; only its ``next_slot`` moves (nothing in the
    index), unless the schedule has no next slot. Fenced on the exact pointer.
    """
    t = TriggerModel
    actions: list[Any] = []
    condition = t.next_slot == slot_ms if standing else t.next_fire_at == slot_ms
    if standing and next_slot_ms is not None:
        actions.append(t.next_slot.set(next_slot_ms))
        due_at = None if due_at is None else STANDING_DUE
    elif next_slot_ms is None:
        actions += [t.next_fire_at.remove(), t.next_slot.remove()]
    else:
        actions.append(t.next_fire_at.set(next_slot_ms))
    if due_at is None:
        actions += [t.due_at.remove(), t.due_shard.remove()]
    elif not standing or next_slot_ms is None:
        actions += [t.due_at.set(due_at), t.due_shard.set(shard)]
    return _fenced_update(trigger_id, actions, condition)


def key_standing(trigger_id: str, *, slot_ms: int, shard: str) -> bool:
    """Key a standing row on its next slot again (the keyed form), fenced on that slot.

    For a restart of the local stack, whose queue died: keyed, the heartbeat sees the
    slot and sends it again if it is overdue (a standing slot is sent only from a
    window). The next claim stands the row again.
    """
    t = TriggerModel
    actions = [
        t.next_fire_at.set(slot_ms),
        t.due_at.set(slot_ms),
        t.due_shard.set(shard),
        t.next_slot.remove(),
    ]
    return _fenced_update(
        trigger_id, actions, (t.next_slot == slot_ms) & (t.due_at == STANDING_DUE)
    )


def set_due(
    trigger_id: str, *, expected_due_at: int | None, due_at: int | None, shard: str
) -> bool:
    """Re-key the trigger in the due index (after reaping, or when only a lease put it there)."""
    t = TriggerModel
    actions: list[Any] = (
        [t.due_at.remove(), t.due_shard.remove()]
        if due_at is None
        else [t.due_at.set(due_at), t.due_shard.set(shard)]
    )
    condition = t.id.exists() & (
        t.due_at.does_not_exist() if expected_due_at is None else t.due_at == expected_due_at
    )  # never on a trigger deleted since it was read: no bare row left in the index
    return _fenced_update(trigger_id, actions, condition)


def disable_trigger(trigger_id: str, *, reason: str, now_ms: int) -> Trigger | None:
    """Disable an active trigger with a visible reason (no-op if already disabled).

    With no run in flight it also leaves the due index in the same write, so the
    heartbeat stops sending its slots; a run in flight keeps it there (its lease must
    stay reapable), and the first message dropped for it takes it out.
    """
    t = TriggerModel
    base: list[Any] = [
        t.status.set("disabled"),
        t.disabled_reason.set(reason),
        t.disabled_ms.set(now_ms),
        t.updated_ms.set(now_ms),
        t.version.add(1),
    ]
    for idle in (True, False):
        item = TriggerModel(trigger_id)
        actions = [*base, t.due_at.remove(), t.due_shard.remove()] if idle else base
        condition = t.status == "active"
        if idle:
            condition &= size(t.in_flight) == 0
        try:
            item.update(actions=actions, condition=condition)
            return trigger_record(item)
        except UpdateError as exc:
            if not condition_failed(exc):
                raise
    return None
