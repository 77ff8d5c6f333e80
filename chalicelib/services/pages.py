"""Pages and cursors: the one way every list route reads ``limit``, ``cursor`` and choices.

A cursor is an opaque, URL-safe encoding of DynamoDB's ``LastEvaluatedKey``; a route
names the key's shape (and the values fixed by the caller's tenant) so a forged cursor is
a 422 here, never another tenant's page.
"""

from __future__ import annotations

import base64
import json

from chalicelib.domain.errors import ValidationError

__all__ = [
    "encode_cursor",
    "decode_cursor",
    "parse_limit",
    "choice",
]


def encode_cursor(key: dict | None) -> str | None:
    """An opaque pagination cursor for a DynamoDB ``LastEvaluatedKey``."""
    if not key:
        return None
    return base64.urlsafe_b64encode(json.dumps(key, separators=(",", ":")).encode()).decode()


def decode_cursor(
    cursor: str | None, *, shape: dict[str, str] | None = None, fixed: dict[str, str] | None = None
) -> dict | None:
    """The ``LastEvaluatedKey`` inside a cursor; 422 for a cursor we did not issue.

    ``shape`` names the key attributes and their DynamoDB types (``S``/``N``) and ``fixed``
    the values some must have (the caller's tenant): a forged cursor is refused here,
    before DynamoDB could answer it with an error, or with another tenant's page.
    """
    if not cursor:
        return None
    try:
        value = json.loads(base64.urlsafe_b64decode(cursor.encode() + b"==="))
        if not isinstance(value, dict):
            raise ValueError
        if shape is not None:
            _check_cursor(value, shape, fixed or {})
        return value
    except (ValueError, UnicodeDecodeError, TypeError):
        raise ValidationError("cursor is not valid", field="cursor") from None


def _check_cursor(value: dict, shape: dict[str, str], fixed: dict[str, str]) -> None:
    if set(value) != set(shape):
        raise ValueError("cursor keys")
    for name, kind in shape.items():
        attr = value[name]
        if not isinstance(attr, dict) or set(attr) != {kind} or not isinstance(attr[kind], str):
            raise ValueError("cursor attribute")
        text = attr[kind]
        if not text or len(text) > 300:
            raise ValueError("cursor attribute")
        if kind == "N" and not text.isdigit():
            raise ValueError("cursor number")
        if name in fixed and text != fixed[name]:
            raise ValueError("cursor of another scope")


def parse_limit(
    raw: str | None, *, default: int = 50, maximum: int = 200, name: str = "limit"
) -> int:
    """A count query parameter (``limit``, or ``name``), 1..maximum."""
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValidationError(f"{name} must be an integer", field=name) from None
    if not 1 <= value <= maximum:
        raise ValidationError(f"{name} must be between 1 and {maximum}", field=name)
    return value


def choice(params: dict, name: str, allowed: tuple[str, ...]) -> str | None:
    value = params.get(name) or None
    if value is not None and value not in allowed:
        raise ValidationError(f"{name} must be one of {', '.join(allowed)}", field=name)
    return value
