"""A trigger's stored settings (``Trigger.spec``), typed, with every default in one place.

The spec is stored as the JSON of a validated ``TriggerIn`` without ``state``, ``enabled``
and the event's secret, and **without its defaults** (``compact``): the trigger item is
rewritten by every claim, start and settle, and DynamoDB bills a write unit per KB of it.
A large payload is kept in an item of its own and the spec then holds its ``payload_ref``
instead (``store/payloads.externalize_payload``).

Readers never see the difference: ``expand`` puts every default back (nested ones too:
the schedule's, the event's and the limits'), so a spec stored before defaults were left
out and one stored after read the same. ``TriggerSpec`` reads through it, once, instead of
repeating ``spec.get("overlap", "skip")`` or ``max_attempts or 3`` at every call site.

Pydantic-free on purpose: the fire path (heartbeat, runner, ingest) reads specs on a cold
start. ``tests/unit/test_trigger_spec.py`` checks these defaults against the request
models' (``domain/spec``), field by field.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "TriggerSpec",
    "DEFAULTS",
    "SCHEDULE_DEFAULTS",
    "DST_DEFAULTS",
    "EVENT_DEFAULTS",
    "LIMITS_DEFAULTS",
    "NOT_STORED",
    "ABOUT_FIELDS",
    "REQUIRED",
    "top_defaults",
    "expand",
    "compact",
    "split_about",
]

# What a field reads as when the stored spec does not have it.
DEFAULTS: dict[str, Any] = {
    "backfill": "from_now",
    "overlap": "skip",
    "concurrency": 1,
    "allow_destructive": False,
    "history": "full",
    "after_fire": "disable",
}

# The nested objects' defaults, in the request models' field order (``expand`` keeps it, so
# an expanded spec is the dict the request model dumps). ``REQUIRED`` marks a field with no
# default: it is never added, only kept.
REQUIRED = object()
SCHEDULE_DEFAULTS: dict[str, Any] = {
    "cron": None,
    "timezone": "UTC",
    "interval_s": None,
    "at": None,
    "dst": None,
    "business_day": None,
    "time": None,
    "calendar": None,
    "jitter_s": None,
    "catchup": None,
    "skips": None,
    "extras": None,
}
DST_DEFAULTS: dict[str, Any] = {"skipped": "shift", "repeated": "once"}
# ``secret`` is never stored (it is sealed on the item); an eventbridge trigger's ``bus``
# is stored as given or as ``"default"`` (the request model fills it).
EVENT_DEFAULTS: dict[str, Any] = {
    "source": REQUIRED,
    "filter": None,
    "max_attempts": 3,
    "dedupe_window_s": 7 * 86400,
    "rate_limit": None,
    "debounce": None,
    "batch": None,
    "bus": None,
    "pattern": None,
    "bucket": None,
    "prefix": None,
    "suffix": None,
    "address": None,
}
LIMITS_DEFAULTS: dict[str, Any] = {
    "max_runs": None,
    "expires_at": None,
    "max_usd": None,
    "budget_period": "month",
    "max_failures": 5,
}
# In a request body, never in the stored spec (an old item may still carry ``enabled``).
NOT_STORED = frozenset({"state", "enabled"})
# What describes a trigger to people and nothing reads on a fire: kept in an "about" item
# of its own (``store/payloads.externalize_about``), read by the views and lists only. A
# 200-character title and ten tags are 450 B: on the hot item, most of a write unit.
ABOUT_FIELDS = ("title", "tags")


def top_defaults() -> dict[str, Any]:
    """Every top-level field in ``TriggerIn``'s order, with its default (``REQUIRED``: none);
    a new key of ``DEFAULTS`` joins at the end."""
    top: dict[str, Any] = {
        "workflow": REQUIRED,
        "title": None,
        "tags": [],
        "schedule": None,
        "event": None,
        "payload": None,
        "backfill": DEFAULTS["backfill"],
        "serialize_key": None,
        "secret_scope": None,
        "limits": LIMITS_DEFAULTS,
        "overlap": DEFAULTS["overlap"],
        "concurrency": DEFAULTS["concurrency"],
        "allow_destructive": DEFAULTS["allow_destructive"],
    }
    top.update({k: v for k, v in DEFAULTS.items() if k not in top})
    return top


# Nested objects and the defaults of their fields.
_NESTED: dict[str, dict[str, Any]] = {
    "schedule": SCHEDULE_DEFAULTS,
    "event": EVENT_DEFAULTS,
    "limits": LIMITS_DEFAULTS,
}


def _filled(stored: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """``stored`` with every missing default, in the defaults' order, unknown keys after."""
    out: dict[str, Any] = {}
    for name, default in defaults.items():
        if name in stored:
            out[name] = stored[name]
        elif default is not REQUIRED:
            out[name] = copy.deepcopy(default)
    out.update({k: v for k, v in stored.items() if k not in defaults})
    return out


def _expand_nested(name: str, value: Any) -> Any:
    if not isinstance(value, Mapping):
        return value
    out = _filled(value, _NESTED[name])
    if name == "schedule" and isinstance(out.get("dst"), Mapping):
        out["dst"] = _filled(out["dst"], DST_DEFAULTS)
    return out


def expand(stored: Mapping[str, Any]) -> dict[str, Any]:
    """The spec with every default spelled out: what ``TriggerIn`` dumps for it."""
    out = _filled(stored, top_defaults())
    for name in _NESTED:
        if name in out:
            out[name] = _expand_nested(name, out[name])
    if out.get("limits") is None:
        # ``limits: null`` (a PATCH clearing them) reads as the request model's defaults.
        out["limits"] = copy.deepcopy(LIMITS_DEFAULTS)
    return out


def _is_default(value: Any, default: Any) -> bool:
    # ``False == 0`` and ``1 == 1.0``: a default counts only with its own JSON type.
    return default is not REQUIRED and type(value) is type(default) and value == default


def _without_defaults(value: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in value.items() if not _is_default(v, defaults.get(k, REQUIRED))}


def compact(full: Mapping[str, Any]) -> dict[str, Any]:
    """The spec to store: ``full`` without the fields that equal their default.

    A nested object whose default is null (``schedule``, ``event``, ``schedule.dst``) stays,
    even when all its fields are defaults (``dst: {}`` is not ``dst: null``); ``limits``
    with only defaults is left out (it reads back as the defaults).
    """
    top = top_defaults()
    out: dict[str, Any] = {}
    for name, value in full.items():
        if name in NOT_STORED or _is_default(value, top.get(name, REQUIRED)):
            continue
        if name in _NESTED and isinstance(value, Mapping):
            value = _without_defaults(value, _NESTED[name])
            if name == "schedule" and isinstance(value.get("dst"), Mapping):
                value["dst"] = _without_defaults(value["dst"], DST_DEFAULTS)
            if name == "limits" and not value:
                continue
        out[name] = value
    return out


def split_about(stored: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A (compact) spec as the hot part and the about part (``ABOUT_FIELDS`` it has)."""
    hot = {k: v for k, v in stored.items() if k not in ABOUT_FIELDS}
    about = {k: v for k, v in stored.items() if k in ABOUT_FIELDS}
    return hot, about


def _count(value: Any, default: int) -> int:
    try:
        return max(1, int(value or default))
    except (TypeError, ValueError):
        return default


def _positive(value: Any, default: int) -> int:
    """A stored count, the default when it is missing, 0 or unreadable."""
    try:
        return int(value or default)
    except (TypeError, ValueError):
        return default


@dataclass(frozen=True)
class TriggerSpec:
    """The stored spec of one trigger, defaults applied (``schedule``, ``event`` and
    ``limits`` are the expanded dicts, as the API shows them)."""

    title: str | None = None
    tags: tuple[str, ...] = ()
    schedule: dict | None = None
    event: dict | None = None
    payload: Any = None
    payload_ref: str | None = None
    # The about item's reference when title and tags are kept apart; ``title`` and ``tags``
    # are then empty unless the spec was read with its about item (``load_spec``).
    about_ref: str | None = None
    backfill: str = DEFAULTS["backfill"]
    serialize_key: str | None = None
    secret_scope: str | None = None
    limits: dict = field(default_factory=lambda: dict(LIMITS_DEFAULTS))
    overlap: str = DEFAULTS["overlap"]
    concurrency: int = DEFAULTS["concurrency"]
    allow_destructive: bool = DEFAULTS["allow_destructive"]
    history: str = DEFAULTS["history"]
    after_fire: str = DEFAULTS["after_fire"]
    extra: dict = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TriggerSpec:
        """Read a stored spec (a dict from ``json.loads``); unknown keys land in ``extra``."""
        full = expand(data)
        known = set(cls.__dataclass_fields__) - {"extra"}
        ref = full.get("payload_ref")
        about = full.get("about_ref")
        return cls(
            title=full.get("title"),
            tags=tuple(full.get("tags") or ()),
            schedule=full.get("schedule"),
            event=full.get("event"),
            payload=full.get("payload"),
            payload_ref=str(ref) if ref else None,
            about_ref=str(about) if about else None,
            backfill=full.get("backfill") or DEFAULTS["backfill"],
            serialize_key=full.get("serialize_key"),
            secret_scope=full.get("secret_scope"),
            limits=full["limits"],
            overlap=full.get("overlap") or DEFAULTS["overlap"],
            concurrency=_count(full.get("concurrency"), DEFAULTS["concurrency"]),
            allow_destructive=bool(full.get("allow_destructive")),
            history=full.get("history") or DEFAULTS["history"],
            after_fire=full.get("after_fire") or DEFAULTS["after_fire"],
            extra={k: v for k, v in full.items() if k not in known},
        )

    @classmethod
    def from_json(cls, text: str | None) -> TriggerSpec:
        """Read ``Trigger.spec`` as stored (an externalized payload is not read back)."""
        return cls.from_dict(json.loads(text or "{}"))

    def has_tag(self, tag: str) -> bool:
        return tag in self.tags

    def display_name(self, shown_target: str) -> str:
        """How lists name the trigger: its title, else its (masked) target."""
        return self.title or shown_target

    @property
    def event_source(self) -> str | None:
        return (self.event or {}).get("source")

    @property
    def max_attempts(self) -> int:
        """Attempts per event, the first included (``event.max_attempts``)."""
        return _positive((self.event or {}).get("max_attempts"), EVENT_DEFAULTS["max_attempts"])

    @property
    def dedupe_window_s(self) -> int:
        """How long a delivery's dedupe key is remembered (``event.dedupe_window_s``)."""
        window = (self.event or {}).get("dedupe_window_s")
        return _positive(window, EVENT_DEFAULTS["dedupe_window_s"])

    @property
    def max_failures(self) -> int:
        """Failures in a row that disable the trigger (``limits.max_failures``)."""
        return _positive(self.limits.get("max_failures"), LIMITS_DEFAULTS["max_failures"])

    @property
    def budget(self) -> tuple[float, str] | None:
        """``(max_usd, budget_period)`` when the trigger has a budget, else None."""
        max_usd = self.limits.get("max_usd")
        if max_usd is None:
            return None
        return float(max_usd), str(
            self.limits.get("budget_period") or LIMITS_DEFAULTS["budget_period"]
        )
