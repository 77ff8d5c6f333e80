"""The tick queue: one message per due shard of a fanned-out heartbeat tick.

A message names a shard and the tick's ``now`` (epoch ms), nothing else: the enqueuer
that receives it reads that shard's window as the heartbeat would have
(``services/heartbeat/fanout.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from chalicelib.settings import get_settings
from chalicelib.store.sqs import send_batches

__all__ = ["TickMessage", "send_ticks"]


@dataclass(frozen=True)
class TickMessage:
    """Read shard ``shard_no`` as of the tick at ``now_ms``."""

    shard_no: int
    now_ms: int

    def body(self) -> str:
        return json.dumps({"shard": self.shard_no, "now": self.now_ms}, separators=(",", ":"))

    @classmethod
    def parse(cls, body: str) -> TickMessage:
        """The message in ``body``; ValueError if it is not a tick message."""
        try:
            data = json.loads(body)
            shard_no, now_ms = data["shard"], data["now"]
        except (ValueError, TypeError, KeyError):
            raise ValueError("not a tick message") from None
        if not (isinstance(shard_no, int) and isinstance(now_ms, int)) or shard_no < 0:
            raise ValueError("not a tick message")
        return cls(shard_no=shard_no, now_ms=now_ms)


def send_ticks(messages: list[TickMessage]) -> list[TickMessage]:
    """Send in batches of 10 to the tick queue; return the messages that were not sent.

    A failed batch call fails only its ten; a partly failed batch names its failures.
    """
    queue_url = get_settings().tick_queue_url
    if not queue_url:
        return list(messages)
    return send_batches(
        queue_url, list(messages), lambda i, m: {"Id": str(i), "MessageBody": m.body()}
    )
