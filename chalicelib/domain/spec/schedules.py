"""A schedule as a client sends it (on a trigger, or to preview), and its domain form."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from chalicelib.domain.errors import ValidationError
from chalicelib.domain.schedule import (
    MAX_CRONS,
    MAX_JITTER_S,
    Calendar,
    ScheduleSpec,
    canonical_timezone,
    is_pasted_expression,
    translate_pasted,
)
from chalicelib.domain.spec.base import Strict, in_utc

__all__ = [
    "DstIn",
    "CalendarIn",
    "CatchupIn",
    "SkipIn",
    "ExtraIn",
    "ScheduleIn",
    "PreviewIn",
    "schedule_spec_from",
]

_Cron = Annotated[str, Field(max_length=200)]
_HolidayCode = Annotated[str, Field(min_length=2, max_length=16)]
_Weekday = Annotated[int, Field(ge=1, le=7)]


class DstIn(Strict):
    skipped: Literal["shift", "skip"] = "shift"
    repeated: Literal["once", "both"] = "once"


class CalendarIn(Strict):
    """``schedule.calendar``: public holidays, dates left out, business weekdays, the move."""

    holidays: _HolidayCode | list[_HolidayCode] | None = Field(default=None)
    exclude_dates: list[date] = Field(default_factory=list, max_length=100)
    business_days: list[_Weekday] = Field(default_factory=lambda: [1, 2, 3, 4, 5], min_length=1)
    on_holiday: Literal["skip", "next_business_day", "previous_business_day"] = "skip"

    @field_validator("holidays")
    @classmethod
    def _few_codes(cls, value: str | list[str] | None) -> str | list[str] | None:
        if isinstance(value, list) and not 1 <= len(value) <= 10:
            raise ValueError("must have 1 to 10 codes")
        return value

    @field_validator("business_days")
    @classmethod
    def _distinct(cls, value: list[int]) -> list[int]:
        if len(set(value)) != len(value):
            raise ValueError("must not repeat a weekday")
        return value

    def domain(self) -> Calendar:
        """The calendar the schedule evaluates (codes checked by ``validate_schedule``)."""
        codes = [self.holidays] if isinstance(self.holidays, str) else self.holidays or []
        return Calendar(
            holidays=tuple(codes),
            exclude_dates=frozenset(self.exclude_dates),
            business_days=frozenset(self.business_days),
            on_holiday=self.on_holiday,
        )


class CatchupIn(Strict):
    """``schedule.catchup``: what the slots missed while the trigger could not run do."""

    mode: Literal["latest", "all", "none"] = "latest"
    window_s: int = Field(default=86400, ge=60, le=366 * 86400)


class SkipIn(Strict):
    """One slot not to run, and why (``POST /v1/triggers/{id}/skip``)."""

    slot: datetime
    reason: str = Field(default="", max_length=200)

    @field_validator("slot")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        return in_utc(value, "slot") or value


class ExtraIn(Strict):
    """One extra run at an instant (``POST /v1/triggers/{id}/extra``)."""

    at: datetime
    payload: Any = None

    @field_validator("at")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        return in_utc(value, "at") or value


def _pasted_crons(crons: list[str], prefix: str, timezone: str) -> list[str]:
    """A list of crons in cronhook's form: an EventBridge ``cron(...)`` becomes five fields."""
    if not 1 <= len(crons) <= MAX_CRONS:
        raise ValidationError(f"must have 1 to {MAX_CRONS} crons", field=f"{prefix}cron")
    out = []
    for index, text in enumerate(crons):
        if not is_pasted_expression(text):
            out.append(text)
            continue
        # In a list, a problem names the item (``schedule.cron.1``).
        where = f"{prefix}cron.{index}" if len(crons) > 1 else f"{prefix}cron"
        pasted = translate_pasted(text, timezone=timezone, field=where)
        if pasted.cron is None:
            raise ValidationError(
                "a list of crons takes crons only (a rate() or at() is a trigger of its own)",
                field=where,
            )
        out.append(pasted.cron)
    return out


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
    if isinstance(model.cron, list):
        values["cron"] = _pasted_crons(model.cron, prefix, model.timezone)
    elif model.cron is not None and is_pasted_expression(model.cron):
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


class ScheduleIn(Strict):
    cron: _Cron | list[_Cron] | None = None
    timezone: str = Field(default="UTC", max_length=64)
    interval_s: int | None = Field(default=None, ge=1, le=366 * 86400)
    at: datetime | None = None
    dst: DstIn | None = None
    business_day: int | None = None
    time: str | None = Field(default=None, max_length=5)
    calendar: CalendarIn | None = None
    jitter_s: int | None = Field(default=None, ge=0, le=MAX_JITTER_S)
    catchup: CatchupIn | None = None
    skips: list[SkipIn] | None = Field(default=None, max_length=50)
    extras: list[ExtraIn] | None = Field(default=None, max_length=50)

    @field_validator("at")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        return in_utc(value, "schedule.at")

    @model_validator(mode="after")
    def _own_form(self) -> ScheduleIn:
        _cronhook_form(self, "schedule.")
        return self


class PreviewIn(Strict):
    """The body of ``POST /v1/schedules/preview``."""

    cron: _Cron | list[_Cron] | None = None
    timezone: str = Field(default="UTC", max_length=64)
    dst: DstIn | None = None
    interval_s: int | None = Field(default=None, ge=1, le=366 * 86400)
    at: datetime | None = None
    business_day: int | None = None
    time: str | None = Field(default=None, max_length=5)
    calendar: CalendarIn | None = None
    jitter_s: int | None = Field(default=None, ge=0, le=MAX_JITTER_S)
    from_: datetime | None = Field(default=None, alias="from")
    count: int = Field(default=10, ge=1, le=100)

    model_config = ConfigDict(populate_by_name=True)  # merged with Strict's (strict too)

    @field_validator("at")
    @classmethod
    def _aware_at(cls, value: datetime | None) -> datetime | None:
        return in_utc(value, "at")

    @field_validator("from_")
    @classmethod
    def _aware_from(cls, value: datetime | None) -> datetime | None:
        return in_utc(value, "from")

    @model_validator(mode="after")
    def _own_form(self) -> PreviewIn:
        _cronhook_form(self, "")
        return self


def schedule_spec_from(schedule: ScheduleIn, *, anchor_at: datetime) -> ScheduleSpec:
    """The domain schedule for a validated ``schedule`` object."""
    dst = schedule.dst or DstIn()
    crons = schedule.cron if isinstance(schedule.cron, list) else [schedule.cron]
    # Slots are stored in epoch milliseconds: anchor on a whole millisecond so the slots
    # computed now and those recomputed from the stored encoding are the same instants.
    anchor_at = anchor_at.replace(microsecond=anchor_at.microsecond // 1000 * 1000)
    return ScheduleSpec(
        cron=crons[0],
        also=tuple(c for c in crons[1:] if c is not None),
        timezone=schedule.timezone or "UTC",
        interval_s=schedule.interval_s,
        at=schedule.at,
        dst_skipped=dst.skipped,
        dst_repeated=dst.repeated,
        anchor_at=anchor_at if schedule.interval_s else None,
        calendar=schedule.calendar.domain() if schedule.calendar is not None else None,
        business_day=schedule.business_day,
        time=schedule.time,
        jitter_s=schedule.jitter_s or 0,
        catchup_mode=schedule.catchup.mode if schedule.catchup else "latest",
        catchup_window_s=schedule.catchup.window_s if schedule.catchup else 86400,
        skips=frozenset(skip.slot for skip in schedule.skips or ()),
        extras=tuple(sorted({extra.at for extra in schedule.extras or ()})),
    )
