"""Epoch milliseconds and aware UTC instants, as the stored records keep them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

__all__ = ["ms", "dt", "opt_dt", "parse_iso"]


def ms(at: datetime) -> int:
    """``at`` as whole epoch milliseconds."""
    return int(round(at.timestamp() * 1000))


def dt(value: int) -> datetime:
    """Epoch milliseconds as an aware UTC instant."""
    return datetime.fromtimestamp(value / 1000, tz=UTC)


def opt_dt(value: int | None) -> datetime | None:
    """``dt``, with None for None."""
    return None if value is None else dt(value)


def parse_iso(value: Any) -> datetime | None:
    """An ISO-8601 string (``Z`` allowed) as an instant; anything else is None."""
    if not isinstance(value, str):
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))
