"""A run's detail item: its payload, its error's detail and its rerun origin, kept apart.

In the states table (keyed ``<run_id>#detail``, beside the trigger's other items apart),
with the run record's expiry. The run record, written by every settle, stays small: this
item is written only for a run that has something to keep (``domain/run_detail``), and
read only by ``GET /v1/runs/{id}``. It is written before the run record, so a record whose
detail exists never lacks it; a record write that then fails leaves an orphan that expires.

Its largest content (4 KB of payload, 8 KB of traceback, 1 KB of message) is well under an
item's 400 KB, so it never needs S3: at most ~14 write units, on a failed run only.
"""

from __future__ import annotations

import json
import time

from pynamodb.exceptions import DoesNotExist, PutError

from chalicelib.store.state import StateModel

__all__ = ["DETAIL_ATTEMPTS", "save_detail", "get_detail"]

DETAIL_ATTEMPTS = 3


def _key(run_id: str) -> str:
    return f"{run_id}#detail"


def save_detail(run_id: str, detail: dict, *, expires: int | None) -> None:
    """Write a run's detail (whole item: repeating it is harmless, so it is retried)."""
    text = json.dumps(detail, separators=(",", ":"), default=str)
    item = StateModel(_key(run_id), state=text, version=0, expires=expires)
    for attempt in range(DETAIL_ATTEMPTS):
        try:
            item.save()
            return
        except PutError:
            if attempt == DETAIL_ATTEMPTS - 1:
                raise
            time.sleep(0.02 * 2**attempt)


def get_detail(run_id: str) -> dict | None:
    """A run's detail, or None when it has none."""
    try:
        stored = StateModel.get(_key(run_id))
    except DoesNotExist:
        return None
    try:
        found = json.loads(stored.state or "{}")
    except ValueError:
        return None
    return found if isinstance(found, dict) else None
