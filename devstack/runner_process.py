"""The local stack's runner pool in a process of its own, as Lambda runs runners apart.

Run as ``python -m devstack.runner_process --queue-url URL --concurrency N``; the
stack starts it (``stack.LocalStack``) once the tables are loaded and the claims of a
previous run recovered, with the stack's environment (settings, queue URLs, API key,
``CRONHOOK_WORKFLOW_MODULES``).

Why a process: in AWS the runners are Lambda functions, each with its own interpreter. As
threads of the stack's process they shared its interpreter lock with the API server, the
heartbeat and the consumers, and a burst of webhooks (32 deliveries at once) slowed every
step of the event chain behind the requests: 1.5 to 3.5 s between settled runs while the
deliveries arrived, against 0.16 s after (the 2,000-webhook burst, docs/benchmarks.md).

SIGTERM stops it: the poller stops receiving, each runner finishes the run in hand
(within ``--grace`` seconds; what is still running then is recorded ``lost`` on the next
start), and it exits 0. It also stops when the stack that started it dies (Linux:
PDEATHSIG; elsewhere its parent is watched).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time

from devstack.embedded_aws import _die_with_parent
from devstack.fairness import FairBuffer
from devstack.pool import RunnerPool

__all__ = ["main", "run_pool"]

# How often the main thread looks for a stop (a signal, or the stack gone).
_WATCH_S = 0.2


def run_pool(
    queue_url: str, *, concurrency: int, stop: threading.Event, grace_s: float
) -> list[threading.Thread]:
    """Run the poller and ``concurrency`` runners until ``stop`` is set; then give the
    runners ``grace_s`` to finish the runs in hand. Returns the threads still running."""
    from chalicelib import wiring

    wiring.ready()
    pool = RunnerPool(queue_url, FairBuffer(ceiling=max(1, concurrency)), stop)
    threads = [threading.Thread(target=pool.poller_loop, name="runner-poller", daemon=True)]
    threads += [
        threading.Thread(target=pool.runner_loop, name=f"runner-{n}", daemon=True)
        for n in range(concurrency)
    ]
    for thread in threads:
        thread.start()
    stop.wait()
    deadline = time.monotonic() + grace_s
    for thread in threads:
        thread.join(timeout=max(0.1, deadline - time.monotonic()))
    return [t for t in threads if t.is_alive()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devstack.runner_process")
    parser.add_argument("--queue-url", required=True)
    parser.add_argument("--concurrency", type=int, default=5)
    parser.add_argument("--grace", type=float, default=10.0)
    args = parser.parse_args(argv)
    if args.concurrency < 1:
        parser.error("--concurrency must be at least 1")
    _die_with_parent()
    from chalicelib.settings import get_settings

    log_file = get_settings().log_file
    if log_file:  # the stack's log file, for GET /v1/runs/{id}/logs
        from chalicelib.observability import log_to_file

        log_to_file(log_file)
    parent = os.getppid()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the stack, which stops us
    # The handler only records the signal: setting an Event there could deadlock with the
    # main thread holding the Event's lock in wait().
    asked: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, frame: asked.append(signum))
    stop = threading.Event()

    def watch() -> None:
        while not asked and os.getppid() == parent:
            time.sleep(_WATCH_S)
        stop.set()

    threading.Thread(target=watch, name="stop-watch", daemon=True).start()
    left = run_pool(args.queue_url, concurrency=args.concurrency, stop=stop, grace_s=args.grace)
    if left:
        print(
            f"runners: {len(left)} run(s) still in hand at the stop (recorded lost on the"
            " next start)",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
