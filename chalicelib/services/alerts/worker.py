"""The alerts worker: the consumer of the alerts queue, off the fire path.

Three messages arrive:

1. ``transition``: a lifecycle transition a detector queued.
   a. The notifications it makes: each policy of the tenant that covers the trigger and
      notifies of it (``domain.alerts.notifies``) gets one notification a channel,
      ``pending``, or ``suppressed`` while the trigger's last one of that kind is
      younger than ``quiet_s`` (``store.take_quiet``, a conditional write).
   b. The first pending notification of a policy in a minute schedules that minute's
      flush (``store.claim_flush``, a conditional put, then a message delayed to the
      minute's end): so a channel gets one message a minute, however many triggers
      went wrong in it.
   c. The transition goes on the bus (``source: "cronhook"``), whether or not a policy
      matched. Last: a failure hands the message back and (a)-(b) are repeated as the
      no-ops their stable ids make them.
2. ``flush``: a policy's pending notifications up to the end of a minute, one message
   per channel (the notification itself, or a digest naming the count and the first
   few); each is marked ``sent``, or ``failed`` with the channel's cause after
   ``SEND_ATTEMPTS`` tries.
3. ``test``: one test notification on every channel of a policy, now.
4. ``sweep``: a heartbeat tick's request for the ``late`` and ``no_event`` sweep
   (``sweep.sweep_findings``), as of the tick.

A notification that cannot be sent never fails a run: the run settled long before.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from chalicelib.domain.alerts import (
    DETAIL_TYPES,
    Transition,
    flush_at_ms,
    matches,
    minute_of,
    notification_id,
    notifies,
)
from chalicelib.domain.epoch_ms import dt, ms
from chalicelib.observability import logger, record_metric
from chalicelib.services.alerts.channels import ChannelFailed, channel_name, send
from chalicelib.services.alerts.sweep import spec_with_about, sweep_findings
from chalicelib.services.runs import iso_ms
from chalicelib.settings import get_settings
from chalicelib.store import alerts as store
from chalicelib.store import payloads
from chalicelib.store import triggers as triggers_store
from chalicelib.store.alert_queue import send_alert_messages
from chalicelib.store.aws import client

__all__ = ["Retry", "handle_batch", "handle_message", "SEND_ATTEMPTS", "LOOK_BACK_MINUTES"]

SEND_ATTEMPTS = 3
# A flush also sends what an earlier minute's flush missed: a notification is keyed on
# its transition's instant, which a backlog on the alerts queue leaves hours behind.
LOOK_BACK_MINUTES = 6 * 60

Sleep = Callable[[float], None]


class Retry(Exception):
    """Hand the message back to the queue (it is delivered again later)."""


def handle_batch(event: dict, *, now: datetime | None = None, sleep: Sleep = time.sleep) -> dict:
    """An SQS batch (Lambda's shape); messages to retry as ``batchItemFailures``."""
    failures = []
    for record in event.get("Records", []):
        try:
            handle_message(record.get("body") or "", now=now or datetime.now(UTC), sleep=sleep)
        except Retry:
            failures.append({"itemIdentifier": record.get("messageId")})
        except Exception:
            logger.exception("alerts message failed; it is retried")
            failures.append({"itemIdentifier": record.get("messageId")})
    return {"batchItemFailures": failures}


def handle_message(body: str, *, now: datetime, sleep: Sleep = time.sleep) -> str:
    """Handle one message; what was done (for logs and tests)."""
    try:
        doc = json.loads(body)
        kind = doc.pop("k")
    except (ValueError, AttributeError, KeyError, TypeError):
        record_metric("AlertsDropped")
        return "dropped"
    if kind == "transition":
        return on_transition(Transition.from_dict(doc), now=now)
    if kind == "flush":
        return flush(
            str(doc["tenant"]), str(doc["policy_id"]), int(doc["minute"]), now=now, sleep=sleep
        )
    if kind == "test":
        return send_test(doc, now=now, sleep=sleep)
    if kind == "sweep":
        at_ms = int(doc.get("at_ms") or ms(now))
        return f"sweep:{sweep_findings(now=dt(at_ms))}"
    record_metric("AlertsDropped")
    return "dropped"


def _about(transition: Transition) -> dict:
    """What a notification says about its trigger (read once, off the fire path)."""
    about: dict[str, Any] = {"workflow": None, "title": None, "tags": []}
    item = triggers_store.get_trigger(transition.trigger_id, consistent=False)
    if item is not None and item.tenant == transition.tenant:
        spec = spec_with_about(item, payloads.load_abouts([item]).get(item.id, {}))
        about = {"workflow": item.workflow, "title": spec.title, "tags": list(spec.tags)}
    return about


def on_transition(transition: Transition, *, now: datetime) -> str:
    """Step 1: notifications (pending or suppressed), flushes scheduled, the bus."""
    about = _about(transition)
    buckets: set[tuple[str, int]] = set()
    notified = 0
    for policy in store.policies_of(transition.tenant):
        covered = matches(
            policy.get("match") or {},
            trigger_id=transition.trigger_id,
            workflow=about["workflow"] or "",
            tags=about["tags"],
        )
        if not covered or not notifies(policy, transition) or not policy.get("channels"):
            continue
        if _record(policy, transition, about, now=now):
            buckets.add((policy["id"], minute_of(ms(now))))
        notified += 1
    for policy_id, minute in sorted(buckets):
        _schedule_flush(transition.tenant, policy_id, minute, now=now)
    _put_on_bus(transition, about)
    return f"transition:{transition.kind}:{notified}"


def _record(policy: dict, transition: Transition, about: dict, *, now: datetime) -> bool:
    """One notification a channel; True if pending (to send), False if suppressed."""
    now_ms = ms(now)
    quiet_s = int(policy.get("quiet_s") or 0)
    free = store.take_quiet(
        policy["id"],
        transition.trigger_id,
        transition.kind,
        now_ms=now_ms,
        quiet_s=quiet_s,
        transition_id=transition.id,
    )
    outcome = "pending" if free else "suppressed"
    for n, channel in enumerate(policy["channels"]):
        name = channel_name(channel, n)
        note = {
            "id": notification_id(transition.id, policy["id"], name),
            "at_ms": now_ms,
            "kind": transition.kind,
            "trigger_id": transition.trigger_id,
            "run_id": transition.run_id,
            "title": about["title"],
            "reason": transition.reason,
            "error": transition.error,
            "channel": name,
        }
        # Keyed on the transition's instant: a redelivery finds its own rows.
        store.put_notification(
            policy["id"],
            at_ms=transition.at_ms,
            notification=note,
            outcome=outcome,
            expires=_expires(now_ms),
        )
    record_metric("Notifications", len(policy["channels"]), outcome=outcome)
    return free


def _expires(now_ms: int) -> int:
    return now_ms // 1000 + store.NOTIFICATION_RETENTION_S


def _schedule_flush(tenant: str, policy_id: str, minute: int, *, now: datetime) -> None:
    """The first notification of a policy's minute sends the message that flushes it."""
    now_ms = ms(now)
    if not store.claim_flush(policy_id, minute, expires=_expires(now_ms)):
        return
    delay_s = max(0, -(-(flush_at_ms(minute) - now_ms) // 1000))
    body = {"k": "flush", "tenant": tenant, "policy_id": policy_id, "minute": minute}
    try:
        send_alert_messages([body], delay_s=delay_s)
    except Exception:
        store.release_flush(policy_id, minute)
        raise Retry from None


def _put_on_bus(transition: Transition, about: dict) -> None:
    """The lifecycle event on the stack's bus: ``source: cronhook``, ids in ``detail``."""
    detail = {
        "tenant_id": transition.tenant,
        "trigger_id": transition.trigger_id,
        "run_id": transition.run_id,
        "transition_id": transition.id,
        "kind": transition.kind,
        "at": iso_ms(transition.at_ms),
        **{k: v for k, v in about.items() if v},
        **{k: v for k, v in transition.to_dict().items() if k in _DETAIL_EXTRA},
    }
    answer = client("events").put_events(
        Entries=[
            {
                "Source": "cronhook",
                "DetailType": DETAIL_TYPES[transition.kind],
                "Detail": json.dumps(detail, separators=(",", ":")),
                "EventBusName": get_settings().lifecycle_bus,
                "Resources": [],
            }
        ]
    )
    if answer.get("FailedEntryCount"):
        logger.warning("lifecycle event refused by the bus", extra={"answer": answer["Entries"]})
        raise Retry
    record_metric("LifecycleEvents", kind=transition.kind)


_DETAIL_EXTRA = (
    "reason",
    "error",
    "consecutive_failures",
    "failures_before",
    "slot_ms",
    "last_event_ms",
    "percent_before",
    "percent_after",
    "policy_id",
)


def flush(tenant: str, policy_id: str, minute: int, *, now: datetime, sleep: Sleep) -> str:
    """Step 2: one message per channel for the policy's pending notifications."""
    if ms(now) < flush_at_ms(minute) - 1000:
        raise Retry  # early (a clock ahead of ours): the queue brings it back
    rows = store.pending_in(
        policy_id, from_ms=(minute - LOOK_BACK_MINUTES) * 60_000, to_ms=(minute + 1) * 60_000
    )
    policy = store.get_policy(tenant, policy_id)
    by_channel: dict[str, list[tuple[str, dict]]] = defaultdict(list)
    for sk, note in rows:
        by_channel[str(note.get("channel"))].append((sk, note))
    for name, group in sorted(by_channel.items()):
        channel = _channel_of(policy, name)
        if channel is None:
            error: str | None = "the policy or this channel was removed before it was sent"
        else:
            notes = [note for _, note in group]
            error = _send_with_retries(
                channel, policy or {}, notes, message_id=notes[0]["id"], sleep=sleep
            )
        store.set_outcomes(
            policy_id,
            group,
            outcome="failed" if error else "sent",
            error=error,
            expires=_expires(ms(now)),
        )
        record_metric("AlertMessages", outcome="failed" if error else "sent")
    return f"flush:{len(rows)}:{len(by_channel)}"


def _channel_of(policy: dict | None, name: str) -> dict | None:
    kind, _, index = name.partition("#")
    channels = (policy or {}).get("channels") or []
    if not index.isdigit() or int(index) >= len(channels):
        return None
    channel = channels[int(index)]
    return channel if channel.get("type") == kind else None


def _send_with_retries(
    channel: dict, policy: dict, notes: list[dict], *, message_id: str, sleep: Sleep
) -> str | None:
    """Send, trying ``SEND_ATTEMPTS`` times; None once sent, else the last cause."""
    cause = None
    for attempt in range(SEND_ATTEMPTS):
        try:
            send(channel, policy, notes, message_id=message_id)
            return None
        except ChannelFailed as exc:
            cause = str(exc)
            logger.warning(
                "alert channel failed",
                extra={"channel": channel.get("type"), "attempt": attempt + 1, "error": cause},
            )
            if attempt < SEND_ATTEMPTS - 1:
                sleep(0.5 * 2**attempt)
    return cause


def send_test(doc: dict, *, now: datetime, sleep: Sleep) -> str:
    """Step 3: a test notification on every channel, recorded with its outcome."""
    tenant, policy_id = str(doc.get("tenant")), str(doc.get("policy_id"))
    policy = store.get_policy(tenant, policy_id)
    if policy is None:
        return "test:gone"
    at_ms = int(doc.get("at_ms") or ms(now))
    sent = 0
    for n, channel in enumerate(policy.get("channels") or []):
        name = channel_name(channel, n)
        note_id = notification_id(f"test:{at_ms}", policy_id, name)
        note: dict[str, Any] = {
            "id": note_id,
            "at_ms": at_ms,
            "kind": "test",
            "title": "cronhook test notification",
            "channel": name,
            "reason": "sent by POST /v1/alerts/{id}/test",
        }
        error = _send_with_retries(channel, policy, [note], message_id=note_id, sleep=sleep)
        stored = store.put_notification(
            policy_id, at_ms=at_ms, notification=note, outcome="pending", expires=_expires(ms(now))
        )
        if stored:
            sk = f"{at_ms:013d}#{note['id']}"
            store.set_outcome(policy_id, sk, outcome="failed" if error else "sent", error=error)
        sent += error is None
    return f"test:{sent}"
