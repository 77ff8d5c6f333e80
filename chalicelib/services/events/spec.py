"""What every part of an event trigger reads the same way: its stored settings, a body as JSON.

Instants here are epoch milliseconds (``ms``), as the events table stores them.
"""

from __future__ import annotations

import json
import math
from typing import Any

from chalicelib.domain.epoch_ms import ms
from chalicelib.domain.records import Trigger
from chalicelib.domain.trigger_spec import expand
from chalicelib.settings import get_settings
from chalicelib.store import triggers

__all__ = ["ms", "event_spec", "parse_json", "pending_shard", "webhook_url"]


def event_spec(item: Trigger) -> tuple[dict, dict]:
    """A trigger's stored settings and their ``event`` part, every default spelled out
    (``trigger_spec.expand``: a spec is stored without its defaults)."""
    spec = expand(json.loads(item.spec or "{}"))
    return spec, spec.get("event") or {}


def parse_json(body: bytes) -> Any:
    """A body that is a JSON object or array, parsed; None for anything else.

    A number beyond a double (``1e400``) would be ``inf``, which no JSON can carry on
    (a run's output or state holding it could not be read back): such a body is read
    as text, as any body that is not JSON. It was signed as it is, so it is not refused.
    """
    if body.lstrip()[:1] not in (b"{", b"["):
        return None
    try:
        return json.loads(body, parse_float=_finite, parse_constant=_not_json)
    except (ValueError, RecursionError):
        return None


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is beyond the range of a double")
    return value


def _not_json(text: str) -> Any:
    raise ValueError(f"{text} is not JSON")


def pending_shard(event_id: str) -> str:
    """The shard of the sweep's index an event is kept under."""
    return triggers.shard_of(event_id, get_settings().due_shards)


def webhook_url(token: str) -> str:
    """The public address a provider delivers to."""
    return f"{get_settings().public_url}/hooks/{token}"
