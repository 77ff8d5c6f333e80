"""``budget`` on a trigger's view: its cap and what the newest budget period has spent.

The view has no clock (views are built everywhere), so the period shown is the newest
one with a ledger item, named by ``period`` (``month:2026-12``, ``week:2026-W49``,
``day:2026-12-01``, ``total``): a client compares it with today's period. One ledger
read per trigger that has ``limits.max_usd``; none for the others.
"""

from __future__ import annotations

from chalicelib.domain.records import Trigger
from chalicelib.domain.trigger_spec import TriggerSpec
from chalicelib.store.ledger import LedgerTotals, newest_totals

__all__ = ["budget_view"]


def budget_view(item: Trigger, spec: dict) -> dict:
    """``{"budget": {max_usd, budget_period, period, spent_usd, reserved_usd}}`` or nothing."""
    found = TriggerSpec.from_dict(spec).budget
    if found is None:
        return {}
    max_usd, period = found
    newest = newest_totals(item.id)
    shown, spent = newest if newest is not None else (None, LedgerTotals(0.0, 0.0))
    return {
        "budget": {
            "max_usd": max_usd,
            "budget_period": period,
            "period": shown,
            "spent_usd": spent.spent_usd,
            "reserved_usd": spent.reserved_usd,
        }
    }
