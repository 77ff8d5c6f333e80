"""Event sources that AWS (or the local file adapter) delivers: EventBridge, S3, email, files.

A webhook arrives signed at ``/hooks/{token}``; these arrive on the ingest queue (or from
the file adapter) and join the webhook path right after its signature check
(``events.ingest``): stored before they run, deduped, filtered, within the trigger's
concurrency, with the same run records. What is theirs:

- ``provision``: on create, the AWS wiring that sends the trigger its events (an
  EventBridge rule and target for ``eventbridge`` and ``s3``, a SES receipt rule for
  ``email``); on delete, ``unprovision`` removes it.
- ``ingest``: turns each message of the ingest queue into the event its trigger stores.

The trigger use cases call ``prepare``, ``validate_event`` and ``on_delete`` directly.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from chalicelib.domain.event_sources import DELIVERED_SOURCES
from chalicelib.domain.records import Trigger
from chalicelib.services import events
from chalicelib.sources import wiring

if TYPE_CHECKING:  # the request models load pydantic: not on the ingest path (cold start)
    from chalicelib.domain.spec import EventIn

__all__ = ["prepare", "on_delete"]


def prepare(item: Trigger, event_in: EventIn, *, now: datetime) -> tuple[Trigger, dict]:
    """Create-time checks and wiring of an event trigger, whatever its source: the
    trigger to store (a webhook's token and sealed secret), and what is shown once."""
    from chalicelib.domain.spec import validate_source_fields  # cold start: API only

    validate_source_fields(event_in)
    if event_in.source not in DELIVERED_SOURCES:
        return events.prepare(item, event_in, now=now)
    events.validate_event(event_in)
    wiring.provision(item.id, event_in)
    return item, {}


def validate_event(event_in: EventIn) -> None:
    """What a PATCH re-checks: the source's fields (of a whole event), then the filter."""
    from chalicelib.domain.spec import EventIn, validate_source_fields  # cold start: API only

    if isinstance(event_in, EventIn):
        validate_source_fields(event_in)
    events.validate_event(event_in)


def on_delete(item: Trigger) -> None:
    """Remove the AWS wiring of a deleted trigger (nothing for webhooks)."""
    if item.kind != "event":
        return
    wiring.unprovision(item)
