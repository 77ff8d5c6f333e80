"""``GET /v1/health``: is the scheduler ticking, how full are the queues, how late are fires.

The heartbeat writes one small item when a tick ends (``record_tick``); the answer reads
it, the fire queue's and its dead-letter queue's approximate depths (one
GetQueueAttributes each; the dead-letter queue is the one the fire queue's redrive policy
names), and the tenant's runs of the last hour from the per-tenant runs index (at most
``MAX_RUNS_READ`` of them: past that, ``fires_last_hour`` is a lower bound and
``fires_capped`` says so). A part that cannot be read is ``null``, never a 500.

The queues are the stack's, shared by every tenant: their depths tell one tenant about
the others' load, so only the root key (the stack's own admin) is shown them; every
other key gets ``null`` there, and the queues are not even read for it.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from chalicelib.domain.epoch_ms import ms
from chalicelib.observability import logger
from chalicelib.services.auth import Principal
from chalicelib.services.runs import iso_ms
from chalicelib.settings import get_settings
from chalicelib.store import heartbeats
from chalicelib.store.run_reads import schedule_lateness_since

__all__ = ["record_tick", "health", "lateness_p99_ms", "MAX_RUNS_READ"]

MAX_RUNS_READ = 5000
_QUEUE_ATTRIBUTES = [
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
]


def record_tick(*, now: datetime) -> None:
    """Note that the tick that started at ``now`` ended (one PutItem a tick)."""
    heartbeats.record_tick(ms(now))


def lateness_p99_ms(values: list[int]) -> int | None:
    """The 99th percentile (nearest rank) of ``values``; None for none."""
    if not values:
        return None
    ordered = sorted(values)
    return int(ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)])


def _depth(sqs: Any, url: str) -> int:
    attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=_QUEUE_ATTRIBUTES)["Attributes"]
    return sum(int(attrs.get(name) or 0) for name in _QUEUE_ATTRIBUTES)


def _queue_depths() -> tuple[int | None, int | None]:
    """(fire queue depth, dead-letter depth): messages waiting, delayed or being run."""
    from chalicelib.store.aws import client

    url = get_settings().queue_url
    if not url:
        return None, None
    sqs = client("sqs")
    try:
        depth = _depth(sqs, url)
        policy = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["RedrivePolicy"])
        redrive = json.loads(policy["Attributes"].get("RedrivePolicy") or "{}")
        arn = str(redrive.get("deadLetterTargetArn") or "")
        if not arn:
            return depth, None
        # A dead-letter queue lives in the queue's account and region: same URL, its name.
        dlq_url = url.rsplit("/", 1)[0] + "/" + arn.rsplit(":", 1)[-1]
        return depth, _depth(sqs, dlq_url)
    except (BotoCoreError, ClientError, KeyError, ValueError) as exc:
        logger.warning("queue depths could not be read", extra={"error": str(exc)})
        return None, None


def _last_hour(tenant: str, *, now: datetime) -> tuple[int, list[int], bool]:
    return schedule_lateness_since(tenant, ms(now) - 3_600_000, max_rows=MAX_RUNS_READ)


def health(principal: Principal, *, now: datetime) -> dict:
    """The health answer for the caller's tenant (queues are shared by every tenant)."""
    settings = get_settings()
    last_tick_ms = heartbeats.last_tick_ms()
    queue_depth, dlq_depth = _queue_depths() if principal.is_root else (None, None)
    fires, lateness, capped = _last_hour(principal.tenant, now=now)
    period_ms = settings.heartbeat_s * 1000
    return {
        # Who is asking: the console shows the tenant and role, and hides what the role
        # cannot do (there is no other read-only route every role may call).
        "caller": {"tenant": principal.tenant, "role": principal.role},
        "last_tick_at": iso_ms(last_tick_ms),
        "heartbeat_s": settings.heartbeat_s,
        # The console's banner: no tick for more than two periods means no fires.
        "stale": last_tick_ms is None or ms(now) - last_tick_ms > 2 * period_ms,
        "queue_depth": queue_depth,
        "dlq_depth": dlq_depth,
        "lateness_p99_ms": lateness_p99_ms(lateness),
        "fires_last_hour": fires,
        "fires_capped": capped,
    }
