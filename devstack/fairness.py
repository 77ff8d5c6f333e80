"""The local runner pool's fair share of the job ceiling among tenants.

In AWS the fire queue is a fair queue: every message carries its tenant as its
``MessageGroupId``, and when one tenant has a backlog SQS delivers the other tenants'
messages first, so a quiet tenant's fire is not held behind a noisy tenant's queue
(nothing is written for it). The local pool follows the same rule, here:

1. Runner threads receive messages into one shared ``FairBuffer`` instead of running
   the batch they received in order (a batch of ten 25 s runs of one tenant would hold
   up an eleventh tenant's fire for minutes).
2. A free runner takes the oldest waiting message of the tenant with the fewest runs in
   progress (ties: the tenant whose oldest message has waited longest).
3. While another tenant has a message waiting, no tenant starts more than its fair
   share, ``ceil(ceiling / tenants with work)``. A tenant with work alone may use the
   whole pool if it is the only tenant that sent fires in the last ``recent_s``
   (15 min); otherwise it leaves one runner free, so the next fire of a quiet tenant
   starts at once. Runs are never stopped for fairness: at worst (a tenant silent for
   longer, a pool of one) a quiet fire waits for one noisy run to end, never for the
   noisy tenant's backlog.
4. One poller receives into the buffer while it holds fewer than ``max_waiting``
   messages (it has to see the other tenants' messages behind a backlog); a message
   held for half its visibility timeout gets its visibility extended (``to_extend``),
   so a held message never reappears in the queue, and its receive count does not grow.

The rule is pure (``pick``); ``FairBuffer`` adds the lock and the bookkeeping.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["FairBuffer", "Held", "pick", "fair_share"]


@dataclass
class Held:
    """A received message waiting for a runner."""

    tenant: str
    message: Any
    received_at: float
    extended_at: float = 0.0


def fair_share(ceiling: int, tenants_with_work: int) -> int:
    """How many runs one tenant may have in progress while others have work too."""
    return max(1, math.ceil(ceiling / max(1, tenants_with_work)))


def pick(
    waiting: dict[str, deque[Held]],
    running: dict[str, int],
    *,
    ceiling: int,
    recent_tenants: int = 1,
) -> str | None:
    """The tenant whose oldest waiting message runs next, or None (all at their share).

    ``recent_tenants`` is how many tenants sent fires lately: with more than one, a
    tenant alone never takes the last free runner, so the next fire of a quiet tenant
    starts at once instead of after a noisy tenant's run.
    """
    candidates = [t for t, queue in waiting.items() if queue]
    if not candidates or sum(running.values()) >= ceiling:
        return None
    with_work = {t for t, n in running.items() if n > 0} | set(candidates)
    share = fair_share(ceiling, len(with_work))
    others_waiting = len(candidates) > 1
    alone_limit = ceiling - 1 if recent_tenants > 1 and ceiling > 1 else ceiling

    def allowed(tenant: str) -> bool:
        if others_waiting:
            return running.get(tenant, 0) < share
        return running.get(tenant, 0) < alone_limit

    open_ = [t for t in candidates if allowed(t)]
    if not open_:
        return None
    return min(open_, key=lambda t: (running.get(t, 0), waiting[t][0].received_at))


@dataclass
class FairBuffer:
    """Received messages shared by the runner threads, handed out by ``pick``."""

    ceiling: int
    max_waiting: int = 1000
    # Tenants that sent a fire within this long count as active (see ``pick``).
    recent_s: float = 900.0
    clock: Callable[[], float] = time.monotonic
    _waiting: dict[str, deque[Held]] = field(default_factory=dict)
    _running: dict[str, int] = field(default_factory=dict)
    _last_seen: dict[str, float] = field(default_factory=dict)
    _lock: threading.Condition = field(default_factory=threading.Condition)

    def add(self, tenant: str, message: Any) -> None:
        """A message received for ``tenant``."""
        with self._lock:
            now = self.clock()
            self._waiting.setdefault(tenant, deque()).append(Held(tenant, message, now, now))
            self._last_seen[tenant] = now
            self._lock.notify_all()

    def waiting(self) -> int:
        """How many messages wait for a runner."""
        with self._lock:
            return sum(len(q) for q in self._waiting.values())

    def runnable(self) -> bool:
        """Whether a free runner would find a message it may start now."""
        with self._lock:
            return self._pick() is not None

    def take(self) -> Held | None:
        """The next message to run (counted as running until ``done``), or None."""
        with self._lock:
            tenant = self._pick()
            if tenant is None:
                return None
            held = self._waiting[tenant].popleft()
            if not self._waiting[tenant]:
                del self._waiting[tenant]
            self._running[tenant] = self._running.get(tenant, 0) + 1
            return held

    def _pick(self) -> str | None:
        now = self.clock()
        for tenant, seen in list(self._last_seen.items()):
            if now - seen > self.recent_s and tenant not in self._running:
                del self._last_seen[tenant]
        return pick(
            self._waiting, self._running, ceiling=self.ceiling, recent_tenants=len(self._last_seen)
        )

    def done(self, tenant: str) -> None:
        """A run that ``take`` handed out has ended."""
        with self._lock:
            left = self._running.get(tenant, 0) - 1
            if left > 0:
                self._running[tenant] = left
            else:
                self._running.pop(tenant, None)
            self._lock.notify_all()

    def full(self) -> bool:
        """Whether the poller should leave further messages in the queue for now."""
        return self.waiting() >= self.max_waiting

    def to_extend(self, *, every_s: float) -> list[Held]:
        """Messages whose visibility was last set ``every_s`` ago or more (now marked done)."""
        now = self.clock()
        out: list[Held] = []
        with self._lock:
            for queue in self._waiting.values():
                for held in queue:
                    if now - held.extended_at >= every_s:
                        held.extended_at = now
                        out.append(held)
        return out

    def wait(self, timeout_s: float) -> None:
        """Sleep until something changes (a message added, a run done) or ``timeout_s``."""
        with self._lock:
            self._lock.wait(timeout_s)
