"""The one list of event sources a trigger may listen to, and which of them AWS delivers."""

from __future__ import annotations

__all__ = ["EVENT_SOURCES", "DELIVERED_SOURCES", "SIGNED_SOURCES"]

EVENT_SOURCES = (
    "webhook",
    "github",
    "stripe",
    "slack",
    "standard",
    "shopify",
    "linkedin",
    "eventbridge",
    "s3",
    "email",
    "file",
)
# Sources that AWS (or the local file adapter) delivers: no hook URL, no signing secret.
DELIVERED_SOURCES = ("eventbridge", "s3", "email", "file")
# The others arrive at /hooks/{token}, signed by their provider (``domain.signatures``).
SIGNED_SOURCES = tuple(source for source in EVENT_SOURCES if source not in DELIVERED_SOURCES)
