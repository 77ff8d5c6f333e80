"""What a client may send for a trigger, validated; and the compact schedule encoding.

The pydantic models here are the single source for request validation and for the
OpenAPI document (which finds a request model by name on this package). Every problem
becomes a ``ValidationError`` naming the field.

Validation is strict about JSON types (``parse_model`` validates the body as JSON, in
pydantic's strict mode): a boolean is never a number and a number never a boolean, a
string is never a number and a number never a string. The only conversions left are
those JSON itself needs: an integer is accepted where a number (float) is expected
(``"max_usd": 5``), and instants are ISO-8601 strings parsed into datetimes.

- ``base``: the strict base model and the field checks reused;
- ``schedules``: ``ScheduleIn``, ``PreviewIn`` and their domain form;
- ``events``: ``EventIn``, ``EventPatch``, ``RotateSecretIn``;
- ``triggers``: the trigger, key, fire, switch and backfill bodies;
- ``alerts``: the alert policy body and ``parse_alert``;
- ``parse``: ``parse_model`` and cronhook's words for pydantic's errors.

The stored-schedule codec (``domain.codec``), the limits and name checks
(``domain.limits``) and the list of sources (``domain.event_sources``) import no pydantic:
the fire path imports them directly. They are named here too, for the API's callers.
Submodules never import this package.
"""

from chalicelib.domain.codec import decode_schedule, encode_schedule
from chalicelib.domain.event_sources import DELIVERED_SOURCES, EVENT_SOURCES
from chalicelib.domain.limits import (
    MAX_JSON_DEPTH,
    MAX_NOTE_CHARS,
    MAX_STATE_BYTES,
    secret_path_problem,
    too_deep_error,
)
from chalicelib.domain.spec.alerts import (
    AlertIn,
    AlertPatch,
    parse_alert,
    parse_alert_patch,
)
from chalicelib.domain.spec.events import (
    ROTATION_GRACE_S,
    EventIn,
    EventPatch,
    EventSource,
    RotateSecretIn,
    validate_source_fields,
)
from chalicelib.domain.spec.keys import TriggerByKeyIn
from chalicelib.domain.spec.parse import parse_model, problem_text
from chalicelib.domain.spec.schedules import (
    CalendarIn,
    CatchupIn,
    DstIn,
    ExtraIn,
    PreviewIn,
    ScheduleIn,
    SkipIn,
    schedule_spec_from,
)
from chalicelib.domain.spec.triggers import (
    BackfillIn,
    DisableIn,
    FireIn,
    KeyIn,
    LimitsIn,
    OutageIn,
    SimulateIn,
    SwitchManyIn,
    TriggerIn,
    TriggerPatch,
)

__all__ = [
    "DstIn",
    "CalendarIn",
    "CatchupIn",
    "SkipIn",
    "ExtraIn",
    "ScheduleIn",
    "EventIn",
    "EventPatch",
    "EventSource",
    "LimitsIn",
    "TriggerIn",
    "TriggerPatch",
    "TriggerByKeyIn",
    "PreviewIn",
    "KeyIn",
    "RotateSecretIn",
    "FireIn",
    "DisableIn",
    "SwitchManyIn",
    "BackfillIn",
    "OutageIn",
    "SimulateIn",
    "parse_model",
    "problem_text",
    "AlertIn",
    "AlertPatch",
    "parse_alert",
    "parse_alert_patch",
    "schedule_spec_from",
    "encode_schedule",
    "decode_schedule",
    "MAX_STATE_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_NOTE_CHARS",
    "ROTATION_GRACE_S",
    "too_deep_error",
    "EVENT_SOURCES",
    "DELIVERED_SOURCES",
    "validate_source_fields",
    "secret_path_problem",
]
