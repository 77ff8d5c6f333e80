"""Free TCP ports for the tests' servers, unique per pytest-xdist worker.

``bind(("127.0.0.1", 0))`` hands out a port that is free *now*; a server started a moment
later may find it taken by another worker's server asked for in between. Each worker
draws from its own slice of 20000-31999 (below Linux's ephemeral range, where the OS
picks client ports), starting at a random place so that two runs side by side seldom
meet, and skips any port something else holds.
"""

from __future__ import annotations

import os
import random
import socket
import threading

__all__ = ["free_port"]

_FIRST, _LAST = 20000, 31999
_lock = threading.Lock()
_given: set[int] = set()
_next: list[int] = []


def _slice() -> tuple[int, int]:
    """This worker's ports: ``gw<n>`` of ``PYTEST_XDIST_WORKER_COUNT`` workers (else all)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
    index = int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else 0
    size = (_LAST - _FIRST + 1) // max(1, count)
    start = _FIRST + (index % max(1, count)) * size
    return start, start + size - 1


def _is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A port free now, never handed out before in this process, in this worker's slice."""
    first, last = _slice()
    with _lock:
        if not _next:
            _next.append(random.randint(first, last))
        for _ in range(last - first + 1):
            port = _next[0]
            _next[0] = first if port >= last else port + 1
            if port not in _given and _is_free(port):
                _given.add(port)
                return port
    raise RuntimeError(f"no free port in {first}-{last}")
