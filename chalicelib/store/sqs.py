"""The fire queue: messages carry ids, never objects."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from chalicelib.settings import get_settings
from chalicelib.store.aws import client

__all__ = ["FireMessage", "send_fires", "send_batches", "MAX_DELAY_S"]

T = TypeVar("T")

MAX_DELAY_S = 900  # SQS's limit on DelaySeconds


@dataclass(frozen=True)
class FireMessage:
    """What the runner needs to find a claimed run: ids and the slot, nothing else."""

    run_id: str
    trigger_id: str
    surface: str  # schedule | event | manual
    scheduled_ms: int | None = None
    event_id: str | None = None
    delay_s: int = 0
    # The trigger's tenant: the message's MessageGroupId, so that SQS fair queues (and the
    # local runner pool) share the job ceiling among tenants. Filled in by ``send_fires``
    # when the sender did not have it at hand.
    tenant: str | None = None
    # A schedule fire carries the schedule it was read with (the due index's ``sched``,
    # ~100 bytes): the runner's claim computes the next slot from it and is fenced on it,
    # so the claim is one write with no read before it.
    sched: str | None = None
    # A slot the tick computed for a standing row (``store/triggers.STANDING_DUE``): the
    # shard that row was read from. The claim is then fenced on ``next_slot``.
    standing_shard: str | None = None
    # A manual fire that found its trigger busy, claimed by the runner when its turn
    # comes (``runner/queued.py``): how many times it has waited so far (0: not queued).
    queued: int = 0

    def body(self) -> str:
        data: dict = {"r": self.run_id, "t": self.trigger_id, "k": self.surface}
        if self.scheduled_ms is not None:
            data["at"] = self.scheduled_ms
        if self.event_id is not None:
            data["e"] = self.event_id
        if self.tenant is not None:
            data["n"] = self.tenant
        if self.sched is not None:
            data["s"] = self.sched
        if self.standing_shard is not None:
            data["st"] = self.standing_shard
        if self.queued:
            data["q"] = self.queued
        return json.dumps(data, separators=(",", ":"))

    @classmethod
    def parse(cls, body: str) -> FireMessage:
        data = json.loads(body)
        return cls(
            run_id=data["r"],
            trigger_id=data["t"],
            surface=data["k"],
            scheduled_ms=data.get("at"),
            event_id=data.get("e"),
            tenant=data.get("n"),
            sched=data.get("s"),
            standing_shard=data.get("st"),
            queued=int(data.get("q") or 0),
        )


def send_fires(messages: list[FireMessage]) -> list[FireMessage]:
    """Send in batches of 10; return the messages that could not be sent.

    One failure never drops the rest: a failed batch call fails only its ten, and a
    partially failed batch reports exactly which entries failed.
    """
    queue_url = get_settings().queue_url
    return send_batches(queue_url, _with_tenants(messages), _entry)


def send_batches(
    queue_url: str | None, items: Sequence[T], entry: Callable[[int, T], dict]
) -> list[T]:
    """Send ``items`` ten per SendMessageBatch (``entry(i, item)`` builds entry ``i``); the
    items not sent, whether their whole call or their own entry failed."""
    failed: list[T] = []
    sqs = client("sqs")
    for start in range(0, len(items), 10):
        batch = items[start : start + 10]
        entries = [entry(i, item) for i, item in enumerate(batch)]
        try:
            answer = sqs.send_message_batch(QueueUrl=queue_url, Entries=entries)
        except (ClientError, BotoCoreError):
            failed.extend(batch)
            continue
        failed.extend(batch[int(f["Id"])] for f in answer.get("Failed", []))
    return failed


def _entry(n: int, message: FireMessage) -> dict:
    entry = {
        "Id": str(n),
        "MessageBody": message.body(),
        "DelaySeconds": max(0, min(MAX_DELAY_S, int(message.delay_s))),
    }
    if message.tenant:
        # On a standard queue this makes it a fair queue: a tenant with a backlog does
        # not hold up another tenant's messages (no FIFO ordering, no extra write).
        entry["MessageGroupId"] = message.tenant
    return entry


def _with_tenants(messages: list[FireMessage]) -> list[FireMessage]:
    """``messages`` with their tenant filled in where the sender did not give it.

    The common paths (schedule fires, manual fires, new events) carry the tenant; the
    rest (event retries, serialize hand-offs, triggers from before) cost one read of the
    triggers' tenants here. A failed read sends them without a group: never unsent.
    """
    missing = {m.trigger_id for m in messages if m.tenant is None}
    if not missing:
        return messages
    from chalicelib.store.triggers import TriggerModel

    try:
        found = {
            item.id: item.tenant
            for item in TriggerModel.batch_get(list(missing), attributes_to_get=["id", "tenant"])
        }
    except Exception:  # the send matters more than its group
        return messages
    return [replace(m, tenant=found.get(m.trigger_id)) if m.tenant is None else m for m in messages]
