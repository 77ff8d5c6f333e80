"""The fenced writes of the claim+start → settle protocol, and the reads around them.

Every change of who owns a trigger is one conditional UpdateItem, fenced by the run id.
``in_flight`` is a map ``run_id → {l: lease_ms, s: started 0|1, k: surface, t: slot_ms}``;
its size is the number of runs that own the trigger now.

A scheduled fire rests on two fenced writes: the runner's ``claim_slot_and_start``
(before the workflow) and ``settle_run`` (after it). The heartbeat writes nothing per
fire: it reads due rows and sends their messages, and moves its per-shard cursor.

The due index is keyed ``(due_shard, due_at)``. ``due_at`` is the earliest instant the
heartbeat must look at the trigger: its next slot, or the lease of a run in flight when
that comes first (so a crashed run is reaped on time, even for a weekly cron).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pynamodb.exceptions import DoesNotExist, PutError, UpdateError
from pynamodb.expressions.condition import Condition, size

from chalicelib.store.models import RunModel, StateModel, TriggerModel

__all__ = [
    "DueRow",
    "ClaimResult",
    "shard_of",
    "query_due",
    "iter_due",
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
    "put_run",
    "get_run",
    "entry_lease",
]


@dataclass(frozen=True)
class DueRow:
    """One row of the due index: all the heartbeat needs to claim."""

    trigger_id: str
    due_at: int
    next_fire_at: int | None
    sched: str | None


class ClaimResult:
    CLAIMED = "claimed"
    LOST = "lost"  # another worker got there first, or the trigger changed
    BUSY = "busy"  # runs in flight fill its capacity


# Writes retried in place on an error that may not have applied them (timeouts, 5xx).
SETTLE_ATTEMPTS = 3


def shard_of(trigger_id: str, shards: int) -> str:
    """The due-index shard of a trigger (stable)."""
    return str(zlib.crc32(trigger_id.encode()) % max(1, shards))


def _conditional_failed(exc: Exception) -> bool:
    return getattr(exc, "cause_response_code", None) == "ConditionalCheckFailedException"


def iter_due(
    shard: str, *, until_ms: int, after_ms: int | None = None, page_size: int = 500
) -> Iterator[DueRow]:
    """Rows of one shard whose ``due_at`` is at or before ``until_ms`` (and after
    ``after_ms``), earliest first.

    Read page by page as the caller consumes them: no cap on how many, the caller stops
    when its time is up.
    """
    key = (
        TriggerModel.due_at <= until_ms
        if after_ms is None
        else TriggerModel.due_at.between(after_ms + 1, until_ms)
    )
    for item in TriggerModel.due.query(shard, key, page_size=page_size):
        yield DueRow(
            trigger_id=item.id,
            due_at=int(item.due_at),
            next_fire_at=int(item.next_fire_at) if item.next_fire_at is not None else None,
            sched=item.sched,
        )


def query_due(shard: str, *, until_ms: int, limit: int = 1000) -> list[DueRow]:
    """At most ``limit`` rows of ``iter_due``."""
    rows = []
    for row in iter_due(shard, until_ms=until_ms, page_size=min(limit, 500)):
        rows.append(row)
        if len(rows) >= limit:
            break
    return rows


def get_trigger(trigger_id: str, *, consistent: bool = True) -> TriggerModel | None:
    """The trigger item, or None."""
    try:
        return TriggerModel.get(trigger_id, consistent_read=consistent)
    except DoesNotExist:
        return None


def entry_lease(entry: Any) -> int:
    """The lease (epoch ms) of an ``in_flight`` entry."""
    return int(entry.get("l", 0)) if isinstance(entry, dict) else 0


def _plain(value: Any) -> dict:
    if value is None:
        return {}
    return value.as_dict() if hasattr(value, "as_dict") else dict(value)


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def _entry_after_error(trigger_id: str, run_id: str) -> tuple[TriggerModel | None, dict | None]:
    """After a write that failed or went unanswered: the item and our ``in_flight`` entry.

    Used to tell a write that was applied (its reply lost) from one that was not. A read
    that fails too answers (None, None): nothing is known.
    """
    try:
        item = get_trigger(trigger_id)
    except Exception:
        return None, None
    if item is None:
        return None, None
    entry = _in_flight(item).get(run_id)
    return item, entry if isinstance(entry, dict) else None


def _in_flight(item: TriggerModel) -> dict:
    raw = item.in_flight
    return raw.as_dict() if hasattr(raw, "as_dict") else dict(raw or {})


def claim_slot_and_start(
    trigger_id: str,
    *,
    slot_ms: int,
    sched: str,
    next_slot_ms: int | None,
    run_id: str,
    lease_ms: int,
    capacity: int,
    shard: str,
) -> tuple[str, TriggerModel | None]:
    """The runner's first write for a scheduled fire: claim the slot and start the run.

    One conditional update, taken when the fire is due (not when it was enqueued): the
    slot is still the trigger's next one (``next_fire_at`` and the schedule it was read
    with unchanged), the trigger is active and has room, and this run id owns nothing
    yet. The same write advances ``next_fire_at`` to the next slot after now (after
    downtime a trigger fires once), so a duplicate message of the slot is fenced out:
    a message can never run twice.
    """
    t = TriggerModel
    # A token per claim: after a lost reply (and botocore's retry failing the condition)
    # an entry carrying it says the claim was ours.
    token = secrets.token_hex(4)
    entry = {"l": lease_ms, "s": 1, "k": "s", "t": slot_ms, "o": token}
    actions = [t.in_flight[run_id].set(entry), t.due_shard.set(shard)]
    if next_slot_ms is None:
        actions += [t.next_fire_at.remove(), t.due_at.set(lease_ms)]
    else:
        actions += [t.next_fire_at.set(next_slot_ms), t.due_at.set(min(next_slot_ms, lease_ms))]
    condition: Condition = (
        (t.next_fire_at == slot_ms)
        & (t.sched == sched)
        & (t.status == "active")
        & (size(t.in_flight) < capacity)
        & t.in_flight[run_id].does_not_exist()
    )
    item = TriggerModel(trigger_id)
    try:
        item.update(actions=actions, condition=condition)
    except UpdateError as exc:
        fresh, mine = _entry_after_error(trigger_id, run_id)
        if mine is not None and mine.get("o") == token:
            return ClaimResult.CLAIMED, fresh
        if _conditional_failed(exc):
            return ClaimResult.LOST, None
        raise
    return ClaimResult.CLAIMED, item


# The heartbeat's enqueue cursor of a due shard lives in the triggers table, in an item of
# its own (``#cursor#<shard>``: no trigger id starts with ``#``, and it has none of the
# attributes the indexes are keyed on, so no listing or index ever sees it). The functions
# that already read and write triggers need no other table.
_CURSOR_PREFIX = "#cursor#"


def _cursor_key(shard: str) -> dict:
    return {"id": {"S": f"{_CURSOR_PREFIX}{shard}"}}


def get_cursor(shard: str) -> int | None:
    """The enqueue cursor of a due shard: every slot at or before it was sent (None: never)."""
    from chalicelib.store.aws import client

    answer = client("dynamodb").get_item(
        TableName=TriggerModel.Meta.table_name, Key=_cursor_key(shard), ConsistentRead=True
    )
    value = (answer.get("Item") or {}).get("cursor_ms", {}).get("N")
    return int(value) if value is not None else None


def advance_cursor(shard: str, *, expected: int | None, cursor_ms: int | None) -> bool:
    """Move a shard's cursor, fenced on the value read: False if another tick moved it first.

    ``cursor_ms`` None forgets it (the local stack after a restart: its queue is gone).
    """
    from botocore.exceptions import ClientError

    from chalicelib.store.aws import client

    arguments: dict = {
        "TableName": TriggerModel.Meta.table_name,
        "Key": _cursor_key(shard),
        "ExpressionAttributeNames": {"#c": "cursor_ms"},
    }
    values: dict = {}
    if cursor_ms is None:
        arguments["UpdateExpression"] = "REMOVE #c"
    else:
        arguments["UpdateExpression"] = "SET #c = :new"
        values[":new"] = {"N": str(cursor_ms)}
    if expected is None:
        arguments["ConditionExpression"] = "attribute_not_exists(#c)"
    else:
        arguments["ConditionExpression"] = "#c = :old"
        values[":old"] = {"N": str(expected)}
    if values:
        arguments["ExpressionAttributeValues"] = values
    try:
        client("dynamodb").update_item(**arguments)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
            return False
        raise
    return True


def advance_slot(
    trigger_id: str, *, slot_ms: int, next_slot_ms: int | None, due_at: int | None, shard: str
) -> bool:
    """Move past a slot without claiming it (overlap ``skip``), fenced on the slot."""
    t = TriggerModel
    actions = []
    if next_slot_ms is None:
        actions.append(t.next_fire_at.remove())
    else:
        actions.append(t.next_fire_at.set(next_slot_ms))
    if due_at is None:
        actions += [t.due_at.remove(), t.due_shard.remove()]
    else:
        actions += [t.due_at.set(due_at), t.due_shard.set(shard)]
    try:
        TriggerModel(trigger_id).update(actions=actions, condition=t.next_fire_at == slot_ms)
    except UpdateError as exc:
        if _conditional_failed(exc):
            return False
        raise
    return True


def release_claim(trigger_id: str, *, run_id: str, slot_ms: int | None, shard: str = "0") -> bool:
    """Undo a claim whose message could not be sent, so the next tick retries the slot.

    Fenced on the run id: only the claimer releases, and only if nobody started it.
    """
    t = TriggerModel
    actions = [t.in_flight[run_id].remove()]
    if slot_ms is not None:
        actions += [t.next_fire_at.set(slot_ms), t.due_at.set(slot_ms), t.due_shard.set(shard)]
    try:
        TriggerModel(trigger_id).update(actions=actions, condition=t.in_flight[run_id]["s"] == 0)
    except UpdateError as exc:
        if _conditional_failed(exc):
            return False
        raise
    return True


def start_run(trigger_id: str, *, run_id: str, lease_ms: int) -> TriggerModel | None:
    """The runner's first write: accept the run only if it is still ours and not started.

    None means fenced out: a duplicate delivery, or a claim that was reaped or released.
    """
    t = TriggerModel
    item = TriggerModel(trigger_id)
    # A token per start attempt: after a lost reply (or botocore's retry of it failing
    # the condition) it tells our start from a duplicate delivery's.
    token = secrets.token_hex(4)
    try:
        item.update(
            actions=[
                t.in_flight[run_id]["s"].set(1),
                t.in_flight[run_id]["l"].set(lease_ms),
                t.in_flight[run_id]["o"].set(token),
            ],
            condition=t.in_flight[run_id]["s"] == 0,
        )
    except UpdateError as exc:
        fresh, mine = _entry_after_error(trigger_id, run_id)
        if mine is not None and mine.get("o") == token and int(mine.get("s", 0)) == 1:
            return fresh
        if _conditional_failed(exc) or "document path" in str(exc).lower():
            return None
        raise
    return item


def claim_and_start(
    trigger_id: str,
    *,
    run_id: str,
    surface: str,
    lease_ms: int,
    capacity: int,
    shard: str,
    slot_ms: int | None = None,
    started: bool = True,
    event_id: str | None = None,
) -> tuple[str, TriggerModel | None]:
    """Claim a slot for an event or manual run (and start it in the same write if ``started``)."""
    t = TriggerModel
    entry: dict = {"l": lease_ms, "s": 1 if started else 0, "k": surface[0]}
    if slot_ms is not None:
        entry["t"] = slot_ms
    if event_id is not None:
        entry["e"] = event_id  # so a reaped event run finds its event (runs.lost_hooks)
    item = TriggerModel(trigger_id)
    try:
        item.update(
            actions=[
                t.in_flight[run_id].set(entry),
                t.due_at.set(t.due_at | lease_ms),
                t.due_shard.set(t.due_shard | shard),
            ],
            condition=(t.status == "active")
            & (size(t.in_flight) < capacity)
            & t.in_flight[run_id].does_not_exist(),
        )
    except UpdateError as exc:
        if _conditional_failed(exc):
            return ClaimResult.BUSY, None
        raise
    return ClaimResult.CLAIMED, item


def drop_claim(trigger_id: str, *, run_id: str, lease_ms: int) -> bool:
    """Give back a claim that will not run after all (a started one too), fenced on its lease.

    Only the claimer knows the lease it wrote, so nobody else's claim is ever dropped.
    """
    t = TriggerModel
    try:
        TriggerModel(trigger_id).update(
            actions=[t.in_flight[run_id].remove()],
            condition=t.in_flight[run_id]["l"] == lease_ms,
        )
    except UpdateError as exc:
        if _conditional_failed(exc):
            return False
        raise
    return True


def defer_run(trigger_id: str, *, run_id: str, lease_ms: int | None) -> bool:
    """Hand a started run back without counting it (a guard said wait), fenced on the run.

    With ``lease_ms`` the claim is kept but un-started, its lease stretched over the wait:
    the start fence accepts the message sent again, and the reaper leaves it alone. With
    None the claim is released (an event run: its event goes back to its queue). False
    means the claim was no longer ours (reaped).
    """
    t = TriggerModel
    if lease_ms is None:
        actions = [t.in_flight[run_id].remove()]
    else:
        actions = [t.in_flight[run_id]["s"].set(0), t.in_flight[run_id]["l"].set(lease_ms)]
    try:
        TriggerModel(trigger_id).update(actions=actions, condition=t.in_flight[run_id]["s"] == 1)
    except UpdateError as exc:
        if _conditional_failed(exc) or "document path" in str(exc).lower():
            return False
        raise
    return True


def settle_run(
    trigger_id: str,
    *,
    run_id: str,
    succeeded: bool | None,
    last_run: dict,
    next_fire_override_ms: int | None = None,
    shard: str,
    failure_counts: bool = True,
) -> TriggerModel | None:
    """Release the claim and count the run: fenced on ``in_flight[run_id]``.

    Always called, on success and on failure: a claim leaked here is a trigger stuck
    forever. None means the claim was no longer ours (reaped). ``failure_counts`` False:
    a failed run that does not count toward ``consecutive_failures`` (an event attempt
    that will be retried).
    """
    t = TriggerModel
    actions = [t.in_flight[run_id].remove(), t.last_run.set(last_run)]
    # Only a run whose workflow ran counts toward run_count / max_runs: a skipped,
    # refused or deferred fire (succeeded None) does not.
    if succeeded is True:
        actions += [t.run_count.add(1), t.consecutive_failures.set(0)]
    elif succeeded is False:
        actions.append(t.run_count.add(1))
        if failure_counts:
            actions.append(t.consecutive_failures.add(1))
    if next_fire_override_ms is not None:
        actions += [
            t.next_fire_at.set(next_fire_override_ms),
            t.due_at.set(next_fire_override_ms),
            t.due_shard.set(shard),
        ]
    item = TriggerModel(trigger_id)
    for attempt in range(SETTLE_ATTEMPTS):
        try:
            item.update(actions=actions, condition=t.in_flight[run_id].exists())
            return item
        except UpdateError as exc:
            # Settling is fenced (it removes our entry), so it can apply only once and is
            # safe to try again; after a lost reply, last_run says whether it applied.
            fresh, mine = _entry_after_error(trigger_id, run_id)
            if fresh is not None and mine is None:
                last = _plain(fresh.last_run)
                if last.get("id") == run_id and _int(last.get("finished_at")) == _int(
                    last_run.get("finished_at")
                ):
                    return fresh
                return None  # reaped
            if _conditional_failed(exc):
                return None
            if attempt == SETTLE_ATTEMPTS - 1:
                raise
            time.sleep(0.02 * 2**attempt)
    return None


def reap_run(
    trigger_id: str, *, run_id: str, lease_ms: int, last_run: dict, failure_counts: bool = True
) -> bool:
    """Release a claim whose lease expired, fenced on the run id and that very lease.

    A live run is never reaped: leases come from the runner's timeout, and a run that
    started refreshed its lease at start. ``failure_counts`` False: the lost run does
    not count toward ``consecutive_failures`` (an event attempt that will be retried).
    """
    t = TriggerModel
    actions = [t.in_flight[run_id].remove(), t.run_count.add(1), t.last_run.set(last_run)]
    if failure_counts:
        actions.append(t.consecutive_failures.add(1))
    try:
        TriggerModel(trigger_id).update(
            actions=actions,
            condition=t.in_flight[run_id]["l"] == lease_ms,
        )
    except UpdateError as exc:
        if _conditional_failed(exc):
            return False
        raise
    return True


def set_due(
    trigger_id: str, *, expected_due_at: int | None, due_at: int | None, shard: str
) -> bool:
    """Re-key the trigger in the due index (after reaping, or when only a lease put it there)."""
    t = TriggerModel
    actions = (
        [t.due_at.remove(), t.due_shard.remove()]
        if due_at is None
        else [t.due_at.set(due_at), t.due_shard.set(shard)]
    )
    condition = (
        t.due_at.does_not_exist() if expected_due_at is None else t.due_at == expected_due_at
    )
    try:
        TriggerModel(trigger_id).update(actions=actions, condition=condition)
    except UpdateError as exc:
        if _conditional_failed(exc):
            return False
        raise
    return True


def disable_trigger(trigger_id: str, *, reason: str, now_ms: int) -> TriggerModel | None:
    """Disable an active trigger with a visible reason (no-op if already disabled).

    With no run in flight it also leaves the due index in the same write, so the
    heartbeat stops sending its slots; a run in flight keeps it there (its lease must
    stay reapable), and the first message dropped for it takes it out.
    """
    t = TriggerModel
    base = [
        t.status.set("disabled"),
        t.disabled_reason.set(reason),
        t.disabled_ms.set(now_ms),
        t.updated_ms.set(now_ms),
        t.version.add(1),
    ]
    for idle in (True, False):
        item = TriggerModel(trigger_id)
        actions = [*base, t.due_at.remove(), t.due_shard.remove()] if idle else base
        condition = t.status == "active"
        if idle:
            condition &= size(t.in_flight) == 0
        try:
            item.update(actions=actions, condition=condition)
            return item
        except UpdateError as exc:
            if not _conditional_failed(exc):
                raise
    return None


# A trigger's payload larger than this (as compact JSON) is kept in an item of its own,
# not in the trigger item that every claim, start and settle rewrites: DynamoDB bills a
# write unit per KB of the item written, so a 50 KB payload would cost ~150 write units
# per fire. Smaller payloads stay inline (no extra read per fire).
PAYLOAD_INLINE_BYTES = 256
_PAYLOAD_REF = "payload_ref"


def _payload_key(trigger_id: str, ref: str) -> str:
    # In the states table, beside the state item (keyed by the bare trigger id).
    return f"{trigger_id}#payload#{ref}"


def externalize_payload(
    trigger_id: str, spec: dict, *, existing: str | None = None
) -> tuple[dict, str | None]:
    """``spec`` to store on the trigger item: a large payload moved to an item of its own.

    The payload item is keyed by a digest of its content and written before the trigger
    item that refers to it, so a reader never finds a reference without its payload; a
    write that then fails leaves an orphan, never a dangling reference. A payload whose
    reference is ``existing`` (unchanged by an edit) is not written again. Returns the
    spec to store and the reference (None when the payload stays inline).
    """
    payload = spec.get("payload")
    if payload is None:
        return spec, None
    text = json.dumps(payload, separators=(",", ":"), sort_keys=True)
    if len(text.encode()) <= PAYLOAD_INLINE_BYTES:
        return spec, None
    ref = hashlib.sha256(text.encode()).hexdigest()[:24]
    if ref != existing:
        StateModel(_payload_key(trigger_id, ref), state=text, version=0).save()
    stored = {k: v for k, v in spec.items() if k != "payload"}
    stored[_PAYLOAD_REF] = ref
    return stored, ref


def payload_ref(spec: dict) -> str | None:
    """The reference of an externalized payload in a stored spec, if any."""
    ref = spec.get(_PAYLOAD_REF)
    return str(ref) if ref else None


def load_spec(item: TriggerModel) -> dict:
    """The trigger's settings as the user gave them (an externalized payload read back)."""
    spec = json.loads(item.spec or "{}")
    ref = spec.pop(_PAYLOAD_REF, None)
    if ref:
        try:
            stored = StateModel.get(_payload_key(item.id, str(ref)))
        except DoesNotExist:
            # Written before the trigger item: only a consistent-read lag can miss it.
            stored = StateModel.get(_payload_key(item.id, str(ref)), consistent_read=True)
        spec["payload"] = json.loads(stored.state)
    return spec


def delete_payload(trigger_id: str, ref: str | None) -> None:
    """Delete an externalized payload (no-op for None or one already gone)."""
    if not ref:
        return
    try:
        StateModel(_payload_key(trigger_id, ref)).delete()
    except DoesNotExist:
        pass


def get_state(trigger_id: str) -> tuple[dict, int]:
    """The trigger's state and its version (0 when never written)."""
    try:
        item = StateModel.get(trigger_id, consistent_read=True)
    except DoesNotExist:
        return {}, 0
    return json.loads(item.state or "{}"), int(item.version)


def write_state(trigger_id: str, state: dict, *, expected_version: int) -> bool:
    """Compare-and-set the state on its version: concurrent runs never overwrite each other."""
    item = StateModel(
        trigger_id, state=json.dumps(state, separators=(",", ":")), version=expected_version + 1
    )
    condition = (
        StateModel.trigger_id.does_not_exist()
        if expected_version == 0
        else StateModel.version == expected_version
    )
    try:
        item.save(condition=condition)
    except PutError as exc:
        if _conditional_failed(exc):
            return False
        raise
    return True


RUN_RECORD_ATTEMPTS = 3


def put_run(run: RunModel, *, only_new: bool = False) -> bool:
    """Write a run record (its final state, or a terminal status like ``lost``).

    The write is a whole item keyed by run id, so repeating it is harmless: it is tried a
    few times, because the record is written after the claim is settled and a run must
    not go missing from the history over one failed call. ``only_new`` never overwrites
    an existing record (False if one exists).
    """
    condition = RunModel.run_id.does_not_exist() if only_new else None
    for attempt in range(RUN_RECORD_ATTEMPTS):
        try:
            run.save(condition=condition)
            return True
        except PutError as exc:
            if only_new and _conditional_failed(exc):
                return False
            if attempt == RUN_RECORD_ATTEMPTS - 1:
                raise
            time.sleep(0.02 * 2**attempt)
    return True


def get_run(trigger_id: str, run_id: str) -> RunModel | None:
    """One run record, or None."""
    try:
        return RunModel.get(trigger_id, run_id)
    except DoesNotExist:
        return None


def in_flight_of(item: TriggerModel) -> dict:
    """The ``in_flight`` map of an item as a plain dict."""
    return _in_flight(item)
