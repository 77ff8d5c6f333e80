"""The base of every answer model, and the field types several of them share."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Instant", "RunStatus", "Surface", "_Out"]

Instant = Annotated[str, Field(json_schema_extra={"format": "date-time"})]
RunStatus = Literal[
    "queued",
    "running",
    "succeeded",
    "failed",
    "skipped",
    "refused",
    "budget_exceeded",
    "lost",
    "missed",
]
Surface = Literal["schedule", "event", "manual", "backfill"]


class _Out(BaseModel):
    """Responses may grow fields: clients must ignore the ones they do not know."""

    model_config = ConfigDict(extra="allow")
