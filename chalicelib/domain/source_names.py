"""How people read an event source: the provider's name, and an event trigger's cadence.

The list of sources itself is ``domain/event_sources.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "SOURCE_NAMES",
    "source_label",
    "describe_event",
]

# How a trigger's cadence names its provider; a source not listed is named by its key.
SOURCE_NAMES = {
    "webhook": "webhook",
    "github": "GitHub",
    "stripe": "Stripe",
    "slack": "Slack",
    "standard": "Standard Webhooks",
    "shopify": "Shopify",
    "linkedin": "LinkedIn",
    "eventbridge": "EventBridge",
    "s3": "S3",
    "email": "email",
    "file": "file",
}

# The filter keys that say *what* a delivery is, in the order a cadence looks for them.
_WHAT_KEYS = ("github_event", "type", "topic")


def source_label(source: str | None) -> str:
    """The provider's name as people read it (``event`` when the source is unknown)."""
    if not source:
        return "event"
    return SOURCE_NAMES.get(source, source)


def describe_event(event: Mapping[str, Any] | None) -> str:
    """An event trigger's cadence: ``On GitHub push, pull_request``, ``On webhook``..."""
    event = event or {}
    source = source_label(event.get("source"))
    flt = event.get("filter") or {}
    what = next((flt.get(key) for key in _WHAT_KEYS if flt.get(key)), None)
    if isinstance(what, list):
        what = ", ".join(str(w) for w in what)
    if what:
        return f"On {source} {what}"
    delivered = _delivered(event)
    if delivered:
        return delivered
    return f"On {source} webhook" if source != "webhook" else "On webhook"


def _delivered(event: Mapping[str, Any]) -> str | None:
    """The cadence of a source AWS (or the local folder watcher) delivers, else None."""
    source = event.get("source")
    if source == "s3":
        where = f"{event.get('bucket') or ''}/{event.get('prefix') or ''}".rstrip("/")
        return f"On S3 object created in {where}" if where else "On S3 object created"
    if source == "email":
        return f"On email to {event['address']}" if event.get("address") else "On email"
    if source == "eventbridge":
        pattern = event.get("pattern")
        kinds = pattern.get("detail-type") if isinstance(pattern, Mapping) else None
        if isinstance(kinds, list) and kinds and all(isinstance(k, str) for k in kinds):
            return "On EventBridge " + ", ".join(kinds)
        return "On EventBridge event"
    if source == "file":
        return f"On file in {event['path']}" if event.get("path") else "On file"
    return None
