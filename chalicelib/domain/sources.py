"""The event sources: the one list, which of them sign their deliveries, and their names.

A *signed* source posts to the trigger's hook URL and proves itself with a signature
(``domain/signatures.py``); a *delivered* source is handed over by AWS (or the local file
adapter) and has no hook URL and no signing secret. Every event source is one or the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "SIGNED_SOURCES",
    "DELIVERED_SOURCES",
    "EVENT_SOURCES",
    "SOURCE_NAMES",
    "source_label",
    "describe_event",
]

SIGNED_SOURCES = ("webhook", "github", "stripe", "slack", "standard", "shopify", "linkedin")
DELIVERED_SOURCES = ("eventbridge", "s3", "email", "file")
EVENT_SOURCES = SIGNED_SOURCES + DELIVERED_SOURCES

# How a trigger's cadence names its provider; a source not listed is named by its key.
SOURCE_NAMES = {
    "webhook": "webhook",
    "github": "GitHub",
    "stripe": "Stripe",
    "slack": "Slack",
    "standard": "Standard Webhooks",
    "shopify": "Shopify",
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
    return f"On {source} webhook" if source != "webhook" else "On webhook"
