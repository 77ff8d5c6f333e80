"""The trigger, state, payload and run writes under their old address.

Kept so that ``from chalicelib.store import dynamo`` and ``dynamo.<name>`` keep working;
each function lives in its aggregate's module: ``store/triggers.py`` (reads, due index),
``store/claims.py`` (the fenced writes of the claim+start → settle protocol),
``store/cursors.py``, ``store/payloads.py``, ``store/state.py``, ``store/runs.py``.
``condition_failed`` (``store/base.py``) is the one test of a failed write condition.
"""

from __future__ import annotations

from pynamodb.exceptions import DoesNotExist, PutError, UpdateError

from chalicelib.store.base import condition_failed, missing_path, plain_map
from chalicelib.store.claims import (
    SETTLE_ATTEMPTS,
    ClaimResult,
    claim_and_start,
    claim_slot_and_start,
    defer_run,
    drop_claim,
    reap_run,
    release_claim,
    settle_run,
    start_run,
)
from chalicelib.store.cursors import advance_cursor, get_cursor
from chalicelib.store.payloads import (
    PAYLOAD_INLINE_BYTES,
    delete_payload,
    externalize_payload,
    load_spec,
    payload_ref,
)
from chalicelib.store.runs import RUN_RECORD_ATTEMPTS, get_run, put_run
from chalicelib.store.state import get_state, has_state, mark_stateless, state_of, write_state
from chalicelib.store.triggers import (
    STANDING_DUE,
    DueRow,
    advance_slot,
    disable_trigger,
    entry_after_error,
    entry_lease,
    get_trigger,
    in_flight_of,
    is_standing,
    iter_due,
    iter_standing,
    key_standing,
    next_slot_of,
    query_due,
    set_due,
    shard_of,
)

__all__ = [
    "DueRow",
    "ClaimResult",
    "shard_of",
    "query_due",
    "iter_due",
    "iter_standing",
    "key_standing",
    "next_slot_of",
    "is_standing",
    "STANDING_DUE",
    "get_trigger",
    "claim_slot_and_start",
    "get_cursor",
    "advance_cursor",
    "advance_slot",
    "release_claim",
    "start_run",
    "claim_and_start",
    "drop_claim",
    "defer_run",
    "settle_run",
    "reap_run",
    "set_due",
    "disable_trigger",
    "get_state",
    "write_state",
    "has_state",
    "state_of",
    "mark_stateless",
    "put_run",
    "get_run",
    "entry_lease",
    "in_flight_of",
    "entry_after_error",
    "externalize_payload",
    "payload_ref",
    "load_spec",
    "delete_payload",
    "condition_failed",
    "missing_path",
    "plain_map",
    "SETTLE_ATTEMPTS",
    "RUN_RECORD_ATTEMPTS",
    "PAYLOAD_INLINE_BYTES",
    "DoesNotExist",
    "PutError",
    "UpdateError",
]
