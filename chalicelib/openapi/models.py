"""The answer models of the REST API: what each route's JSON answer is documented as.

Request bodies are the pydantic models that validate requests (``domain/spec.py``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from chalicelib.domain import spec
from chalicelib.openapi.answer_base import Instant, _Out
from chalicelib.openapi.run_models import (
    RunDetailOut,
    RunErrorDetail,
    RunLogLine,
    RunLogsOut,
    RunOut,
    RunQueued,
)

API_VERSION = "1.0.0"
# The names the answer models are found by (``_answer_models`` reads this module's globals).
_RUN_MODELS = (RunDetailOut, RunErrorDetail, RunLogLine, RunLogsOut, RunOut, RunQueued)


class ErrorDetail(_Out):
    code: str = Field(description="Machine-readable: bad_request, unauthorized, not_found...")
    message: str
    field: str | None = Field(default=None, description="Dotted path of the field at fault")


class ErrorOut(_Out):
    """Every 4xx and 5xx answer."""

    error: ErrorDetail


class LastRunOut(_Out):
    id: str | None
    status: str | None
    finished_at: Instant | None
    error: str | None


class DriftOut(_Out):
    at: Instant | None
    by: str | None
    fields: list[str] | None


class TriggerOut(_Out):
    """A trigger as the API shows it (never a secret)."""

    id: str
    workflow: str
    title: str | None
    display_name: str
    tags: list[str]
    kind: Literal["cron", "business_day", "interval", "at", "event"]
    cadence: str = Field(description='Human-readable, e.g. "Every 2 hours"')
    schedule: dict[str, Any] | None
    event: dict[str, Any] | None
    payload: Any = None
    backfill: str
    serialize_key: str | None
    secret_scope: str | None
    limits: dict[str, Any] | None
    overlap: Literal["skip", "buffer_one", "buffer_all", "allow"]
    concurrency: int
    allow_destructive: bool
    history: Literal["full", "failures"] = Field(
        description="Which runs get a run record: all (`full`), or all but the scheduled "
        "and event runs that succeeded (`failures`, two write units less per fire)",
    )
    after_fire: Literal["disable", "delete"] | None = Field(
        default=None, description="An `at` trigger after its run: disabled, or deleted"
    )
    enabled: bool
    status: Literal["active", "disabled"]
    disabled_reason: str | None = Field(
        description="null, manual, failures, expired, max_runs, budget, refused, creator_gone, "
        "workflow_missing, source_gone"
    )
    disabled_note: str | None = Field(default=None, description="Why it was paused (a person's)")
    disabled_by: str | None = Field(default=None, description="The key that paused it")
    disabled_at: Instant | None = None
    budget: dict[str, Any] | None = Field(
        default=None,
        description="With `limits.max_usd`: `{max_usd, budget_period, period, spent_usd, "
        "reserved_usd}` of the newest budget period",
    )
    next_fire_at: Instant | None
    consecutive_failures: int
    run_count: int
    last_run: LastRunOut | None
    webhook_url: str | None = None
    created_by: str | None
    created_at: Instant | None
    updated_at: Instant | None
    version: int = Field(description="Send it back in a PATCH for optimistic locking")
    key: str | None = Field(default=None, description="Its stable name (triggers as code)")
    managed_by: str | None = Field(
        default=None, description='The tool that manages it ("apply", "cloudformation"...)'
    )
    drift: DriftOut | None = Field(
        default=None, description="An edit made outside its tool since the tool last applied it"
    )
    warnings: list[Any]
    state: dict[str, Any] | None = Field(default=None, description="On single-trigger answers only")


class WebhookOnce(_Out):
    url: str | None = None
    secret: str | None = Field(default=None, description="Shown only in this answer")


class TriggerCreated(TriggerOut):
    """The trigger, plus (event triggers) its webhook URL and secret, shown once."""

    webhook: WebhookOnce | None = None
    outbound_secret: str | None = Field(
        default=None,
        description="An `http:` target's signing secret (Standard Webhooks): shown only here",
    )


class FieldChange(_Out):
    from_: Any = Field(default=None, alias="from")
    to: Any = None


class TriggerPut(TriggerCreated):
    """A PUT by key: the trigger, whether anything changed, and each changed field."""

    changed: bool
    changes: dict[str, FieldChange] | None = Field(
        default=None, description="Each changed field by dotted path: `{from, to}` (updates)"
    )


class TriggerPlan(_Out):
    """What a PUT by key would do, nothing written (`cronhook diff`)."""

    key: str
    action: Literal["create", "update", "none"]
    changes: dict[str, FieldChange] = Field(description="Each changed field: `{from, to}`")
    trigger: TriggerOut | None = Field(description="The trigger as it is now (none: created)")


class TriggerPage(_Out):
    items: list[TriggerOut]
    next_cursor: str | None


class RunPage(_Out):
    items: list[RunOut]
    next_cursor: str | None


class RunStarted(_Out):
    run_id: str


class ReplayStarted(_Out):
    event_id: str
    run_id: str


class SecretOut(_Out):
    secret: str = Field(description="Shown only in this answer")
    previous_valid_until: Instant | None = Field(
        default=None, description="Until when the previous secret still verifies"
    )
    previous_secrets_valid_until: list[Instant] = Field(
        default_factory=list,
        description="Every older secret that still verifies, newest first, and until when",
    )


class EventOut(_Out):
    """A received webhook (never its body here; the run gets it)."""

    id: str
    trigger_id: str
    status: str = Field(
        description="pending, running, succeeded, failed, skipped, refused, budget_exceeded, "
        "throttled (beyond event.rate_limit: kept, not run), batched (in a window's run)"
    )
    run_id: str | None
    attempt: int
    source: str | None
    event_type: str | None
    dedupe_key: str | None
    received_at: Instant | None
    retry_at: Instant | None
    finished_at: Instant | None
    body_size: int
    headers: dict[str, Any] = Field(description="Clipped, without credentials")


class EventPage(_Out):
    items: list[EventOut]
    next_cursor: str | None


class HookAnswer(_Out):
    event_id: str | None = None
    run_id: str | None = None
    duplicate: bool | None = Field(default=None, description="Seen before: the original ids")
    ignored: str | None = Field(default=None, description="filter, or source_gone")
    throttled: bool | None = Field(
        default=None, description="Stored beyond event.rate_limit: kept, not run (replayable)"
    )
    challenge: str | None = Field(default=None, description="Slack's url_verification")


class ChallengeAnswer(_Out):
    """LinkedIn's endpoint validation: the code, and its HMAC-SHA256 under the client secret."""

    challengeCode: str  # noqa: N815 (LinkedIn's own field names)
    challengeResponse: str  # noqa: N815


class SkippedOut(_Out):
    id: str
    reason: str


class SwitchedOut(_Out):
    changed: int
    ids: list[str]
    skipped: list[SkippedOut] = Field(default_factory=list)


class BackfillPlan(_Out):
    """A dry run: what a backfill of the window would run."""

    slots: int
    first: Instant | None
    last: Instant | None
    estimated_usd: float = Field(description="Mean cost of recent runs times `slots`")
    estimate_from_runs: int = Field(description="How many recent runs the estimate uses")
    already_ran: int = Field(description="Slots in the window that ran already (not counted)")


class BackfillStarted(_Out):
    slots: int
    run_ids: list[str] = Field(description="In the order they run")


class WorkflowOut(_Out):
    name: str
    description: str | None
    state_schema: dict[str, Any] | None


class WorkflowPage(_Out):
    items: list[WorkflowOut]
    next_cursor: str | None


class DeletedOut(_Out):
    deleted: int


class AuditOut(_Out):
    id: str
    at: Instant
    actor: str = Field(description="Key id, root, or system")
    action: str = Field(
        description="create, update, delete, enable, disable, fire, rotate, replay, "
        "create_key, delete_key"
    )
    trigger_id: str | None
    detail: dict[str, Any] = Field(description="For update: the field diff; never a secret")


class AuditPage(_Out):
    items: list[AuditOut]
    next_cursor: str | None


class KeyOut(_Out):
    id: str
    tenant: str
    role: Literal["viewer", "operator", "admin"]
    created_at: Instant | None
    created_by: str | None


class KeyCreated(KeyOut):
    key: str = Field(description="The API key itself: shown only in this answer")


class KeyPage(_Out):
    items: list[KeyOut]
    next_cursor: str | None


class HealthOut(_Out):
    ok: bool


class DeliveryOut(_Out):
    """One webhook delivery to a known token, accepted or rejected (kept 7 days)."""

    id: str
    received_at: Instant
    outcome: Literal[
        "accepted", "duplicate", "filtered", "invalid_signature", "stale", "too_large", "throttled"
    ]
    detail: str | None = Field(default=None, description="The finer cause of a rejection")
    status: int | None = Field(default=None, description="The HTTP status answered")
    event_id: str | None
    run_id: str | None = Field(
        default=None,
        description="The run that took the event (a debounce or batch window's run for each "
        "of its events); null for a delivery that stored no event to run",
    )
    size: int = Field(description="Body size in bytes")
    headers: dict[str, str] = Field(description="Request headers, credentials left out")


class DeliveryPage(_Out):
    items: list[DeliveryOut]
    next_cursor: str | None


class HealthReport(_Out):
    """Is the scheduler ticking, how full are the queues, how late are the fires."""

    caller: dict[str, str] = Field(description="The key's `tenant` and `role`")
    last_tick_at: Instant | None = Field(description="Start of the last heartbeat tick that ended")
    heartbeat_s: int
    stale: bool = Field(description="No tick for more than two heartbeat periods")
    queue_depth: int | None = Field(
        description="Fire messages waiting, delayed or running, stack-wide: "
        "the root key only (null for every other key)"
    )
    dlq_depth: int | None = Field(
        description="Messages in the dead-letter queue, stack-wide: the root key only"
    )
    lateness_p99_ms: int | None = Field(description="Scheduled runs of the last hour, p99")
    fires_last_hour: int = Field(description="The tenant's runs recorded in the last hour")
    fires_capped: bool = Field(description="fires_last_hour stopped counting at 5,000")


def _answer_models() -> dict[str, type[BaseModel]]:
    """Every answer model by name: the ``_Out`` subclasses of this module and of the
    modules beside it (``alert_models``), however deep."""
    found: dict[str, type[BaseModel]] = {}
    pending = list(_Out.__subclasses__())
    while pending:
        model = pending.pop()
        found[model.__name__] = model
        pending.extend(model.__subclasses__())
    return found


def _model(name: str) -> type[BaseModel]:
    """A declared model by name: an answer model here, or a request model in ``spec``."""
    found = _answer_models().get(name) or getattr(spec, name, None)
    if not (isinstance(found, type) and issubclass(found, BaseModel)):
        raise LookupError(f"a route declares an unknown model {name!r}")
    return found
