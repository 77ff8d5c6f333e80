"""When a trigger fires: cron, fixed interval, or one instant.

This package alone knows cron. It matches wall times itself (``wall.next_wall``: the
Vixie day rule and cronsim's extensions, which croniter lacks) and imports only
``cron_descriptor``, for words, and ``holidays``, for public holidays. Every instant in and out is aware UTC and the time is
always an argument, never read here. A cron is evaluated on the wall clock of its IANA
timezone with the DST policy of the reference cron (cronie / Debian); see
``fires._next_cron_fire``.

- ``model``: ``ScheduleSpec`` and ``validate_schedule``;
- ``calendars``: holidays (the ``holidays`` package), excluded dates, business days;
- ``cadence``: a list of crons as one, a calendar over them, the Nth business day;
- ``cron``: the five-field syntax, parsed into a ``wall.Cron``;
- ``wall``: which wall times a cron matches;
- ``zones``: IANA names and wall times;
- ``dst``: what a wall time becomes around a DST change (``DstMark``);
- ``fires``: the next fire after an instant; ``previews``: many fires at once;
- ``jitter``: a slot's stable delay (``schedule.jitter_s``) and its ``fire_at``;
- ``eventbridge``: EventBridge Scheduler expressions pasted whole;
- ``words``: the cadence in words.

Everything other modules use is named here; the submodules never import this package.
"""

from chalicelib.domain.schedule.cadence import CalendarMark, Step
from chalicelib.domain.schedule.calendars import Calendar, check_holiday_code
from chalicelib.domain.schedule.dst import DstMark
from chalicelib.domain.schedule.eventbridge import (
    PastedSchedule,
    is_pasted_expression,
    translate_pasted,
)
from chalicelib.domain.schedule.fires import clamp_next_fire, next_fire_after, next_step
from chalicelib.domain.schedule.jitter import fire_at_ms, jitter_ms
from chalicelib.domain.schedule.model import (
    MAX_CRONS,
    MAX_INTERVAL_S,
    MAX_JITTER_S,
    ScheduleSpec,
    validate_schedule,
)
from chalicelib.domain.schedule.previews import (
    MAX_PREVIEW,
    fires_between,
    preview,
    preview_marked,
    preview_steps,
    slots_diff,
)
from chalicelib.domain.schedule.words import describe
from chalicelib.domain.schedule.zones import canonical_timezone

__all__ = [
    "ScheduleSpec",
    "Calendar",
    "CalendarMark",
    "Step",
    "MAX_CRONS",
    "MAX_JITTER_S",
    "check_holiday_code",
    "next_step",
    "fire_at_ms",
    "jitter_ms",
    "DstMark",
    "PastedSchedule",
    "MAX_INTERVAL_S",
    "MAX_PREVIEW",
    "canonical_timezone",
    "is_pasted_expression",
    "translate_pasted",
    "validate_schedule",
    "next_fire_after",
    "preview",
    "preview_marked",
    "preview_steps",
    "slots_diff",
    "fires_between",
    "describe",
    "clamp_next_fire",
]
