"""Event runs in the run pipeline: ``EventRunPolicy``, listed once where the runner is built.

- ``fire_fields``: the event's whole body is the run's payload (parsed if JSON), with
  its clipped headers.
- ``after_settle``: the slot is free, so the next event is pulled first (it is what a
  waiting burst waits for), then the attempt is recorded: retried after its backoff,
  deferred, or terminal. A pull that failed is raised after the attempt is recorded
  (the pipeline retries the hook, then hands the message back): never swallowed.
- ``after_lost``: a reaped event run is a failed attempt, retried while attempts are
  left; its slot is free, so the next event is pulled.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from chalicelib.domain.event_rules import attempt_status, max_attempts_of
from chalicelib.domain.records import Trigger
from chalicelib.observability import logger, record_metric
from chalicelib.services.events import attempts, window
from chalicelib.services.events.pull import dispatch_pending
from chalicelib.services.events.spec import event_spec, ms, parse_json
from chalicelib.services.pipeline import RunContext, RunPolicy
from chalicelib.store import s3

__all__ = ["EventRunPolicy", "EVENT_RUNS", "payload_of"]


def payload_of(raw: bytes) -> Any:
    """What a run of the event gets as its payload: the body parsed if JSON, else its text."""
    text = raw.decode("utf-8", "replace")
    parsed = parse_json(raw)
    return parsed if parsed is not None else text


class EventRunPolicy(RunPolicy):
    """The event trigger's part in a run (see the module docstring)."""

    name = "events"

    def fire_fields(self, ctx: RunContext) -> dict:
        """The whole body as the payload (parsed if JSON), and the clipped headers."""
        event = ctx.event
        if event is None or ctx.message.surface != "event":
            return {}
        if event.body is not None:
            raw = event.body.encode("utf-8")
        elif event.body_s3_key:
            raw = s3.get_body(event.body_s3_key)
        else:
            raw = b""
        payload = payload_of(raw)
        fields = {"payload": payload, "headers": json.loads(event.headers or "{}")}
        # A debounced or batched trigger: every event of the window (fire.events).
        fields.update(window.window_events(ctx, event, payload))
        return fields

    def after_settle(self, ctx: RunContext) -> None:
        """Pull the next event, then record the attempt: retry, defer or finish."""
        if ctx.item.kind != "event":
            return
        now_ms = ms(ctx.finished_at or ctx.now)
        pull_error: Exception | None = None
        try:
            dispatch_pending(ctx.item.id)
        except Exception as exc:
            pull_error = exc
        if ctx.message.surface == "event" and ctx.event is not None:  # not a manual run
            outcome = attempts.settle_event(
                ctx.event.id,
                run_id=ctx.message.run_id,
                trigger_id=ctx.item.id,
                status=attempt_status(ctx.status or "failed"),
                attempt=int(ctx.event.attempt or 1),
                max_attempts=max_attempts_of(ctx.spec.get("event") or {}),
                now_ms=now_ms,
                defer_s=(ctx.defer_s or 1) if ctx.deferred else None,
            )
            if outcome is not None:
                record_metric("EventAttempts", outcome=outcome)
            window.end_window(
                ctx.item, head_id=ctx.event.id, run_id=ctx.message.run_id, now_ms=now_ms
            )
        if pull_error is not None:
            raise pull_error

    def after_lost(self, *, item: Trigger, run_id: str, entry: Any, now: datetime) -> None:
        """A reaped event run is a failed attempt: retried, or the event fails."""
        if item.kind != "event":
            return
        try:
            _record_lost_attempt(item, run_id=run_id, entry=entry, now=now)
        except Exception:  # never break the reaping; the sweep keeps pending events moving
            logger.exception(
                "event bookkeeping after a lost run failed", extra={"trigger_id": item.id}
            )


def _record_lost_attempt(item: Trigger, *, run_id: str, entry: Any, now: datetime) -> None:
    if isinstance(entry, dict) and entry.get("k") == "e" and entry.get("e"):
        attempts.settle_event(
            str(entry["e"]),
            run_id=run_id,
            trigger_id=item.id,
            status="failed",
            attempt=None,
            max_attempts=max_attempts_of(event_spec(item)[1]),
            now_ms=ms(now),
        )
        window.end_window(item, head_id=str(entry["e"]), run_id=run_id, now_ms=ms(now))
    dispatch_pending(item.id)  # a slot was freed: pull the next event


EVENT_RUNS = EventRunPolicy()
