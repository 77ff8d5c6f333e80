"""The runner's time budget: how much of an invocation a message needs to be started.

A batch's messages run in one invocation (``wiring.handle_sqs_batch``). Before a message
is started, the invocation's time left is compared with ``start_margin_ms()``; with less,
the message is not started (no fence, no claim touched, nothing recorded or counted) and
goes back to the queue, so another invocation runs it with its full time.
"""

from __future__ import annotations

import json
from typing import Any

from chalicelib.domain import schedule
from chalicelib.domain.codec import decode_schedule
from chalicelib.settings import get_settings
from chalicelib.store.sqs import FireMessage

__all__ = [
    "START_MARGIN_S",
    "RESEND_FROM_RECEIVE",
    "start_margin_ms",
    "time_left_ms",
    "fire_at_of",
]

# The least time an invocation must have left to start another message of its batch.
# cronhook cannot know how long a workflow will take (no per-trigger timeout): 30 s covers
# the start fence, checks, settle and a short workflow (an http: target's own timeout is
# 30 s). A workflow that outlasts the invocation is still cut off (and recorded lost by
# the reaper); the margin keeps the messages behind it from being stranded in flight.
START_MARGIN_S = 30
# A message handed back this many times already (ApproximateReceiveCount) is sent again
# as a fresh message instead, so that being handed back never walks it to the
# dead-letter queue (maxReceiveCount is 5).
RESEND_FROM_RECEIVE = 3


def start_margin_ms() -> int:
    """``START_MARGIN_S``, or a quarter of the runner's timeout if that is shorter."""
    return int(min(START_MARGIN_S, get_settings().runner_timeout_s / 4) * 1000)


def time_left_ms(context: Any) -> int | None:
    """The invocation's remaining time (Lambda's context), or None without a context."""
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    if remaining is None:
        return None
    return int(remaining())


def fire_at_of(message: FireMessage) -> int | None:
    """When a scheduled message's fire starts (epoch ms): its slot plus the schedule's
    jitter (``schedule.fire_at_ms``), the slot without jitter; None for other surfaces."""
    if message.surface != "schedule" or message.scheduled_ms is None:
        return None
    slot_ms = int(message.scheduled_ms)
    try:
        jittered = bool(message.sched) and "j" in json.loads(message.sched or "{}")
    except ValueError:
        jittered = False
    if not jittered:
        return slot_ms
    spec = decode_schedule(message.sched or "{}")
    return schedule.fire_at_ms(message.trigger_id, slot_ms, spec)
