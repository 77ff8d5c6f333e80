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
import re
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic import ValidationError as PydanticValidationError

from chalicelib.domain.errors import PayloadTooLarge, ValidationError
from chalicelib.domain.schedule import (
    ScheduleSpec,
    canonical_timezone,
    is_pasted_expression,
    translate_pasted,
)

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
    "FireIn",
    "DisableIn",
    "SwitchManyIn",
    "BackfillIn",
    "parse_model",
    "problem_text",
    "schedule_spec_from",
    "encode_schedule",
    "decode_schedule",
    "MAX_STATE_BYTES",
    "MAX_JSON_DEPTH",
    "too_deep_error",
    "EVENT_SOURCES",
    "DELIVERED_SOURCES",
    "validate_source_fields",
    "secret_path_problem",
]

MAX_STATE_BYTES = 64 * 1024
# How deep a JSON value in a body may nest (payload, state, filters). Far more than any
# real document needs, and far less than the ~1,000 frames at which Python's json (and
# pydantic) would fail with a RecursionError instead of an answer.
MAX_JSON_DEPTH = 64
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

ShortStr = Annotated[str, Field(min_length=1, max_length=200)]

# A secret name or ``secret_scope``: '/'-separated segments of letters, digits, '_', '.'
# and '-'. A segment of dots only ('.', '..') is refused: the stores treat names as paths,
# and a scope of '..' would climb out of the tenant's prefix in IAM policy terms.
_SECRET_SEGMENT = re.compile(r"[A-Za-z0-9_.\-]+")


def secret_path_problem(text: str) -> str | None:
    """Why ``text`` is not a valid secret name or scope, or None if it is."""
    if not isinstance(text, str) or not text or len(text) > 200:
        return "must be 1 to 200 characters"
    for segment in text.split("/"):
        if not _SECRET_SEGMENT.fullmatch(segment):
            return (
                "must be letters, digits, '_', '.', '-' with single '/' separators "
                "(no leading, trailing or doubled '/')"
            )
        if set(segment) == {"."}:
            return "may not contain a '.' or '..' segment"
    return None


def _check_scope(value: str | None) -> str | None:
    if value is not None:
        problem = secret_path_problem(value)
        if problem is not None:
            raise ValueError(problem)
    return value


class _Strict(BaseModel):
    """A request model: no unknown fields, no NaN/Infinity, and strict JSON types."""

    model_config = ConfigDict(
        extra="forbid", allow_inf_nan=False, str_max_length=10_000, strict=True
    )


class DstIn(_Strict):
    skipped: Literal["shift", "skip"] = "shift"
    repeated: Literal["once", "both"] = "once"


def _in_utc(value: datetime | None, field: str) -> datetime | None:
    if value is not None and value.tzinfo is None:
        raise ValueError("must include a timezone offset or Z")
    try:
        return value.astimezone(UTC) if value is not None else None
    except OverflowError:  # e.g. 0001-01-01T00:00:00+01:00, which is in year 0 in UTC
        raise ValidationError("must be between years 1 and 9999 in UTC", field=field) from None


def _cronhook_form(model: ScheduleIn | PreviewIn, prefix: str) -> None:
    """Put a schedule in cronhook's own form, in place; a problem names ``prefix + field``.

    1. The timezone takes its IANA spelling ("utc" is "UTC"); an empty one is refused.
    2. An EventBridge Scheduler expression pasted as ``cron`` (``cron(...)``, ``rate(...)``,
       ``at(...)``) becomes the cron, ``interval_s`` or ``at`` it means: the trigger comes
       back in cronhook's form.
    3. An interval takes neither a timezone nor a DST policy: refused, not ignored.

    Fields are written through ``__dict__`` so that only a translated cadence changes what
    counts as sent (a PATCH merges the fields sent).
    """
    values = model.__dict__
    sent = model.__pydantic_fields_set__
    values["timezone"] = canonical_timezone(model.timezone, field=f"{prefix}timezone")
    if model.cron is not None and is_pasted_expression(model.cron):
        pasted = translate_pasted(model.cron, timezone=model.timezone, field=f"{prefix}cron")
        if model.interval_s is not None or model.at is not None:
            raise ValidationError(
                "give one of cron, interval_s or at, not an EventBridge expression and another",
                field=f"{prefix}cron",
            )
        values["cron"], values["interval_s"], values["at"] = (
            pasted.cron,
            pasted.interval_s,
            pasted.at,
        )
        if pasted.cron is None:
            sent.discard("cron")
            sent.add("interval_s" if pasted.interval_s is not None else "at")
    if model.interval_s is not None:
        if model.timezone != "UTC":
            raise ValidationError(
                "an interval counts seconds, not wall-clock time: leave timezone out",
                field=f"{prefix}timezone",
            )
        if model.dst is not None:
            raise ValidationError(
                "an interval has no DST policy (DST changes no interval): leave dst out",
                field=f"{prefix}dst",
            )


class ScheduleIn(_Strict):
    cron: str | None = Field(default=None, max_length=200)
    timezone: str = Field(default="UTC", max_length=64)
    interval_s: int | None = Field(default=None, ge=1, le=366 * 86400)
    at: datetime | None = None
    dst: DstIn | None = None

    @field_validator("at")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        return _in_utc(value, "schedule.at")

    @model_validator(mode="after")
    def _own_form(self) -> ScheduleIn:
        _cronhook_form(self, "schedule.")
        return self


class EventIn(_Strict):
    source: EventSource
    filter: dict[str, Any] | None = None
    secret: str | None = Field(default=None, min_length=8, max_length=512)
    max_attempts: int = Field(default=3, ge=1, le=10)
    dedupe_window_s: int = Field(default=7 * 86400, ge=60, le=30 * 86400)
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
    def _default_bus(self) -> EventIn:
        if self.source == "eventbridge" and self.bus is None:
            self.bus = "default"  # CONTRACT: bus defaults to the account's default bus
        return self


class EventPatch(_Strict):
    """``event`` in a PATCH: only the fields sent change (the source cannot; see triggers)."""

    source: EventSource | None = None
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


def _printable(value: str | None) -> str | None:
    # A NUL or another control character in a title breaks terminals, logs and CSV
    # exports downstream; a title is one line of text for people.
    if value is not None and any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ValueError("must not contain control characters (NUL, newline, tab...)")
    return value


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

    @field_validator("title")
    @classmethod
    def _title_printable(cls, value: str | None) -> str | None:
        return _printable(value)

    @field_validator("secret_scope")
    @classmethod
    def _scope(cls, value: str | None) -> str | None:
        return _check_scope(value)


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

    @field_validator("title")
    @classmethod
    def _title_printable(cls, value: str | None) -> str | None:
        return _printable(value)

    @field_validator("secret_scope")
    @classmethod
    def _scope(cls, value: str | None) -> str | None:
        return _check_scope(value)


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

    @field_validator("at")
    @classmethod
    def _aware_at(cls, value: datetime | None) -> datetime | None:
        return _in_utc(value, "at")

    @field_validator("from_")
    @classmethod
    def _aware_from(cls, value: datetime | None) -> datetime | None:
        return _in_utc(value, "from")

    @model_validator(mode="after")
    def _own_form(self) -> PreviewIn:
        _cronhook_form(self, "")
        return self


class KeyIn(_Strict):
    """The body of ``POST /v1/keys``: a role, and a tenant (only the root key may name one)."""

    role: Literal["viewer", "operator", "admin"]
    tenant: str | None = Field(
        default=None, min_length=1, max_length=64, pattern=r"^[a-z0-9][a-z0-9_-]*$"
    )


ROTATION_GRACE_S = 900


class RotateSecretIn(_Strict):
    """The body of ``POST /v1/triggers/{id}/rotate-secret`` (optional: a provider-issued secret)."""

    secret: str | None = Field(default=None, min_length=8, max_length=512)
    # How long the previous secret keeps verifying: an explicit choice (up to 7 days), with a
    # short default, because a rotation is often "it leaked" (send 0 to end it now).
    grace_s: int = Field(default=ROTATION_GRACE_S, ge=0, le=7 * 86400)


class FireIn(_Strict):
    """The optional body of ``POST /v1/triggers/{id}/fire``: this run's payload."""

    payload: Any = None


MAX_NOTE_CHARS = 500


class DisableIn(_Strict):
    """The optional body of ``POST /v1/triggers/{id}/disable`` (and ``/enable``)."""

    note: str | None = Field(default=None, max_length=MAX_NOTE_CHARS)

    @field_validator("note")
    @classmethod
    def _note_printable(cls, value: str | None) -> str | None:
        return _note_text(value)


def _note_text(value: str | None) -> str | None:
    # A note may span lines; other control characters (NUL...) have no business in it.
    if value is not None and any((ord(c) < 32 and c not in "\n\t") or ord(c) == 127 for c in value):
        raise ValueError("must not contain control characters other than newline and tab")
    # Surrounding blanks are not part of the note; a blank note is no note.
    return (value.strip() or None) if value is not None else None


class SwitchManyIn(_Strict):
    """The body of ``POST /v1/triggers/disable`` and ``/enable``: which triggers, and why."""

    tag: str | None = Field(default=None, min_length=1, max_length=64)
    workflow: str | None = Field(default=None, min_length=1, max_length=200)
    note: str | None = Field(default=None, max_length=MAX_NOTE_CHARS)

    @field_validator("note")
    @classmethod
    def _note_printable(cls, value: str | None) -> str | None:
        return _note_text(value)


class BackfillIn(_Strict):
    """The body of ``POST /v1/triggers/{id}/backfill``: a past window of slots."""

    from_: datetime = Field(alias="from")
    to: datetime
    dry_run: bool = False

    model_config = ConfigDict(populate_by_name=True)

    @field_validator("from_", "to")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            raise ValueError("must include a timezone offset or Z")
        return value.astimezone(UTC)


M = TypeVar("M", bound=BaseModel)


def _field_path(loc: tuple) -> str:
    return ".".join("from" if p == "from_" else str(p) for p in loc)


_TYPE_WORDS = {
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "int_from_float": "must be an integer",
    "int_parsing": "must be an integer",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "list_type": "must be a list",
    "missing": "is required",
    "finite_number": "must be a finite number",
    "datetime_type": "must be an ISO-8601 instant such as 2027-01-01T09:00:00Z",
    "datetime_parsing": "must be an ISO-8601 instant such as 2027-01-01T09:00:00Z",
    "datetime_from_date_parsing": "must be an ISO-8601 instant such as 2027-01-01T09:00:00Z",
    "json_invalid": "is not valid JSON",
}


def problem_text(error: Any) -> str:
    """One pydantic error in cronhook's words (pydantic's own phrasing never reaches a client)."""
    kind = error.get("type", "")
    ctx = error.get("ctx") or {}
    if kind in _TYPE_WORDS:
        return _TYPE_WORDS[kind]
    if kind == "string_too_short":
        least = int(ctx.get("min_length", 1))
        return "must not be empty" if least <= 1 else f"must be at least {least} characters"
    if kind == "string_too_long":
        return f"must be at most {ctx.get('max_length')} characters"
    if kind == "too_short":
        return f"must have at least {ctx.get('min_length')} items"
    if kind == "too_long":
        return f"must have at most {ctx.get('max_length')} items"
    bounds = {
        "greater_than_equal": ("at least", "ge"),
        "greater_than": ("more than", "gt"),
        "less_than_equal": ("at most", "le"),
        "less_than": ("less than", "lt"),
    }
    if kind in bounds:
        words, key = bounds[kind]
        return f"must be {words} {ctx.get(key)}"
    if kind in ("literal_error", "enum"):
        options = re.findall(r"'([^']*)'", str(ctx.get("expected", "")))
        if options:
            return "must be one of " + ", ".join(options)
    if kind == "string_pattern_mismatch":
        return f"must match {ctx.get('pattern')}"
    if kind == "value_error":
        return str(ctx.get("error") or error.get("msg", "is not valid"))
    text = str(error.get("msg") or "is not valid")
    return text[:1].lower() + text[1:]


def parse_model(model: type[M], body: Any) -> M:
    """Validate ``body`` against ``model``; the first problem becomes a 422 naming its field.

    ``body`` is parsed JSON (a dict). It is validated in pydantic's JSON mode, strictly:
    JSON's own types decide (``true`` is not ``1``, ``"5"`` is not ``5``), while an ISO-8601
    string is still an instant and an integer still a float. (Python-mode strict would
    refuse every datetime string, and lax mode takes ``true`` for ``1``.)
    """
    if not isinstance(body, dict):
        raise ValidationError("the body must be a JSON object", field=None)
    for name, value in body.items():
        if _depth_over(value, MAX_JSON_DEPTH):
            raise _nested_too_deep(str(name))
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
            message = f"{path}: {problem_text(first)}" if path else problem_text(first)
        raise ValidationError(message, field=path or None) from None
    state = getattr(parsed, "state", None)
    if state is not None and len(json.dumps(state)) > MAX_STATE_BYTES:
        raise PayloadTooLarge(f"state is larger than {MAX_STATE_BYTES} bytes", field="state")
    payload = getattr(parsed, "payload", None)
    if payload is not None and len(json.dumps(payload)) > MAX_STATE_BYTES:
        raise PayloadTooLarge(f"payload is larger than {MAX_STATE_BYTES} bytes", field="payload")
    return parsed


def _depth_over(value: Any, limit: int) -> bool:
    """True if `value` nests lists and objects more than `limit` deep (iteratively)."""
    stack = [(value, 1)]
    while stack:
        current, depth = stack.pop()
        if isinstance(current, dict | list):
            if depth > limit:
                return True
            children = current.values() if isinstance(current, dict) else current
            stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def _nested_too_deep(field: str | None) -> ValidationError:
    what = field or "the body"
    return ValidationError(f"{what} is nested more than {MAX_JSON_DEPTH} levels deep", field=field)


_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:]')


def too_deep_error(raw: bytes | str) -> ValidationError:
    """The 422 for a body too deep for ``json.loads`` (RecursionError), naming its field.

    The body cannot be parsed, so its text is scanned: the top-level key whose value
    passes ``MAX_JSON_DEPTH`` is the field at fault.
    """
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    depth, key, last_string = 0, None, None
    for token in _JSON_TOKEN.finditer(text):
        value = token.group()
        if value.startswith('"'):
            last_string = value
        elif value == ":":
            if depth == 1 and last_string is not None:
                key = json.loads(last_string)
        elif value in "{[":
            depth += 1
            if depth > MAX_JSON_DEPTH + 1:
                return _nested_too_deep(key if isinstance(key, str) else None)
        else:
            depth -= 1
    return _nested_too_deep(None)


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


def is_finite_number(value: Any) -> bool:
    """True for an int or a finite float (not a bool)."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and (not isinstance(value, float) or math.isfinite(value))
    )
