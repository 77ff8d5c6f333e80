"""What a client may send for a trigger, validated; and the compact schedule encoding.

The pydantic models here are the single source for request validation and for the
OpenAPI document. Every problem becomes a ``ValidationError`` naming the field.

Validation is strict about JSON types (``parse_model`` validates the body as JSON, in
pydantic's strict mode): a boolean is never a number and a number never a boolean, a
string is never a number and a number never a string. The only conversions left are
those JSON itself needs: an integer is accepted where a number (float) is expected
(``"max_usd": 5``), and instants are ISO-8601 strings parsed into datetimes.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic import ValidationError as PydanticValidationError

from chalicelib.domain.errors import PayloadTooLarge, ValidationError
from chalicelib.domain.schedule import ScheduleSpec

__all__ = [
    "DstIn",
    "ScheduleIn",
    "EventIn",
    "EventPatch",
    "LimitsIn",
    "TriggerIn",
    "TriggerPatch",
    "PreviewIn",
    "KeyIn",
    "RotateSecretIn",
    "parse_model",
    "schedule_spec_from",
    "encode_schedule",
    "decode_schedule",
    "MAX_STATE_BYTES",
    "EVENT_SOURCES",
]

MAX_STATE_BYTES = 64 * 1024
EVENT_SOURCES = ("webhook", "github", "stripe", "slack", "standard", "shopify")

ShortStr = Annotated[str, Field(min_length=1, max_length=200)]


class _Strict(BaseModel):
    """A request model: no unknown fields, no NaN/Infinity, and strict JSON types."""

    model_config = ConfigDict(
        extra="forbid", allow_inf_nan=False, str_max_length=10_000, strict=True
    )


class DstIn(_Strict):
    skipped: Literal["shift", "skip"] = "shift"
    repeated: Literal["once", "both"] = "once"


class ScheduleIn(_Strict):
    cron: str | None = Field(default=None, max_length=200)
    timezone: str = Field(default="UTC", max_length=64)
    interval_s: int | None = Field(default=None, ge=1, le=366 * 86400)
    at: datetime | None = None
    dst: DstIn | None = None

    @field_validator("at")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("must include a timezone offset or Z")
        return value.astimezone(UTC) if value is not None else None


class EventIn(_Strict):
    source: Literal["webhook", "github", "stripe", "slack", "standard", "shopify"]
    filter: dict[str, Any] | None = None
    secret: str | None = Field(default=None, min_length=8, max_length=512)
    max_attempts: int = Field(default=3, ge=1, le=10)
    dedupe_window_s: int = Field(default=7 * 86400, ge=60, le=30 * 86400)


class EventPatch(_Strict):
    """``event`` in a PATCH: only the fields sent change (the source cannot; see triggers)."""

    source: Literal["webhook", "github", "stripe", "slack", "standard", "shopify"] | None = None
    filter: dict[str, Any] | None = None
    secret: str | None = Field(default=None, min_length=8, max_length=512)
    max_attempts: int | None = Field(default=None, ge=1, le=10)
    dedupe_window_s: int | None = Field(default=None, ge=60, le=30 * 86400)


class LimitsIn(_Strict):
    max_runs: int | None = Field(default=None, ge=1)
    expires_at: datetime | None = None
    max_usd: float | None = Field(default=None, ge=0, le=1_000_000)
    budget_period: Literal["day", "week", "month", "total"] = "month"
    max_failures: int = Field(default=5, ge=1, le=1000)

    @field_validator("expires_at")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("must include a timezone offset or Z")
        return value.astimezone(UTC) if value is not None else None


class TriggerIn(_Strict):
    """The body of ``POST /v1/triggers``."""

    workflow: ShortStr
    title: str | None = Field(default=None, max_length=200)
    tags: list[Annotated[str, Field(min_length=1, max_length=64)]] = Field(
        default_factory=list, max_length=50
    )
    schedule: ScheduleIn | None = None
    event: EventIn | None = None
    state: dict[str, Any] = Field(default_factory=dict)
    payload: Any = None
    backfill: Literal["from_now", "all"] = "from_now"
    serialize_key: str | None = Field(default=None, max_length=200)
    secret_scope: str | None = Field(default=None, max_length=200)
    limits: LimitsIn = Field(default_factory=LimitsIn)
    overlap: Literal["skip", "buffer_one", "allow"] = "skip"
    concurrency: int = Field(default=1, ge=1, le=100)
    allow_destructive: bool = False
    enabled: bool = True


class TriggerPatch(_Strict):
    """The body of ``PATCH /v1/triggers/{id}``: every field optional."""

    version: int | None = None
    workflow: ShortStr | None = None
    title: str | None = Field(default=None, max_length=200)
    tags: list[Annotated[str, Field(min_length=1, max_length=64)]] | None = Field(
        default=None, max_length=50
    )
    schedule: ScheduleIn | None = None
    event: EventPatch | None = None
    state: dict[str, Any] | None = None
    payload: Any = None
    serialize_key: str | None = Field(default=None, max_length=200)
    secret_scope: str | None = Field(default=None, max_length=200)
    limits: LimitsIn | None = None
    overlap: Literal["skip", "buffer_one", "allow"] | None = None
    concurrency: int | None = Field(default=None, ge=1, le=100)
    allow_destructive: bool | None = None
    enabled: bool | None = None


class PreviewIn(_Strict):
    """The body of ``POST /v1/schedules/preview``."""

    cron: str | None = Field(default=None, max_length=200)
    timezone: str = Field(default="UTC", max_length=64)
    dst: DstIn | None = None
    interval_s: int | None = Field(default=None, ge=1, le=366 * 86400)
    at: datetime | None = None
    from_: datetime | None = Field(default=None, alias="from")
    count: int = Field(default=10, ge=1, le=100)

    model_config = ConfigDict(populate_by_name=True)  # merged with _Strict's (strict too)


class KeyIn(_Strict):
    """The body of ``POST /v1/keys``: a role, and a tenant (only the root key may name one)."""

    role: Literal["viewer", "operator", "admin"]
    tenant: str | None = Field(
        default=None, min_length=1, max_length=64, pattern=r"^[a-z0-9][a-z0-9_-]*$"
    )


class RotateSecretIn(_Strict):
    """The body of ``POST /v1/triggers/{id}/rotate-secret`` (optional: a provider-issued secret)."""

    secret: str | None = Field(default=None, min_length=8, max_length=512)
    grace_s: int = Field(default=86400, ge=0, le=7 * 86400)


M = TypeVar("M", bound=BaseModel)


def _field_path(loc: tuple) -> str:
    return ".".join("from" if p == "from_" else str(p) for p in loc)


def parse_model(model: type[M], body: Any) -> M:
    """Validate ``body`` against ``model``; the first problem becomes a 422 naming its field.

    ``body`` is parsed JSON (a dict). It is validated in pydantic's JSON mode, strictly:
    JSON's own types decide (``true`` is not ``1``, ``"5"`` is not ``5``), while an ISO-8601
    string is still an instant and an integer still a float. (Python-mode strict would
    refuse every datetime string, and lax mode takes ``true`` for ``1``.)
    """
    if not isinstance(body, dict):
        raise ValidationError("the body must be a JSON object", field=None)
    try:
        raw = json.dumps(body)
    except (TypeError, ValueError):
        raise ValidationError("the body must be a JSON object", field=None) from None
    try:
        parsed = model.model_validate_json(raw, strict=True)
    except PydanticValidationError as exc:
        first = exc.errors()[0]
        path = _field_path(tuple(first.get("loc", ())))
        kind = first.get("type", "")
        if kind == "extra_forbidden":
            message = f"unknown field {path!r}"
        else:
            message = f"{path}: {first.get('msg', 'invalid value')}"
        raise ValidationError(message, field=path or None) from None
    state = getattr(parsed, "state", None)
    if state is not None and len(json.dumps(state)) > MAX_STATE_BYTES:
        raise PayloadTooLarge(f"state is larger than {MAX_STATE_BYTES} bytes", field="state")
    payload = getattr(parsed, "payload", None)
    if payload is not None and len(json.dumps(payload)) > MAX_STATE_BYTES:
        raise PayloadTooLarge(f"payload is larger than {MAX_STATE_BYTES} bytes", field="payload")
    return parsed


def schedule_spec_from(schedule: ScheduleIn, *, anchor_at: datetime) -> ScheduleSpec:
    """The domain schedule for a validated ``schedule`` object."""
    dst = schedule.dst or DstIn()
    # Slots are stored in epoch milliseconds: anchor on a whole millisecond so the slots
    # computed now and those recomputed from the stored encoding are the same instants.
    anchor_at = anchor_at.replace(microsecond=anchor_at.microsecond // 1000 * 1000)
    return ScheduleSpec(
        cron=schedule.cron,
        timezone=schedule.timezone or "UTC",
        interval_s=schedule.interval_s,
        at=schedule.at,
        dst_skipped=dst.skipped,
        dst_repeated=dst.repeated,
        anchor_at=anchor_at if schedule.interval_s else None,
    )


def _ms(at: datetime | None) -> int | None:
    return None if at is None else int(round(at.timestamp() * 1000))


def _from_ms(ms: Any) -> datetime | None:
    if ms is None:
        return None
    return datetime.fromtimestamp(float(ms) / 1000, tz=UTC)


def encode_schedule(spec: ScheduleSpec) -> str:
    """A compact JSON encoding, small enough to project into the due index."""
    data = {
        "c": spec.cron,
        "tz": spec.timezone if spec.timezone != "UTC" else None,
        "i": spec.interval_s,
        "a": _ms(spec.at),
        "ds": spec.dst_skipped if spec.dst_skipped != "shift" else None,
        "dr": spec.dst_repeated if spec.dst_repeated != "once" else None,
        "an": _ms(spec.anchor_at),
    }
    return json.dumps({k: v for k, v in data.items() if v is not None}, separators=(",", ":"))


def decode_schedule(text: str) -> ScheduleSpec:
    """The inverse of ``encode_schedule``."""
    data = json.loads(text)
    return ScheduleSpec(
        cron=data.get("c"),
        timezone=data.get("tz") or "UTC",
        interval_s=data.get("i"),
        at=_from_ms(data.get("a")),
        dst_skipped=data.get("ds") or "shift",
        dst_repeated=data.get("dr") or "once",
        anchor_at=_from_ms(data.get("an")),
    )


def is_finite_number(value: Any) -> bool:
    """True for an int or a finite float (not a bool)."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and (not isinstance(value, float) or math.isfinite(value))
    )
