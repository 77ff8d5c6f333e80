"""The answer models of ``/v1/alerts`` (found by name through ``models._answer_models``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from chalicelib.openapi.models import Instant, _Out

__all__ = [
    "AlertOut",
    "AlertCreated",
    "AlertList",
    "AlertTestQueued",
    "NotificationOut",
    "NotificationPage",
]


class AlertOut(_Out):
    """An alert policy as the API shows it (a Slack URL and the signing secret never)."""

    id: str
    name: str
    match: dict[str, list[str]]
    on: list[Literal["failed", "disabled", "recovered", "late", "no_event", "budget"]]
    failures_in_a_row: int
    late_after_s: int
    no_event_for_s: int
    budget_percent: int
    quiet_s: int
    channels: list[dict[str, Any]] = Field(
        description="email `{to}`, slack `{host}` (the URL is sealed), webhook `{url}` (its "
        "query values shown as `[masked]`), sns `{topic_arn}`"
    )
    has_signing_secret: bool
    created_at: Instant | None
    updated_at: Instant | None
    created_by: str | None


class AlertCreated(AlertOut):
    signing_secret: str | None = Field(
        default=None,
        description="Webhook channels' Standard Webhooks secret: shown only in this answer",
    )


class AlertList(_Out):
    items: list[AlertOut]
    next_cursor: str | None


class AlertTestQueued(_Out):
    queued: bool
    channels: int


class NotificationOut(_Out):
    """One notification of one transition on one channel (kept 30 days)."""

    id: str | None
    at: Instant | None
    kind: str | None = Field(
        description="failed, disabled, recovered, late, no_event, budget, test"
    )
    trigger_id: str | None
    run_id: str | None
    channel: str | None = Field(description="`<type>#<position in the policy>`")
    outcome: Literal["pending", "sent", "failed", "suppressed"] | None
    error: str | None


class NotificationPage(_Out):
    items: list[NotificationOut]
    next_cursor: str | None
