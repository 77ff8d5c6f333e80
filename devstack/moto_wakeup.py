"""moto's SQS long poll, woken as AWS's is: when a held message turns visible.

moto's long poll (``WaitTimeSeconds``) wakes at once for a message sent to the queue, but a
message that was delayed (``DelaySeconds``) or in flight (its visibility timeout ending)
is only seen at the poll's next one-second look, so a consumer that long-polls would
start such a message up to a second late. AWS returns it as it turns visible. This patch
(applied in the embedded AWS process, ``embedded_aws``) makes moto's wait end at the
moment the soonest held message turns visible, so the local stack's consumers can
long-poll instead of polling every fraction of a second.
"""

from __future__ import annotations

import time
from typing import Any

from devstack.moto_version import require_pinned_moto

__all__ = ["make_long_polls_wake"]


def _seconds_until_one_turns_visible(queue: Any) -> float | None:
    """Seconds until the soonest delayed or in-flight message of ``queue`` is visible."""
    from moto.core.utils import unix_time_millis

    now_ms = unix_time_millis()
    turns = [
        at for at in (max(m.visible_at, m.delayed_until) for m in queue._messages) if at >= now_ms
    ]
    return None if not turns else (min(turns) - now_ms) / 1000 + 0.002


def make_long_polls_wake() -> None:
    """Patch moto's ``Queue.wait_for_messages`` (idempotent)."""
    require_pinned_moto("moto_wakeup")
    from moto.sqs.models import Queue

    if getattr(Queue.wait_for_messages, "_wakes", False):
        return

    def wait_for_messages(self: Any, timeout: int) -> None:
        deadline = time.monotonic() + timeout
        with self._messages_lock:
            while not self.messages:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                turns = _seconds_until_one_turns_visible(self)
                self._messages_lock.wait(left if turns is None else min(left, turns))

    wait_for_messages._wakes = True  # type: ignore[attr-defined]
    Queue.wait_for_messages = wait_for_messages  # type: ignore[method-assign]
