"""The fenced writes of a debounce or batch window (``services/events/window.py``).

- The **manifest**: which events a window's run takes, written once per run id (a
  conditional put of an events-table item with no index keys) and read back by every
  later attempt of that run, so a retry takes exactly the same events.
- **Riders**: an event taken by a window's run leaves every index (queue, sweep) and is
  ``batched`` under that run's id, fenced on being still pending and never started; at the
  run's end it takes the run's status, fenced on (batched, that run id).
"""

from __future__ import annotations

import json

from botocore.exceptions import ClientError
from pynamodb.exceptions import DoesNotExist, UpdateError
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action

from chalicelib.domain.event_rules import parse_pending_key
from chalicelib.domain.records import EventRecord
from chalicelib.store.aws import client
from chalicelib.store.conditions import condition_failed
from chalicelib.store.events import EventModel, event_record

__all__ = [
    "BATCHED",
    "newest_pending_ready_ms",
    "take_window",
    "manifest_ids",
    "formed",
    "riders_of",
    "earlier_unfinished",
    "end_rider",
]

BATCHED = "batched"


def _update(event: EventModel, actions: list[Action], condition: Condition) -> bool:
    try:
        event.update(actions=actions, condition=condition)
    except UpdateError as exc:
        if condition_failed(exc):
            return False
        raise
    return True


def _manifest_id(run_id: str) -> str:
    return f"win_{run_id}"


def newest_pending_ready_ms(trigger_id: str) -> int | None:
    """The ready time of the newest event in a trigger's queue, or None if it is empty."""
    rows = EventModel.pending_by_trigger.query(
        trigger_id, scan_index_forward=False, limit=1, page_size=1
    )
    for row in rows:
        ready_ms, _ = parse_pending_key(row.pending_sk)
        return ready_ms
    return None


_CHUNK = 99  # riders per transaction: with the manifest, DynamoDB's 100 items


def _rider_take(event_id: str, *, run_id: str) -> dict:
    """The transaction item that takes one rider: pending, never started -> batched."""
    return {
        "Update": {
            "TableName": EventModel.Meta.table_name,
            "Key": {"id": {"S": event_id}},
            "UpdateExpression": "SET #s = :batched, #r = :run REMOVE #pt, #ps, #pk, #ra",
            "ConditionExpression": "#s = :pending AND #a = :zero",
            "ExpressionAttributeNames": {
                "#s": "status",
                "#r": "run_id",
                "#pt": "pending_trigger",
                "#ps": "pending_shard",
                "#pk": "pending_sk",
                "#ra": "retry_at",
                "#a": "attempt",
            },
            "ExpressionAttributeValues": {
                ":batched": {"S": BATCHED},
                ":run": {"S": run_id},
                ":pending": {"S": "pending"},
                ":zero": {"N": "0"},
            },
        }
    }


def _manifest_write(manifest: EventModel, *, ids: list[str], before: list[str] | None) -> dict:
    """The transaction item that writes the manifest (first chunk) or extends it (others)."""
    table = EventModel.Meta.table_name
    body = {"S": json.dumps(ids, separators=(",", ":"))}
    if before is None:
        manifest.body = body["S"]
        return {
            "Put": {
                "TableName": table,
                "Item": manifest.serialize(null_check=False),
                "ConditionExpression": "attribute_not_exists(#id)",
                "ExpressionAttributeNames": {"#id": "id"},
            }
        }
    return {
        "Update": {
            "TableName": table,
            "Key": {"id": {"S": str(manifest.id)}},
            "UpdateExpression": "SET #b = :new",
            "ConditionExpression": "#b = :old",
            "ExpressionAttributeNames": {"#b": "body"},
            "ExpressionAttributeValues": {
                ":new": body,
                ":old": {"S": json.dumps(before, separators=(",", ":"))},
            },
        }
    }


def _failed_items(exc: ClientError) -> list[int]:
    reasons = exc.response.get("CancellationReasons") or []
    return [i for i, r in enumerate(reasons) if r.get("Code") == "ConditionalCheckFailed"]


def _take_chunk(
    manifest: EventModel, chunk: list[str], *, taken: list[str], run_id: str
) -> list[str]:
    """One transaction: the manifest and a chunk of riders, all or none. The riders a
    condition refused (started or taken elsewhere) are left out and the rest tried again."""
    for _ in range(3):
        if not chunk:
            return []
        items = [_manifest_write(manifest, ids=taken + chunk, before=taken or None)]
        items += [_rider_take(i, run_id=run_id) for i in chunk]
        try:
            client("dynamodb").transact_write_items(TransactItems=items)
            return chunk
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "TransactionCanceledException":
                raise
            failed = _failed_items(exc)
            if 0 in failed or not failed:
                raise  # the manifest changed under us (another attempt), or no reason given
            refused = {chunk[i - 1] for i in failed}
            chunk = [i for i in chunk if i not in refused]
    return []


def take_window(
    run_id: str, *, trigger_id: str, tenant: str, candidates: list[str], now_ms: int, keep_s: int
) -> list[str]:
    """The window's riders: taken now with its manifest, or the ones a former attempt took.

    Each transaction writes the manifest with a chunk of riders (pending -> batched under
    ``run_id``), all or none: the manifest always lists exactly the riders taken. A window's
    first transaction is its decision; a later attempt of the same run (a retry after a
    crash) finds the manifest and takes those riders, no others.
    """
    existing = manifest_ids(run_id)
    if existing or formed(run_id):
        return existing
    manifest = EventModel(
        _manifest_id(run_id),
        trigger_id=trigger_id,
        tenant=tenant,
        received_ms=now_ms,
        status="window",
        run_id=run_id,
        source="window",
        expires=now_ms // 1000 + keep_s,
    )
    taken: list[str] = []
    try:
        for start in range(0, len(candidates), _CHUNK):
            taken += _take_chunk(
                manifest, candidates[start : start + _CHUNK], taken=taken, run_id=run_id
            )
        if not taken:  # a window of the head alone: its manifest still marks it formed
            client("dynamodb").put_item(
                TableName=EventModel.Meta.table_name,
                Item={**manifest.serialize(null_check=False), "body": {"S": "[]"}},
                ConditionExpression="attribute_not_exists(#id)",
                ExpressionAttributeNames={"#id": "id"},
            )
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") not in (
            "TransactionCanceledException",
            "ConditionalCheckFailedException",
        ):
            raise
        return manifest_ids(run_id)  # another attempt of this run got there first
    return taken


def manifest_ids(run_id: str) -> list[str]:
    """The event ids a window's run took (its manifest), or [] if it has none."""
    try:
        stored = EventModel.get(_manifest_id(run_id), consistent_read=True)
    except DoesNotExist:
        return []
    return [str(i) for i in json.loads(stored.body or "[]")]


def formed(run_id: str) -> bool:
    """Whether a window's run wrote its manifest (a former attempt started it)."""
    try:
        EventModel.get(_manifest_id(run_id), consistent_read=True, attributes_to_get=["id"])
    except DoesNotExist:
        return False
    return True


def earlier_unfinished(trigger_id: str, *, event_id: str, look_back: int = 5) -> bool:
    """Whether one of the ``look_back`` events that arrived just before ``event_id`` is still
    pending or running (an earlier window's run that is being retried)."""
    head = EventModel.get(event_id, consistent_read=True, attributes_to_get=["received_sk"])
    rows = EventModel.by_trigger.query(
        trigger_id,
        EventModel.received_sk < str(head.received_sk),
        scan_index_forward=False,
        limit=look_back,
        page_size=look_back,
    )
    ids = [row.id for row in rows]
    if not ids:
        return False
    return any(
        e.status in ("pending", "running") for e in EventModel.batch_get(ids, consistent_read=True)
    )


def riders_of(event_ids: list[str], *, run_id: str) -> list[EventRecord]:
    """The events of ``event_ids`` batched under ``run_id`` (a window's riders), read
    consistently; any other (ended, replayed since) is left out."""
    found = {
        e.id: e
        for e in EventModel.batch_get(event_ids, consistent_read=True)
        if e.status == BATCHED and e.run_id == run_id
    }
    return [event_record(found[i]) for i in event_ids if i in found]


def end_rider(event_id: str, *, run_id: str, status: str, now_ms: int) -> bool:
    """batched under ``run_id`` → the run's terminal status (False if fenced out)."""
    e = EventModel
    return _update(
        EventModel(event_id),
        [e.status.set(status), e.finished_ms.set(now_ms)],
        (e.status == BATCHED) & (e.run_id == run_id),
    )
