"""The answer models of time: previews, an edit's dry run, the simulator (found by name
through ``models._answer_models``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from chalicelib.openapi.answer_base import Instant, _Out
from chalicelib.openapi.models import TriggerOut

__all__ = [
    "SlotsDiffOut",
    "TriggerEditOut",
    "DstMarkOut",
    "CalendarMarkOut",
    "PreviewOut",
    "SimulatedSlotOut",
    "SimulationOut",
]


class SlotsDiffOut(_Out):
    added: list[Instant]
    removed: list[Instant]
    added_count: int | None = None
    removed_count: int | None = None
    days: int
    truncated: bool | None = Field(default=None, description="More slots than listed")


class TriggerEditOut(TriggerOut):
    """A trigger after ``PATCH``; with ``?dry_run=true``, as it would be, and ``slots_diff``."""

    dry_run: bool | None = Field(default=None, description="PATCH ?dry_run=true: nothing stored")
    slots_diff: SlotsDiffOut | None = Field(
        default=None,
        description="PATCH ?dry_run=true: the slots the edit adds and removes over 30 days",
    )


class DstMarkOut(_Out):
    """A fire, or a missing fire, that a DST transition decided, and the policy that did."""

    at: Instant = Field(description="The fire; for a skipped one, the instant the clock jumped")
    change: Literal["shifted", "repeated", "skipped"]
    policy: Literal["shift", "skip", "once", "both"] = Field(
        description="dst.skipped or dst.repeated for a fixed-time cron; a wildcard cron "
        "follows the wall clock (skip, both)"
    )


class CalendarMarkOut(_Out):
    """A slot a calendar removed or moved, or a one-off exception (skipped, extra)."""

    at: Instant = Field(description="The slot as the cron gives it")
    change: Literal["holiday", "excluded", "moved", "skipped", "extra"]
    name: str | None = Field(description="A holiday's name, a skip's reason, or null")
    moved_to: Instant | None = Field(default=None, description="Where a moved slot fires")


class PreviewOut(_Out):
    fires: list[Instant]
    dst: list[DstMarkOut] = Field(
        default_factory=list, description="One entry per fire (or missing fire) DST decided"
    )
    calendar: list[CalendarMarkOut] = Field(
        default_factory=list,
        description="One entry per slot a calendar removed or moved (schedule.calendar)",
    )
    cadence: str | None = None
    status: str | None = Field(
        default=None, description="`disabled`: the trigger is paused and fires nothing"
    )
    reason: str | None = Field(default=None, description="Why it is disabled")


class SimulatedSlotOut(_Out):
    slot: Instant
    outcome: Literal["run", "skipped", "missed", "moved", "holiday", "extra"]
    fire_at: Instant | None = Field(description="Its start (slot + jitter); moved: where to")
    reason: str | None


class SimulationOut(_Out):
    slots: list[SimulatedSlotOut]
    runs: int
    estimated_usd: float
    truncated: bool = Field(description="More than 20,000 slots: the list stops there")
