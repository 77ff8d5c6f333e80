"""A trigger's state: its own item in the states table, compare-and-set on ``version``.

A fire of a trigger that has no state reads nothing: the first fire that finds none
stamps the trigger item with its ``version`` (``stateless_version``), and while the
trigger is still at that version ``has_state`` says no. Every write of a state either
comes through ``write_state`` (whose first write removes the stamp in the same
transaction) or is a PATCH (which bumps ``version``), so the stamp can never hide a state.
Both transactions happen once per trigger (and once after each edit), never per fire::

    fire A: reads no state                      fire B: write_state(expected 0)
    fire A: txn [state absent?, stamp v]        fire B: txn [put state, remove stamp]
    -- serialized by DynamoDB: A first, B removes the stamp; B first, A's check fails
"""

from __future__ import annotations

import functools
import json
from typing import Any

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.connection import Connection
from pynamodb.exceptions import DoesNotExist, PutError, TransactWriteError
from pynamodb.transactions import TransactWrite

from chalicelib.domain.records import Trigger
from chalicelib.store.base import TableBase, condition_failed
from chalicelib.store.conditions import transaction_cancelled
from chalicelib.store.triggers import TriggerModel

__all__ = [
    "StateModel",
    "put_versioned",
    "get_state",
    "write_state",
    "has_state",
    "state_of",
    "mark_stateless",
    "transaction_connection",
]


class StateModel(TableBase):
    """A trigger's JSON state, compare-and-set on ``version``."""

    class Meta(TableBase.Meta):
        table_name = "states"

    trigger_id = UnicodeAttribute(hash_key=True)
    state = UnicodeAttribute(default="{}")
    version = NumberAttribute(default=0)
    # Only items that expire carry it (a run's detail item: ``store/run_details.py``).
    expires = NumberAttribute(null=True)


def get_state(trigger_id: str) -> tuple[dict, int]:
    """The trigger's state and its version (0 when never written)."""
    try:
        item = StateModel.get(trigger_id, consistent_read=True)
    except DoesNotExist:
        return {}, 0
    return json.loads(item.state or "{}"), int(item.version)


def has_state(item: Any) -> bool:
    """Whether a fire of ``item`` must read its state: False only if it is known to have none."""
    stamp = getattr(item, "stateless_version", None)
    return stamp is None or int(stamp) != int(getattr(item, "version", None) or 1)


def state_of(item: Trigger) -> tuple[dict, int]:
    """``get_state`` for a fire of ``item``, without a read when it is known to have none.

    A fire that reads and finds none stamps the trigger, so the fires after it skip the read.
    """
    if not has_state(item):
        return {}, 0
    state, version = get_state(item.id)
    if version == 0:
        mark_stateless(item.id, version=int(item.version or 1))
    return state, version


def transaction_connection() -> Connection:
    """The connection for a ``TransactWrite`` on the triggers and state tables (cached)."""
    meta = TriggerModel.Meta
    return _connection_to(meta.region, getattr(meta, "host", None))


@functools.lru_cache(maxsize=8)
def _connection_to(region: str | None, host: str | None) -> Connection:
    # One per endpoint, as a model keeps its own: each new Connection builds a botocore
    # session and client (~120 ms of CPU), which was most of a new trigger's first fire.
    return Connection(region=region, host=host)


def mark_stateless(trigger_id: str, *, version: int) -> bool:
    """Stamp the trigger as having no state at ``version``; False if a state or an edit came first."""
    t = TriggerModel
    try:
        with TransactWrite(connection=transaction_connection()) as tx:
            tx.condition_check(
                StateModel, trigger_id, condition=StateModel.trigger_id.does_not_exist()
            )
            tx.update(
                TriggerModel(trigger_id),
                actions=[t.stateless_version.set(version)],
                condition=t.id.exists() & (t.version == version),
            )
    except TransactWriteError as exc:
        if not transaction_cancelled(exc):
            raise
        return False
    return True


def _put(item: StateModel, condition: Any) -> bool:
    try:
        item.save(condition=condition)
    except PutError as exc:
        if condition_failed(exc):
            return False
        raise
    return True


def put_versioned(key: str, text: str, *, expected_version: int) -> bool:
    """Replace the states-table item ``key`` (a JSON ``text``) if it is still at
    ``expected_version`` (0: absent); False if another writer moved it first."""
    item = StateModel(key, state=text, version=expected_version + 1)
    if expected_version == 0:
        return _put(item, StateModel.trigger_id.does_not_exist())
    return _put(item, StateModel.version == expected_version)


def _put_first(item: StateModel) -> bool:
    # The first state of a trigger: in one transaction with the removal of a stamp.
    t = TriggerModel
    try:
        with TransactWrite(connection=transaction_connection()) as tx:
            tx.save(item, condition=StateModel.trigger_id.does_not_exist())
            tx.update(
                TriggerModel(item.trigger_id),
                actions=[t.stateless_version.remove()],
                condition=t.id.exists(),
            )
    except TransactWriteError as exc:
        if not transaction_cancelled(exc):
            raise
        if get_state(item.trigger_id)[1] != 0:
            return False  # another run wrote the state first
        # The trigger is gone (deleted while its run ran): the state is written as before.
        return _put(item, StateModel.trigger_id.does_not_exist())
    return True


def write_state(trigger_id: str, state: dict, *, expected_version: int) -> bool:
    """Compare-and-set the state on its version: concurrent runs never overwrite each other."""
    item = StateModel(
        trigger_id, state=json.dumps(state, separators=(",", ":")), version=expected_version + 1
    )
    if expected_version == 0:
        return _put_first(item)
    return _put(item, StateModel.version == expected_version)
