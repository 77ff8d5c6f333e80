"""The fenced writes of an event's life: stored (the dedupe), queued, started, ended.

An event is one item of the events table; each transition is one conditional update
fenced on ``(status, run_id)``, so of two writers that race for the same transition
(a finish hook and the sweep, two messages of one event) exactly one counts:

    message A: pending -> running IF status = pending AND run_id = R  -> ok, attempt 1
                                       message B (same event, a duplicate delivery):
                                       pending -> running IF status = pending ... -> fails

Every function answers whether its write happened (False / None: fenced out); an error
that is not a failed condition is raised. The index attributes follow the rules of
``models.EventModel``: ``pending_trigger`` while the event waits in its trigger's queue,
``pending_shard``/``pending_sk`` (the sweep's index) until the event ends.
"""

from __future__ import annotations

from dataclasses import replace

from botocore.exceptions import BotoCoreError, ClientError
from pynamodb.exceptions import DoesNotExist, PutError, UpdateError
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action

from chalicelib.domain.errors import ServiceUnavailable
from chalicelib.domain.event_rules import pending_key
from chalicelib.domain.records import EventRecord, RunRecord
from chalicelib.store.aws import client
from chalicelib.store.conditions import condition_failed
from chalicelib.store.events import EventModel, event_item, event_record
from chalicelib.store.runs import RunModel, run_item

__all__ = [
    "put_event",
    "requeue",
    "start_attempt",
    "end_pending",
    "wait_again",
    "end_attempt",
    "reset_for_replay",
    "put_recovered_run",
]

_NOT_STORED = "the event could not be stored; try again"


def put_event(
    record: EventRecord, *, now_ms: int, mark: bool = False, alias: EventRecord | None = None
) -> EventRecord | None:
    """Store a new event; if its id is taken within the dedupe window, return that event.

    One PutItem: the condition is the dedupe, and ``ReturnValuesOnConditionCheckFailure``
    hands back the original (pynamodb cannot ask for it, so this uses the client). A
    ``mark`` (a delivery that stores no event) lacks the run and index attributes on
    purpose. With an ``alias`` (the mark of the delivery's ``Idempotency-Key``), the two
    puts are one transaction with the same condition each: both are stored, or neither,
    and a taken alias answers the event it names.
    """
    if alias is not None:
        return _put_with_alias(record, alias, now_ms=now_ms)
    try:
        client("dynamodb").put_item(
            TableName=EventModel.Meta.table_name,
            Item=event_item(record).serialize(null_check=not mark),
            **_dedupe_condition(now_ms),
        )
        return None
    except ClientError as exc:
        if not condition_failed(exc):
            raise ServiceUnavailable(_NOT_STORED) from None
        old = exc.response.get("Item")
    except BotoCoreError:
        raise ServiceUnavailable(_NOT_STORED) from None
    return _stored(record.id, old)


def _dedupe_condition(now_ms: int) -> dict:
    """The dedupe condition of a put: the id is new, or its dedupe window is over."""
    return {
        "ConditionExpression": "attribute_not_exists(#id) OR #until < :now",
        "ExpressionAttributeNames": {"#id": "id", "#until": "dedupe_until"},
        "ExpressionAttributeValues": {":now": {"N": str(now_ms)}},
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }


def _stored(event_id: str, old: dict | None) -> EventRecord:
    """The item a failed condition found (the answer's image, else a strong read)."""
    if old:
        return event_record(EventModel.from_raw_data(old))
    try:
        return event_record(EventModel.get(event_id, consistent_read=True))
    except DoesNotExist:
        raise ServiceUnavailable(_NOT_STORED) from None


def _put_with_alias(record: EventRecord, alias: EventRecord, *, now_ms: int) -> EventRecord | None:
    """The event and its alias in one transaction; on a duplicate, the event seen before:
    the content's own (its id taken) first, else the one the alias names."""
    table = EventModel.Meta.table_name
    puts = [
        {"Put": {"TableName": table, "Item": event_item(r).serialize(null_check=r is record)}}
        for r in (record, alias)
    ]
    for put in puts:
        put["Put"].update(_dedupe_condition(now_ms))
    try:
        client("dynamodb").transact_write_items(TransactItems=puts)
        return None
    except ClientError as exc:
        reasons = exc.response.get("CancellationReasons") or []
        taken = [r.get("Code") == "ConditionalCheckFailed" for r in reasons]
        if len(taken) != 2 or not any(taken):
            # A conflicting transaction, throttling, a server error: nothing was stored.
            raise ServiceUnavailable(_NOT_STORED) from None
    except BotoCoreError:
        raise ServiceUnavailable(_NOT_STORED) from None
    if taken[0]:
        return _stored(record.id, reasons[0].get("Item"))
    named = _stored(alias.id, reasons[1].get("Item"))
    if named.alias_of is None:
        return named  # not an alias (cannot happen: the key namespaces differ)
    try:
        return event_record(EventModel.get(named.alias_of, consistent_read=True))
    except DoesNotExist:
        # The event it named is gone (its trigger was deleted): a duplicate of nothing.
        return replace(named, status="ignored")


def _update(event: EventModel, actions: list[Action], condition: Condition) -> bool:
    try:
        event.update(actions=actions, condition=condition)
    except UpdateError as exc:
        if condition_failed(exc):
            return False
        raise
    return True


def requeue(event_id: str, *, run_id: str, trigger_id: str, ready_by_ms: int) -> bool:
    """Put an event that waited (retry backoff, deferral) back in its trigger's queue.

    Only once its backoff is over by ``ready_by_ms``: a queued event must be able to
    start, or pulling it would only drop it and pull it again.
    """
    e = EventModel
    return _update(
        EventModel(event_id),
        [e.pending_trigger.set(trigger_id)],
        (e.status == "pending")
        & (e.run_id == run_id)
        & e.pending_trigger.does_not_exist()
        & (e.retry_at.does_not_exist() | (e.retry_at <= ready_by_ms)),
    )


def start_attempt(
    event_id: str, *, run_id: str, now_ms: int, lease_ms: int, ready_by_ms: int
) -> EventRecord | None:
    """pending → running for this run id: the event's start fence (None if fenced out).

    The event leaves its trigger's queue but stays in the sweep's index (same key) until
    it ends, and records when this attempt started and its run's lease: that is what
    lets the sweep finish the bookkeeping of a run whose finish hook never ran.
    """
    e = EventModel
    event = EventModel(event_id)
    started = _update(
        event,
        [
            e.status.set("running"),
            e.attempt.add(1),
            e.pending_trigger.remove(),
            e.retry_at.remove(),
            e.started_ms.set(now_ms),
            e.lease_ms.set(lease_ms),
        ],
        (e.status == "pending")
        & (e.run_id == run_id)
        & (e.retry_at.does_not_exist() | (e.retry_at <= ready_by_ms)),
    )
    return event_record(event) if started else None  # the item as the update left it


def end_pending(event_id: str, *, run_id: str, status: str, now_ms: int) -> bool:
    """A pending event that will never run (its trigger is disabled or gone): terminal."""
    e = EventModel
    return _update(
        EventModel(event_id),
        [
            e.status.set(status),
            e.finished_ms.set(now_ms),
            e.pending_trigger.remove(),
            e.pending_shard.remove(),
            e.pending_sk.remove(),
            e.retry_at.remove(),
        ],
        (e.status == "pending") & (e.run_id == run_id),
    )


def wait_again(
    event_id: str,
    *,
    run_id: str,
    ready_ms: int,
    shard: str,
    counted: bool,
    max_attempts: int,
) -> bool:
    """running → pending until ``ready_ms``: a retry (``counted``) or a deferral.

    Out of the trigger's queue while it waits (its message puts it back, ``requeue``);
    in the sweep's index, so that a lost message is resent. A retry keeps its attempt
    and holds only while attempts are left (``retry_at`` is its backoff, enforced by the
    start fence); a deferral gives its attempt back and may start at once.
    """
    e = EventModel
    fence = (e.status == "running") & (e.run_id == run_id)
    actions: list[Action] = [
        e.status.set("pending"),
        e.retry_at.set(ready_ms) if counted else e.retry_at.remove(),
        e.pending_trigger.remove(),
        e.pending_shard.set(shard),
        e.pending_sk.set(pending_key(ready_ms, run_id)),
    ]
    if counted:
        return _update(EventModel(event_id), actions, fence & (e.attempt < max_attempts))
    return _update(EventModel(event_id), [*actions, e.attempt.add(-1)], fence)


def end_attempt(event_id: str, *, run_id: str, status: str, now_ms: int) -> bool:
    """running → ``status`` (terminal), out of the sweep's index: the bookkeeping is over."""
    e = EventModel
    return _update(
        EventModel(event_id),
        [
            e.status.set(status),
            e.finished_ms.set(now_ms),
            e.pending_shard.remove(),
            e.pending_sk.remove(),
        ],
        (e.status == "running") & (e.run_id == run_id),
    )


def reset_for_replay(
    event: EventRecord, *, run_id: str, trigger_id: str, shard: str, now_ms: int
) -> bool:
    """An ended event, pending again as a new run: fenced on the status and run it had."""
    e = EventModel
    return _update(
        EventModel(event.id),
        [
            e.status.set("pending"),
            e.run_id.set(run_id),
            e.attempt.set(0),
            e.retry_at.remove(),
            e.finished_ms.remove(),
            e.pending_trigger.set(trigger_id),
            e.pending_shard.set(shard),
            e.pending_sk.set(pending_key(now_ms, run_id)),
            e.expires.set(max(int(event.expires or 0), now_ms // 1000 + 86400)),
        ],
        (e.status == event.status) & (e.run_id == event.run_id),
    )


def put_recovered_run(record: RunRecord, *, started_ms: int) -> bool:
    """The run record the sweep rebuilt, never over a record of this attempt (False then).

    A late runner's own record is the better one: the write holds only if there is no
    record, or the one there ended before this attempt started.
    """
    r = RunModel
    try:
        run_item(record).save(
            condition=r.run_id.does_not_exist()
            | r.finished_at.does_not_exist()
            | (r.finished_at < started_ms)
        )
    except PutError as exc:
        if condition_failed(exc):
            return False
        raise
    return True
