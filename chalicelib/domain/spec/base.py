"""What every request model shares: strict JSON types, and the field checks reused."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from chalicelib.domain.errors import ValidationError
from chalicelib.domain.limits import secret_path_problem

__all__ = ["Strict", "ShortStr", "in_utc", "aware_utc", "printable", "note_text", "check_scope"]

ShortStr = Annotated[str, Field(min_length=1, max_length=200)]


class Strict(BaseModel):
    """A request model: no unknown fields, no NaN/Infinity, and strict JSON types."""

    model_config = ConfigDict(
        extra="forbid", allow_inf_nan=False, str_max_length=10_000, strict=True
    )


def _to_the_ms(value: datetime) -> datetime:
    """``value`` cut to the millisecond, the precision every instant is kept at: rounded
    instead, 9999-12-31T23:59:59.9999Z became year 10000 (a 500 on every read of it)."""
    return value.replace(microsecond=value.microsecond - value.microsecond % 1000)


def in_utc(value: datetime | None, field: str) -> datetime | None:
    """An aware instant in UTC, to the millisecond; one outside years 1-9999 in UTC names
    `field`."""
    if value is not None and value.tzinfo is None:
        raise ValueError("must include a timezone offset or Z")
    try:
        return _to_the_ms(value.astimezone(UTC)) if value is not None else None
    except OverflowError:  # e.g. 0001-01-01T00:00:00+01:00, which is in year 0 in UTC
        raise ValidationError("must be between years 1 and 9999 in UTC", field=field) from None


def aware_utc(value: datetime | None) -> datetime | None:
    """An aware instant in UTC (a naive one is refused)."""
    if value is not None and value.tzinfo is None:
        raise ValueError("must include a timezone offset or Z")
    try:
        return _to_the_ms(value.astimezone(UTC)) if value is not None else None
    except OverflowError:  # pydantic names the field of a ValueError
        raise ValueError("must be between years 1 and 9999 in UTC") from None


def printable(value: str | None) -> str | None:
    """A one-line title: no control characters."""
    # A NUL or another control character in a title breaks terminals, logs and CSV
    # exports downstream; a title is one line of text for people.
    if value is not None and any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ValueError("must not contain control characters (NUL, newline, tab...)")
    return value


def note_text(value: str | None) -> str | None:
    """A note as kept: lines and tabs allowed, no other control character, blanks trimmed."""
    # A note may span lines; other control characters (NUL...) have no business in it.
    if value is not None and any((ord(c) < 32 and c not in "\n\t") or ord(c) == 127 for c in value):
        raise ValueError("must not contain control characters other than newline and tab")
    # Surrounding blanks are not part of the note; a blank note is no note.
    return (value.strip() or None) if value is not None else None


def check_scope(value: str | None) -> str | None:
    """A ``secret_scope`` as given, if it is a valid secret path."""
    if value is not None:
        problem = secret_path_problem(value)
        if problem is not None:
            raise ValueError(problem)
    return value
