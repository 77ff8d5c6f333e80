"""Reading one API key item by id (the trigger's creator, at fire time)."""

from __future__ import annotations

from pynamodb.exceptions import DoesNotExist

from chalicelib.store.models import KeyModel

__all__ = ["find_key"]


def find_key(key_id: str) -> KeyModel | None:
    """The key item ``key_id``, or None if there is none."""
    try:
        return KeyModel.get(key_id)
    except DoesNotExist:
        return None
