"""One-off exceptions as the stored spec keeps them (``schedule.skips``, ``schedule.extras``).

Pydantic-free: the runner reads a skip's reason and an extra's payload on the fire path.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

__all__ = ["exception_of"]


def _ms_of(text: Any) -> int | None:
    try:
        instant = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    return round(instant.timestamp() * 1000)


def exception_of(
    spec: Mapping[str, Any], kind: str, key: str, slot_ms: int | None
) -> dict[str, Any] | None:
    """The stored ``schedule.<kind>`` entry whose ``key`` instant is ``slot_ms``, or None."""
    if slot_ms is None:
        return None
    entries = (spec.get("schedule") or {}).get(kind) or []
    for entry in entries:
        if isinstance(entry, Mapping) and _ms_of(entry.get(key)) == slot_ms:
            return dict(entry)
    return None
