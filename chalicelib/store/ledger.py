"""The budget ledger: one item per trigger and period, reserve before a run, reconcile after.

The item keeps ``spent_usd``, ``reserved_usd`` and their sum ``committed_usd``, and in
``holds`` the estimate each run in flight reserved. Both writes are single conditional
UpdateItems, so concurrent runs cannot overspend together::

    run A: read (committed 0.6, last cost 0.3)   run B: read (committed 0.6, last 0.3)
    run A: ADD committed 0.3 IF committed <= 0.7  -> ok, committed 0.9
                                                  run B: ADD committed 0.3 IF committed <= 0.7
                                                         -> condition fails: refused

The reconcile is fenced on the run's hold, so it happens exactly once per run, also when
the reaper releases the hold of a run that died.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pynamodb.attributes import MapAttribute, NumberAttribute, UnicodeAttribute
from pynamodb.exceptions import DoesNotExist, PutError, UpdateError

from chalicelib.domain.budget import estimate_usd, reservation_room, usd
from chalicelib.store.base import TableBase, condition_failed, missing_path, plain_map

__all__ = [
    "LedgerModel",
    "Reservation",
    "LedgerTotals",
    "reserve",
    "reconcile",
    "holds_of",
    "recent_holds",
    "totals",
    "newest_totals",
]


class LedgerModel(TableBase):
    """Spend per trigger per budget period: atomic ADD, reserve then reconcile."""

    class Meta(TableBase.Meta):
        table_name = "ledger"

    trigger_id = UnicodeAttribute(hash_key=True)
    period = UnicodeAttribute(range_key=True)
    spent_usd = NumberAttribute(default=0)
    reserved_usd = NumberAttribute(default=0)
    # spent + reserved, kept as one number: a DynamoDB condition cannot add two attributes.
    committed_usd = NumberAttribute(default=0)
    last_cost_usd = NumberAttribute(null=True)
    holds: MapAttribute[str, Any] = MapAttribute(
        default=dict
    )  # run_id -> the estimate that run reserved
    expires = NumberAttribute(null=True)


@dataclass(frozen=True)
class Reservation:
    """A run's hold on a period's budget (``ok``), or why there was no room."""

    ok: bool
    period: str
    estimate_usd: float
    spent_usd: float = 0.0
    reserved_usd: float = 0.0


@dataclass(frozen=True)
class LedgerTotals:
    """A period's totals after a write."""

    spent_usd: float
    reserved_usd: float


def _get(trigger_id: str, period: str, *, consistent: bool = False) -> LedgerModel | None:
    try:
        return LedgerModel.get(trigger_id, period, consistent_read=consistent)
    except DoesNotExist:
        return None


def holds_of(item: LedgerModel) -> dict:
    """The ``holds`` map of a ledger item as a plain dict."""
    return plain_map(item.holds)


def _ensure_item(trigger_id: str, period: str, *, expires: int | None) -> None:
    # SET holds.<run> needs the map to exist; create the empty item once (racing
    # creators: the loser's conditional put fails and is ignored).
    try:
        LedgerModel(
            trigger_id,
            period,
            spent_usd=0,
            reserved_usd=0,
            committed_usd=0,
            holds={},
            expires=expires,
        ).save(condition=LedgerModel.trigger_id.does_not_exist())
    except PutError as exc:
        if not condition_failed(exc):
            raise


def reserve(
    trigger_id: str, period: str, *, run_id: str, max_usd: float, expires: int | None
) -> Reservation:
    """Hold an estimate of this run's cost, if spent + reserved + estimate <= max_usd."""
    item = _get(trigger_id, period)
    if item is None:
        _ensure_item(trigger_id, period, expires=expires)
    estimate = estimate_usd(item.last_cost_usd if item is not None else None)
    room = reservation_room(max_usd, estimate)
    if room >= 0:
        t = LedgerModel
        try:
            LedgerModel(trigger_id, period).update(
                actions=[
                    t.holds[run_id].set(estimate),
                    t.reserved_usd.add(estimate),
                    t.committed_usd.add(estimate),
                ],
                condition=(t.committed_usd <= room) & t.holds[run_id].does_not_exist(),
            )
            return Reservation(True, period, estimate)
        except UpdateError as exc:
            if not condition_failed(exc):
                raise
    fresh = _get(trigger_id, period, consistent=True)
    held = holds_of(fresh).get(run_id) if fresh is not None else None
    if held is not None:  # this very run reserved already (a redelivered message)
        return Reservation(True, period, float(held))
    return Reservation(
        False,
        period,
        estimate,
        spent_usd=float(fresh.spent_usd or 0) if fresh is not None else 0.0,
        reserved_usd=float(fresh.reserved_usd or 0) if fresh is not None else 0.0,
    )


def reconcile(
    trigger_id: str,
    period: str,
    *,
    run_id: str,
    estimate: float,
    actual_usd: float,
    record_cost: bool = True,
) -> LedgerTotals | None:
    """Release the run's hold and add what it really cost; None if the hold was gone already."""
    t = LedgerModel
    actual = usd(actual_usd)
    actions = [
        t.holds[run_id].remove(),
        t.reserved_usd.add(-estimate),
        t.committed_usd.add(round(actual - estimate, 6)),
        t.spent_usd.add(actual),
    ]
    if record_cost:
        actions.append(t.last_cost_usd.set(actual))
    item = LedgerModel(trigger_id, period)
    try:
        item.update(actions=actions, condition=t.holds[run_id] == estimate)
    except UpdateError as exc:
        if condition_failed(exc) or missing_path(exc):
            return None
        raise
    return LedgerTotals(float(item.spent_usd or 0), float(item.reserved_usd or 0))


def recent_holds(trigger_id: str, *, periods: int = 10) -> list[tuple[str, dict]]:
    """``(period, holds)`` of the trigger's newest ledger items (where a live run's hold is)."""
    found = []
    for item in LedgerModel.query(trigger_id, scan_index_forward=False, limit=periods):
        found.append((item.period, holds_of(item)))
    return found


def totals(trigger_id: str, period: str) -> LedgerTotals:
    """A period's spent and reserved amounts (zero when nothing was charged yet)."""
    item = _get(trigger_id, period, consistent=True)
    if item is None:
        return LedgerTotals(0.0, 0.0)
    return LedgerTotals(float(item.spent_usd or 0), float(item.reserved_usd or 0))


def newest_totals(trigger_id: str) -> tuple[str, LedgerTotals] | None:
    """The newest budget period with a ledger item, and its totals; None if none has one."""
    for item in LedgerModel.query(trigger_id, scan_index_forward=False, limit=1):
        return item.period, LedgerTotals(float(item.spent_usd or 0), float(item.reserved_usd or 0))
    return None
