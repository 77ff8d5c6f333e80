"""Reading one API key item by id (the trigger's creator, at fire time)."""

from __future__ import annotations

from chalicelib.domain.records import ApiKey
from chalicelib.store.keys import get_key

__all__ = ["find_key"]


def find_key(key_id: str) -> ApiKey | None:
    """The key ``key_id``, or None if there is none."""
    return get_key(key_id)
