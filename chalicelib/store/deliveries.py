"""Webhook deliveries: one item per recorded delivery, one counter per trigger and hour."""

from __future__ import annotations

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.expressions.condition import Condition

from chalicelib.domain.records import Delivery, Page
from chalicelib.store.base import TableBase
from chalicelib.store.paging import take_page

__all__ = [
    "DeliveryModel",
    "put_delivery",
    "count_in_hour",
    "count_in_window",
    "query_deliveries",
    "deliveries_before",
    "COUNTER_PREFIX",
    "RATE_PREFIX",
]


class DeliveryModel(TableBase):
    """One webhook delivery to a known token, accepted or rejected, kept 7 days (TTL).

    ``sk`` is ``"<received ms:013d>#<id>"`` for a delivery. The same partition holds one
    counter per hour (``sk = "#n#<hour>"``, sorting before every delivery) that bounds how
    many rejected deliveries are recorded (``services/deliveries.py``).
    """

    class Meta(TableBase.Meta):
        table_name = "deliveries"

    trigger_id = UnicodeAttribute(hash_key=True)
    sk = UnicodeAttribute(range_key=True)
    id = UnicodeAttribute(null=True)
    received_ms = NumberAttribute(null=True)
    outcome = UnicodeAttribute(null=True)
    detail = UnicodeAttribute(null=True)
    status = NumberAttribute(null=True)
    event_id = UnicodeAttribute(null=True)
    size = NumberAttribute(null=True)
    headers = UnicodeAttribute(null=True)
    n = NumberAttribute(null=True)  # counters only: deliveries seen this hour
    expires = NumberAttribute(null=True)


# Counter items sort before every delivery ("#" < "0"), so a newest-first query of the
# deliveries (``sk >= "0"``) never meets them.
COUNTER_PREFIX = "#n#"
# The rate limit's counters (``services/events/rate.py``): "#r#<per_s>#<window>", same rule.
RATE_PREFIX = "#r#"


def _record(row: DeliveryModel) -> Delivery:
    return Delivery(
        trigger_id=row.trigger_id,
        sk=row.sk,
        id=row.id or "",
        received_ms=int(row.received_ms or 0),
        outcome=row.outcome or "",
        status=int(row.status) if row.status is not None else None,
        size=int(row.size or 0),
        headers=row.headers or "{}",
        detail=row.detail,
        event_id=row.event_id,
        expires=int(row.expires) if row.expires is not None else None,
    )


def put_delivery(record: Delivery) -> None:
    """Write one delivery (its id is fresh: a plain put)."""
    DeliveryModel(
        record.trigger_id,
        record.sk,
        id=record.id,
        received_ms=record.received_ms,
        outcome=record.outcome,
        detail=record.detail,
        status=record.status,
        event_id=record.event_id,
        size=record.size,
        headers=record.headers,
        expires=record.expires,
    ).save()


def count_in_hour(trigger_id: str, *, hour: int, expires: int) -> int:
    """Add one to the trigger's counter for ``hour`` (epoch hours); the new count.

    One UpdateItem (ADD): atomic under concurrent deliveries, so the cap it enforces is
    exact, and a flood costs one small write per delivery and no new items past the cap.
    """
    counter = DeliveryModel(trigger_id, f"{COUNTER_PREFIX}{hour}")
    counter.update(actions=[DeliveryModel.n.add(1), DeliveryModel.expires.set(expires)])
    return int(counter.n or 0)


def count_in_window(trigger_id: str, *, per_s: int, window: int, expires: int) -> int:
    """Add one to the trigger's rate-limit counter for a window; the new count (one ADD)."""
    counter = DeliveryModel(trigger_id, f"{RATE_PREFIX}{per_s}#{window}")
    counter.update(actions=[DeliveryModel.n.add(1), DeliveryModel.expires.set(expires)])
    return int(counter.n or 0)


def query_deliveries(
    trigger_id: str, *, limit: int, last_evaluated_key: dict | None, outcome: str | None
) -> Page[Delivery]:
    """Up to ``limit`` recorded deliveries, newest first, of one ``outcome`` (or any)."""
    results = DeliveryModel.query(
        trigger_id,
        DeliveryModel.sk >= "0",
        filter_condition=(DeliveryModel.outcome == outcome) if outcome else None,
        scan_index_forward=False,
        page_size=limit,
        last_evaluated_key=last_evaluated_key,
    )
    rows, last_key = take_page(results, DeliveryModel, limit=limit)
    return Page(tuple(_record(r) for r in rows), last_key)


def deliveries_before(trigger_id: str, *, before: str | None, limit: int) -> list[Delivery]:
    """Up to ``limit`` recorded deliveries, newest first, whose ``sk`` sorts before ``before``."""
    condition: Condition = DeliveryModel.sk >= "0"
    if before is not None:
        condition = DeliveryModel.sk.between("0", before)
    rows = DeliveryModel.query(
        trigger_id, condition, scan_index_forward=False, limit=limit + 1, page_size=limit + 1
    )
    return [_record(r) for r in rows if r.sk != before][:limit]
