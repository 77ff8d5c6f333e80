"""The bodies of the trigger, key and switch endpoints (the schedule and event objects aside)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, ValidationInfo, field_validator, model_validator

from chalicelib.domain.errors import ValidationError
from chalicelib.domain.limits import MAX_NOTE_CHARS
from chalicelib.domain.spec.base import (
    ShortStr,
    Strict,
    check_scope,
    in_utc,
    note_text,
    printable,
)

# Resolved by pydantic from this module's names (the annotations are strings): imported
# here for the fields of TriggerIn and TriggerPatch, not only for the type checker.
from chalicelib.domain.spec.events import EventIn, EventPatch
from chalicelib.domain.spec.schedules import ScheduleIn

__all__ = [
    "LimitsIn",
    "TriggerIn",
    "TriggerPatch",
    "KeyIn",
    "FireIn",
    "DisableIn",
    "SwitchManyIn",
    "BackfillIn",
    "OutageIn",
    "SimulateIn",
]

_Tag = Annotated[str, Field(min_length=1, max_length=64)]


class LimitsIn(Strict):
    max_runs: int | None = Field(default=None, ge=1)
    expires_at: datetime | None = None
    max_usd: float | None = Field(default=None, ge=0, le=1_000_000)
    budget_period: Literal["day", "week", "month", "total"] = "month"
    max_failures: int = Field(default=5, ge=1, le=1000)

    @field_validator("expires_at")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        # in_utc: an offset that moves the instant out of years 1-9999 is a 422, not a 500.
        return in_utc(value, "limits.expires_at")


class TriggerIn(Strict):
    """The body of ``POST /v1/triggers``."""

    workflow: ShortStr
    title: str | None = Field(default=None, max_length=200)
    tags: list[_Tag] = Field(default_factory=list, max_length=50)
    schedule: ScheduleIn | None = None
    event: EventIn | None = None
    state: dict[str, Any] = Field(default_factory=dict)
    payload: Any = None
    backfill: Literal["from_now", "all"] = "from_now"
    serialize_key: str | None = Field(default=None, max_length=200)
    secret_scope: str | None = Field(default=None, max_length=200)
    limits: LimitsIn = Field(default_factory=LimitsIn)
    overlap: Literal["skip", "buffer_one", "buffer_all", "allow"] = "skip"
    concurrency: int = Field(default=1, ge=1, le=100)
    allow_destructive: bool = False
    history: Literal["full", "failures"] = "full"
    after_fire: Literal["disable", "delete"] = "disable"
    enabled: bool = True

    @field_validator("title")
    @classmethod
    def _title_printable(cls, value: str | None) -> str | None:
        return printable(value)

    @field_validator("secret_scope")
    @classmethod
    def _scope(cls, value: str | None) -> str | None:
        return check_scope(value)

    @model_validator(mode="after")
    def _after_fire_of_at(self) -> TriggerIn:
        if self.after_fire == "delete" and (self.schedule is None or self.schedule.at is None):
            raise ValidationError(
                "after_fire: delete is for a trigger with schedule.at (one fire)",
                field="after_fire",
            )
        return self


class TriggerPatch(Strict):
    """The body of ``PATCH /v1/triggers/{id}``: every field optional."""

    version: int | None = None
    workflow: ShortStr | None = None
    title: str | None = Field(default=None, max_length=200)
    tags: list[_Tag] | None = Field(default=None, max_length=50)
    schedule: ScheduleIn | None = None
    event: EventPatch | None = None
    state: dict[str, Any] | None = None
    payload: Any = None
    serialize_key: str | None = Field(default=None, max_length=200)
    secret_scope: str | None = Field(default=None, max_length=200)
    limits: LimitsIn | None = None
    overlap: Literal["skip", "buffer_one", "buffer_all", "allow"] | None = None
    concurrency: int | None = Field(default=None, ge=1, le=100)
    allow_destructive: bool | None = None
    history: Literal["full", "failures"] | None = None
    after_fire: Literal["disable", "delete"] | None = None
    enabled: bool | None = None

    @field_validator("title")
    @classmethod
    def _title_printable(cls, value: str | None) -> str | None:
        return printable(value)

    @field_validator("secret_scope")
    @classmethod
    def _scope(cls, value: str | None) -> str | None:
        return check_scope(value)


class KeyIn(Strict):
    """The body of ``POST /v1/keys``: a role, and a tenant (only the root key may name one)."""

    role: Literal["viewer", "operator", "admin"]
    tenant: str | None = Field(
        default=None, min_length=1, max_length=64, pattern=r"^[a-z0-9][a-z0-9_-]*$"
    )


class FireIn(Strict):
    """The optional body of ``POST /v1/triggers/{id}/fire``: this run's payload; with
    ``if_idle`` a busy trigger refuses the run (409) instead of queueing it."""

    payload: Any = None
    if_idle: bool = False


class DisableIn(Strict):
    """The optional body of ``POST /v1/triggers/{id}/disable`` (and ``/enable``)."""

    note: str | None = Field(default=None, max_length=MAX_NOTE_CHARS)

    @field_validator("note")
    @classmethod
    def _note_printable(cls, value: str | None) -> str | None:
        return note_text(value)


class SwitchManyIn(Strict):
    """The body of ``POST /v1/triggers/disable`` and ``/enable``: which triggers, and why."""

    tag: str | None = Field(default=None, min_length=1, max_length=64)
    workflow: str | None = Field(default=None, min_length=1, max_length=200)
    note: str | None = Field(default=None, max_length=MAX_NOTE_CHARS)

    @field_validator("note")
    @classmethod
    def _note_printable(cls, value: str | None) -> str | None:
        return note_text(value)


class OutageIn(Strict):
    """A stretch of time nothing runs, for ``POST /v1/schedules/simulate``."""

    from_: datetime = Field(alias="from")
    to: datetime

    model_config = ConfigDict(populate_by_name=True)

    @field_validator("from_", "to")
    @classmethod
    def _aware(cls, value: datetime, info: ValidationInfo) -> datetime:
        return in_utc(value, "from" if info.field_name == "from_" else "to") or value


class SimulateIn(Strict):
    """The body of ``POST /v1/schedules/simulate``: a trigger (a create body, or a stored
    one's id), a window of at most a year, outages, and how long a run takes."""

    trigger: dict[str, Any] | None = None
    trigger_id: str | None = Field(default=None, max_length=64)
    from_: datetime = Field(alias="from")
    to: datetime
    outages: list[OutageIn] = Field(default_factory=list, max_length=50)
    run_s: int = Field(default=30, ge=0, le=86400)

    model_config = ConfigDict(populate_by_name=True)

    @field_validator("from_", "to")
    @classmethod
    def _aware(cls, value: datetime, info: ValidationInfo) -> datetime:
        return in_utc(value, "from" if info.field_name == "from_" else "to") or value


class BackfillIn(Strict):
    """The body of ``POST /v1/triggers/{id}/backfill``: a past window of slots."""

    from_: datetime = Field(alias="from")
    to: datetime
    dry_run: bool = False

    model_config = ConfigDict(populate_by_name=True)

    @field_validator("from_")
    @classmethod
    def _aware_from(cls, value: datetime) -> datetime:
        return _required_utc(value, "from")

    @field_validator("to")
    @classmethod
    def _aware_to(cls, value: datetime) -> datetime:
        return _required_utc(value, "to")


def _required_utc(value: datetime, field: str) -> datetime:
    """``in_utc`` of a required instant (years 1-9999 in UTC, else a 422 naming ``field``)."""
    return in_utc(value, field) or value
