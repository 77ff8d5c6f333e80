"""The items of runs a person asks for: a manual run's payload, a backfill's pending slots.

Both live in the states table beside the trigger's state (run ids and ``{id}#backfill``
start with the trigger id, so they sort beside it).
"""

from __future__ import annotations

import json
from typing import Any

from pynamodb.exceptions import DoesNotExist, UpdateError

from chalicelib.store.conditions import condition_failed
from chalicelib.store.runs import RunModel
from chalicelib.store.state import StateModel, put_versioned
from chalicelib.store.triggers import TriggerModel

__all__ = [
    "save_fire_payload",
    "read_fire_payload",
    "read_fire_request",
    "take_fire_request",
    "NO_PAYLOAD",
    "delete_fire_payload",
    "read_pending",
    "write_pending",
    "drop_pending",
    "set_left",
    "mark_started",
    "recorded_statuses",
    "recent_costs",
]


def _payload_key(run_id: str) -> str:
    return f"{run_id}#payload"


def _pending_key(trigger_id: str) -> str:
    return f"{trigger_id}#backfill"


def save_fire_payload(run_id: str, payload: Any, *, rerun_of: str | None = None) -> None:
    """Keep a manual run's payload until the run settles (and the run it reruns, if any).

    A rerun of a run that had the trigger's own payload is saved without one (``p``).
    """
    data: dict = {} if payload is _NO_PAYLOAD else {"p": payload}
    if rerun_of is not None:
        data["r"] = rerun_of
    text = json.dumps(data, separators=(",", ":"))
    StateModel(_payload_key(run_id), state=text, version=0).save()


# ``save_fire_payload(run_id, NO_PAYLOAD, rerun_of=...)``: a rerun on the trigger's payload.
_NO_PAYLOAD: Any = object()
NO_PAYLOAD = _NO_PAYLOAD


def read_fire_request(run_id: str) -> dict | None:
    """What a manual run was fired with: ``{"p"?: payload, "r"?: rerun_of}``, or None."""
    try:
        stored = StateModel.get(_payload_key(run_id), consistent_read=True)
    except DoesNotExist:
        return None
    data = json.loads(stored.state or "{}")
    return data if isinstance(data, dict) else None


def take_fire_request(run_id: str, *, take: bool) -> bool:
    """Take (or give back) a queued manual run's request: one holder at a time.

    A queued run's message may be delivered twice; only the delivery that took the
    request runs it or sends it on, and the request is deleted once the run settled.
    """
    item = StateModel(_payload_key(run_id))
    field = StateModel.version
    try:
        item.update(
            actions=[field.set(1 if take else 0)],
            condition=(field == (0 if take else 1)),
        )
    except UpdateError as exc:
        if condition_failed(exc):
            return False
        raise
    return True


def read_fire_payload(run_id: str) -> tuple[bool, Any]:
    """``(True, payload)`` for a run fired with a body, ``(False, None)`` without one."""
    data = read_fire_request(run_id) or {}
    return ("p" in data), data.get("p")


def delete_fire_payload(run_id: str) -> None:
    """Forget a manual run's payload (no-op if it had none)."""
    try:
        StateModel(_payload_key(run_id)).delete()
    except DoesNotExist:
        pass


def read_pending(trigger_id: str) -> tuple[list[int], int]:
    """A backfill's pending slots (epoch ms, oldest first) and the item's version (0: none)."""
    try:
        stored = StateModel.get(_pending_key(trigger_id), consistent_read=True)
    except DoesNotExist:
        return [], 0
    return [int(x) for x in json.loads(stored.state or "[]")], int(stored.version)


def write_pending(trigger_id: str, slots: list[int], *, expected_version: int) -> bool:
    """Replace the pending slots if the item is still at ``expected_version``; False if not."""
    return put_versioned(
        _pending_key(trigger_id),
        json.dumps(slots, separators=(",", ":")),
        expected_version=expected_version,
    )


def drop_pending(trigger_id: str) -> None:
    """Forget a trigger's pending backfill."""
    try:
        StateModel(_pending_key(trigger_id)).delete()
    except DoesNotExist:
        pass


def set_left(trigger_id: str, left: int) -> None:
    """The trigger's ``backfill_left`` (removed at 0); nothing if the trigger is gone."""
    t = TriggerModel
    action = t.backfill_left.set(left) if left else t.backfill_left.remove()
    try:
        TriggerModel(trigger_id).update(actions=[action], condition=t.id.exists())
    except UpdateError as exc:
        if not condition_failed(exc):
            raise  # else the trigger was deleted meanwhile


def mark_started(trigger_id: str, slots: int) -> bool:
    """Set ``backfill_left`` only if no backfill is pending (one at a time); False if one is."""
    t = TriggerModel
    try:
        TriggerModel(trigger_id).update(
            actions=[t.backfill_left.set(slots)],
            condition=t.backfill_left.does_not_exist() | (t.backfill_left == 0),
        )
    except UpdateError as exc:
        if condition_failed(exc):
            return False
        raise
    return True


def recorded_statuses(trigger_id: str, run_ids: list[str]) -> dict[str, str]:
    """The status of each run id among ``run_ids`` that has a record."""
    keys = [(trigger_id, run_id) for run_id in run_ids]
    found: dict[str, str] = {}
    for start in range(0, len(keys), 100):
        for run in RunModel.batch_get(keys[start : start + 100]):
            found[run.run_id] = run.status
    return found


def recent_costs(trigger_id: str, *, limit: int) -> list[float]:
    """The cost of the trigger's latest ``limit`` finished (succeeded or failed) runs."""
    return [
        float(run.cost_usd or 0)
        for run in RunModel.query(trigger_id, scan_index_forward=False, limit=limit * 3)
        if run.status in ("succeeded", "failed") and run.finished_at is not None
    ][:limit]
