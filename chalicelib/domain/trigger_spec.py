"""A trigger's stored settings (``TriggerModel.spec``), typed, with every default in one place.

The spec is stored as the JSON of a validated ``TriggerIn`` without ``state``, ``enabled``
and the event's secret; a large payload is kept in an item of its own and the spec then
holds its ``payload_ref`` instead (``store/dynamo.externalize_payload``). Readers parse it
here, once, instead of repeating ``spec.get("overlap", "skip")`` at every call site.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TriggerSpec", "DEFAULTS"]

# What a field reads as when the stored spec does not have it.
DEFAULTS: dict[str, Any] = {
    "backfill": "from_now",
    "overlap": "skip",
    "concurrency": 1,
    "allow_destructive": False,
}


def _count(value: Any, default: int) -> int:
    try:
        return max(1, int(value or default))
    except (TypeError, ValueError):
        return default


@dataclass(frozen=True)
class TriggerSpec:
    """The stored spec of one trigger."""

    title: str | None = None
    tags: tuple[str, ...] = ()
    schedule: dict | None = None
    event: dict | None = None
    payload: Any = None
    payload_ref: str | None = None
    backfill: str = DEFAULTS["backfill"]
    serialize_key: str | None = None
    secret_scope: str | None = None
    limits: dict | None = None
    overlap: str = DEFAULTS["overlap"]
    concurrency: int = DEFAULTS["concurrency"]
    allow_destructive: bool = DEFAULTS["allow_destructive"]
    extra: dict = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TriggerSpec:
        """Read a stored spec (a dict from ``json.loads``); unknown keys land in ``extra``."""
        known = set(cls.__dataclass_fields__) - {"extra"}
        ref = data.get("payload_ref")
        return cls(
            title=data.get("title"),
            tags=tuple(data.get("tags") or ()),
            schedule=data.get("schedule"),
            event=data.get("event"),
            payload=data.get("payload"),
            payload_ref=str(ref) if ref else None,
            backfill=data.get("backfill") or DEFAULTS["backfill"],
            serialize_key=data.get("serialize_key"),
            secret_scope=data.get("secret_scope"),
            limits=data.get("limits"),
            overlap=data.get("overlap") or DEFAULTS["overlap"],
            concurrency=_count(data.get("concurrency"), DEFAULTS["concurrency"]),
            allow_destructive=bool(data.get("allow_destructive")),
            extra={k: v for k, v in data.items() if k not in known},
        )

    @classmethod
    def from_json(cls, text: str | None) -> TriggerSpec:
        """Read ``TriggerModel.spec`` as stored (an externalized payload is not read back)."""
        return cls.from_dict(json.loads(text or "{}"))

    def has_tag(self, tag: str) -> bool:
        return tag in self.tags

    def display_name(self, shown_target: str) -> str:
        """How lists name the trigger: its title, else its (masked) target."""
        return self.title or shown_target

    @property
    def event_source(self) -> str | None:
        return (self.event or {}).get("source")
