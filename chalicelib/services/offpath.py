"""Writes kept off a response's path: a bounded queue and one daemon thread per process.

Why: ``POST /hooks/{token}`` answers an unknown token and a real token's bad signature
with the same bytes, and must take the same time too. Recording the refusal of a real
token (``services/deliveries.py``: a counter ADD and a PutItem) cost two synchronous
writes, ~4 ms, which an unknown token never paid: the answer time told a real token
from a guessed one. The refusal is now handed to this queue and the answer goes out at
once; the thread writes it.

What it promises: a job runs once, in the order given, on the writer's thread; a full
queue drops the job (counted: metric ``DeliveriesNotRecorded``) rather than block a
response. ``flush`` waits for what this process holds (a read of the deliveries calls
it first, so a refusal is listed as soon as it is answered, in the local stack). In
Lambda the thread runs while the environment does: a job queued just before an
invocation ends is written during the environment's next one, or never if AWS retires
the environment first. Only diagnostics go through here (refused deliveries), never an
event, a run or a dedupe record.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable

from chalicelib.observability import logger, record_metric

__all__ = ["OffPathWriter", "refusals"]


class OffPathWriter:
    """A bounded queue of jobs and the daemon thread that runs them (started on first use)."""

    def __init__(self, name: str, *, capacity: int = 1000) -> None:
        self.name = name
        self._jobs: queue.Queue[Callable[[], None]] = queue.Queue(maxsize=capacity)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def submit(self, job: Callable[[], None]) -> bool:
        """Queue ``job`` without waiting; False (and counted) if the queue is full."""
        self._start()
        try:
            self._jobs.put_nowait(job)
        except queue.Full:
            record_metric("DeliveriesNotRecorded", outcome="queue_full")
            return False
        return True

    def flush(self, *, timeout_s: float = 2.0) -> bool:
        """Wait until every queued job has run (at most ``timeout_s``); True if none is left."""
        deadline = time.monotonic() + timeout_s
        done = self._jobs.all_tasks_done
        with done:
            while self._jobs.unfinished_tasks:
                left = deadline - time.monotonic()
                if left <= 0 or not done.wait(left):
                    return not self._jobs.unfinished_tasks
        return True

    def _start(self) -> None:
        # After a fork the thread object is inherited but not running: start a new one.
        if self._thread is not None and self._thread.is_alive():
            return
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name=f"offpath-{self.name}", daemon=True
                )
                self._thread.start()

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            try:
                job()
            except Exception:  # a job must never stop the writer
                logger.exception("an off-path write failed", extra={"writer": self.name})
            finally:
                self._jobs.task_done()


refusals = OffPathWriter("delivery-refusals")
