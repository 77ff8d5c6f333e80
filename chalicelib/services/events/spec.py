"""What every part of an event trigger reads the same way: its stored settings, a body as JSON.

Instants here are epoch milliseconds (``ms``), as the events table stores them.
"""

from __future__ import annotations

import json
from typing import Any

from chalicelib.domain.epoch_ms import ms
from chalicelib.domain.trigger_spec import expand
from chalicelib.settings import get_settings
from chalicelib.store import dynamo
from chalicelib.store.models import TriggerModel

__all__ = ["ms", "event_spec", "parse_json", "pending_shard", "webhook_url"]


def event_spec(item: TriggerModel) -> tuple[dict, dict]:
    """A trigger's stored settings and their ``event`` part, every default spelled out
    (``trigger_spec.expand``: a spec is stored without its defaults)."""
    spec = expand(json.loads(item.spec or "{}"))
    return spec, spec.get("event") or {}


def parse_json(body: bytes) -> Any:
    """A body that is a JSON object or array, parsed; None for anything else."""
    if body.lstrip()[:1] not in (b"{", b"["):
        return None
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


def pending_shard(event_id: str) -> str:
    """The shard of the sweep's index an event is kept under."""
    return dynamo.shard_of(event_id, get_settings().due_shards)


def webhook_url(token: str) -> str:
    """The public address a provider delivers to."""
    return f"{get_settings().public_url}/hooks/{token}"
