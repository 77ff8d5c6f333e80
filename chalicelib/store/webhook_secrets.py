"""The write of a rotated webhook secret: the current one, and the previous ones in grace."""

from __future__ import annotations

import json

from pynamodb.exceptions import UpdateError
from pynamodb.expressions.update import Action

from chalicelib.domain.records import Trigger
from chalicelib.store.conditions import condition_failed
from chalicelib.store.triggers import TriggerModel

__all__ = ["write_secrets"]


def write_secrets(
    item: Trigger, *, sealed: str, previous: list[tuple[str, int]], now_ms: int
) -> bool:
    """Replace the secret ``item`` was read with; False if it changed meanwhile.

    ``previous`` (newest first) is what still verifies: the first in its own attributes,
    the rest as JSON in ``secret_older``. Fenced on the secret that was read, so two
    rotations at once cannot both keep "the previous one".
    """
    t = TriggerModel
    actions: list[Action] = [
        t.secret_sealed.set(sealed),
        t.updated_ms.set(now_ms),
        t.version.add(1),
    ]
    if previous:
        actions += [
            t.secret_prev_sealed.set(previous[0][0]),
            t.secret_prev_until.set(previous[0][1]),
        ]
    else:
        actions += [t.secret_prev_sealed.remove(), t.secret_prev_until.remove()]
    if len(previous) > 1:
        actions.append(t.secret_older.set(json.dumps(previous[1:], separators=(",", ":"))))
    else:
        actions.append(t.secret_older.remove())
    condition = (
        t.secret_sealed == item.secret_sealed
        if item.secret_sealed
        else t.secret_sealed.does_not_exist()
    )
    try:
        TriggerModel(item.id).update(actions=actions, condition=condition & t.id.exists())
    except UpdateError as exc:
        if condition_failed(exc):
            return False
        raise
    return True
