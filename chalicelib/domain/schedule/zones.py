"""IANA zone names and wall times: the one place a zone is looked up."""

from __future__ import annotations

import functools
import zoneinfo
from datetime import datetime

from chalicelib.domain.errors import ValidationError

__all__ = ["canonical_timezone", "zone", "wall_of"]


@functools.cache
def _known_timezones() -> dict[str, str]:
    """Every IANA zone name, keyed by its casefolded form (no two names differ only in case)."""
    return {name.casefold(): name for name in zoneinfo.available_timezones()}


def canonical_timezone(name: str, *, field: str = "schedule.timezone") -> str:
    """The IANA spelling of a zone name given in any case ("europe/berlin" → "Europe/Berlin")."""
    canonical = _known_timezones().get(name.casefold()) if name else None
    if canonical is None:
        shown = f"'{name}'" if name else "an empty name"
        raise ValidationError(
            f"{shown} is not a known IANA timezone (e.g. 'Europe/Berlin')", field=field
        )
    return canonical


def zone(name: str) -> zoneinfo.ZoneInfo:
    """The zone of a name given in any case; a ``ValidationError`` if there is none."""
    return zoneinfo.ZoneInfo(canonical_timezone(name))


def wall_of(instant: datetime, tz: zoneinfo.ZoneInfo) -> datetime | None:
    """The wall time of `instant` in `tz`; None if it falls outside years 1-9999."""
    try:
        return instant.astimezone(tz).replace(tzinfo=None)
    except OverflowError:
        return None
