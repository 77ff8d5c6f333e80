"""An event trigger's ``event`` object as a client sends it, and a secret rotation."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from chalicelib.domain.errors import ValidationError
from chalicelib.domain.event_sources import DELIVERED_SOURCES
from chalicelib.domain.spec.base import Strict

__all__ = [
    "EventSource",
    "EventIn",
    "EventPatch",
    "RateLimitIn",
    "DebounceIn",
    "BatchIn",
    "RotateSecretIn",
    "ROTATION_GRACE_S",
    "validate_source_fields",
]

# event_sources.EVENT_SOURCES, spelled out for the type checker (a unit test keeps them equal).
EventSource = Literal[
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
]
# What each delivered source needs, and what it must not be given.
_SOURCE_FIELDS = {
    "eventbridge": ({"pattern"}, {"bus", "pattern"}),
    "s3": ({"bucket"}, {"bucket", "prefix", "suffix"}),
    "email": ({"address"}, {"address"}),
}
_ALL_SOURCE_FIELDS = {"bus", "pattern", "bucket", "prefix", "suffix", "address"}
# S3 bucket names (the rules for new buckets); a recipient address, loosely.
_BUCKET = r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$"
_ADDRESS = r"^[^@\s<>]+@[^@\s<>]+\.[^@\s<>]+$"
_BUS = r"^[A-Za-z0-9._\-/]{1,256}$"

ROTATION_GRACE_S = 900


class RateLimitIn(Strict):
    """``event.rate_limit``: at most ``max`` events run per window of ``per_s`` seconds."""

    max: int = Field(ge=1, le=100_000)
    per_s: int = Field(ge=1, le=86_400)


# SQS delays a message at most 900 s: a window's wait is one delayed message (or a chain).
_MAX_WAIT_S = 900


class DebounceIn(Strict):
    """``event.debounce``: one run after ``wait_s`` of quiet, or ``max_wait_s`` after the
    window's first event, whichever is first; the run gets every event of the window."""

    wait_s: int = Field(ge=1, le=_MAX_WAIT_S)
    max_wait_s: int = Field(ge=1, le=_MAX_WAIT_S)

    @model_validator(mode="after")
    def _order(self) -> DebounceIn:
        if self.max_wait_s < self.wait_s:
            raise ValidationError(
                "max_wait_s must be at least wait_s", field="event.debounce.max_wait_s"
            )
        return self


class BatchIn(Strict):
    """``event.batch``: one run per ``max_events`` events, or ``max_wait_s`` after the
    batch's first event, whichever is first."""

    max_events: int = Field(ge=1, le=100)
    max_wait_s: int = Field(ge=1, le=_MAX_WAIT_S)


class EventIn(Strict):
    source: EventSource
    filter: dict[str, Any] | None = None
    secret: str | None = Field(default=None, min_length=8, max_length=512)
    max_attempts: int = Field(default=3, ge=1, le=10)
    dedupe_window_s: int = Field(default=7 * 86400, ge=60, le=30 * 86400)
    # Events beyond it are stored and recorded "throttled", never run (replayable).
    rate_limit: RateLimitIn | None = None
    # One run for a window of events (fire.events): after quiet, or per count.
    debounce: DebounceIn | None = None
    batch: BatchIn | None = None
    # eventbridge: the bus (name or ARN) and an EventBridge event pattern.
    bus: str | None = Field(default=None, pattern=_BUS)
    pattern: dict[str, Any] | None = None
    # s3: objects created in bucket, under prefix, ending in suffix.
    bucket: str | None = Field(default=None, pattern=_BUCKET)
    prefix: str | None = Field(default=None, max_length=1024)
    suffix: str | None = Field(default=None, min_length=1, max_length=1024)
    # email: the recipient address SES receives for.
    address: str | None = Field(default=None, max_length=254, pattern=_ADDRESS)

    @model_validator(mode="after")
    def _one_window(self) -> EventIn:
        if self.debounce is not None and self.batch is not None:
            raise ValidationError("give debounce or batch, not both", field="event.batch")
        return self

    @model_validator(mode="after")
    def _default_bus(self) -> EventIn:
        if self.source == "eventbridge" and self.bus is None:
            self.bus = "default"  # CONTRACT: bus defaults to the account's default bus
        return self


class EventPatch(Strict):
    """``event`` in a PATCH: only the fields sent change (the source cannot; see triggers)."""

    source: EventSource | None = None
    filter: dict[str, Any] | None = None
    secret: str | None = Field(default=None, min_length=8, max_length=512)
    max_attempts: int | None = Field(default=None, ge=1, le=10)
    dedupe_window_s: int | None = Field(default=None, ge=60, le=30 * 86400)
    rate_limit: RateLimitIn | None = None
    debounce: DebounceIn | None = None
    batch: BatchIn | None = None


class RotateSecretIn(Strict):
    """The body of ``POST /v1/triggers/{id}/rotate-secret`` (optional: a provider-issued secret)."""

    secret: str | None = Field(default=None, min_length=8, max_length=512)
    # How long the previous secret keeps verifying: an explicit choice (up to 7 days), with a
    # short default, because a rotation is often "it leaked" (send 0 to end it now).
    grace_s: int = Field(default=ROTATION_GRACE_S, ge=0, le=7 * 86400)


def validate_source_fields(event: EventIn) -> None:
    """Each source's own fields: required ones present, others absent (422 naming the field)."""
    required, allowed = _SOURCE_FIELDS.get(event.source, (set(), set()))
    given = {name for name in _ALL_SOURCE_FIELDS if getattr(event, name, None) is not None}
    for name in sorted(given - allowed):
        raise ValidationError(
            f"{name} does not apply to event.source {event.source!r}", field=f"event.{name}"
        )
    for name in sorted(required - given):
        raise ValidationError(f"event.source {event.source!r} needs {name}", field=f"event.{name}")
    if event.source in DELIVERED_SOURCES and event.secret is not None:
        raise ValidationError(
            f"{event.source} events are not signed: give no secret", field="event.secret"
        )
