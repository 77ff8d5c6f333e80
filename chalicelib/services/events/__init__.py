"""Event triggers: signed webhook ingress, event runs, retries, replay and the safety sweep.

Follow a webhook from arrival to settle through the modules, in this order:

- ``ingress``: ``POST /hooks/{token}`` (and ``ingest`` for AWS-delivered events):
  size, token and signature, switch, status, expiry, challenge, goodbye, filter.
- ``accept``: the dedupe put (the event is its own dedupe record), the waiting cap, and
  the first message, sent only if the trigger has room (the queue is not read: the
  runner runs an older waiting event first); a body that would make the item over 1 KB
  goes to S3.
- ``run_start``: the runner's start of an event run: the queue's head in turn, claim and
  start in one write, then the event's own start fence (pending → running).
- ``policy``: ``EVENT_RUNS``, the event trigger's ``RunPolicy``: the body as the payload,
  after settle the pull of the next event (``pull``) and the attempt recorded
  (``attempts``: retry after backoff, deferral, or terminal), after a lost run the same.
- ``event_sweep``: ``sweep``, the heartbeat's safety net, and ``recovery`` for a run
  that ended without its bookkeeping.
- ``rotation`` (the signing secret: create, rotate, open), ``replay``, ``views``.

The fenced writes are in ``store/event_writes.py``, the reads in ``store/event_reads.py``,
the rules in ``domain/event_rules.py``. Submodules never import this package; other code
imports the names below from it.
"""

from __future__ import annotations

from chalicelib.services.events.accept import QUOTA_RETRY_AFTER_S
from chalicelib.services.events.attempts import settle_event
from chalicelib.services.events.event_sweep import SWEEP_GRACE_S, SWEEP_ROWS_PER_SHARD, sweep
from chalicelib.services.events.ingress import (
    MAX_BODY_BYTES,
    delivery_hooks,
    disable_source_gone,
    ingest,
    receive,
    trigger_for_token,
)
from chalicelib.services.events.policy import EVENT_RUNS, EventRunPolicy
from chalicelib.services.events.pull import PULL_ATTEMPTS, PullFailed, dispatch_pending
from chalicelib.services.events.recovery import finish_if_run_over
from chalicelib.services.events.replay import replay_event
from chalicelib.services.events.rotation import (
    MAX_PREVIOUS_SECRETS,
    prepare,
    rotate_secret,
    secrets_of,
    validate_event,
    webhook_view,
)
from chalicelib.services.events.run_start import start_event_run, started_message
from chalicelib.services.events.views import event_view, list_events

__all__ = [
    "MAX_BODY_BYTES",
    "QUOTA_RETRY_AFTER_S",
    "SWEEP_GRACE_S",
    "SWEEP_ROWS_PER_SHARD",
    "MAX_PREVIOUS_SECRETS",
    "PULL_ATTEMPTS",
    "PullFailed",
    "EVENT_RUNS",
    "EventRunPolicy",
    "delivery_hooks",
    "validate_event",
    "prepare",
    "webhook_view",
    "receive",
    "ingest",
    "disable_source_gone",
    "trigger_for_token",
    "secrets_of",
    "start_event_run",
    "started_message",
    "dispatch_pending",
    "settle_event",
    "finish_if_run_over",
    "sweep",
    "rotate_secret",
    "list_events",
    "replay_event",
    "event_view",
]
