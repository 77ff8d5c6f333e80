"""The answer models of runs: one run, its page (payload, error detail), its logs, a start."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from chalicelib.openapi.answer_base import Instant, RunStatus, Surface, _Out

__all__ = ["RunOut", "RunErrorDetail", "RunDetailOut", "RunLogLine", "RunLogsOut", "RunQueued"]


class RunOut(_Out):
    id: str
    trigger_id: str
    surface: Surface
    status: RunStatus
    workflow: str | None = None
    scheduled_for: Instant | None
    fire_at: Instant | None = Field(default=None, description="A slot's start: slot + jitter")
    started_at: Instant | None
    finished_at: Instant | None
    lateness_ms: int | None
    error: str | None
    cost_usd: float
    event_id: str | None
    attempt: int
    output: Any = Field(default=None, description="What the workflow returned, clipped to 4 KB")
    duration_ms: int | None = Field(default=None, description="finished_at - started_at")
    rerun_of: str | None = Field(default=None, description="The run this one reruns")
    state_written: bool | None = Field(
        default=None, description="The run wrote the trigger's state (null while in flight)"
    )


class RunErrorDetail(_Out):
    """Why a run failed: for `lambda:` the function's error and stack, for `http:` the
    status and the first 1 KB of the answer."""

    type: str
    message: str
    traceback: str | None = Field(default=None, description="Clipped to 8 KB")
    status: int | None = Field(default=None, description="`http:` targets: the answer's status")


class RunDetailOut(RunOut):
    """One run, with what only its own page shows."""

    payload: Any = Field(default=None, description="What the run was given, clipped to 4 KB")
    payload_clipped: bool = False
    payload_source: Literal["run", "event", "trigger"] | None = Field(
        default=None,
        description="`run`: its own (a manual fire's body, a rerun's); `event`: its event's "
        "body; `trigger`: the trigger's payload as it is now",
    )
    error_detail: RunErrorDetail | None = None


class RunLogLine(_Out):
    at: Instant | None
    level: str
    message: str


class RunLogsOut(_Out):
    items: list[RunLogLine]
    source: str = Field(description="`local` (the stack's log) or `cloudwatch`")
    complete: bool = Field(default=True, description="False: the query was still running")
    query: str | None = Field(default=None, description="The Logs Insights query (AWS)")
    console_url: str | None = Field(default=None, description="The query in the AWS console")


class RunQueued(_Out):
    run_id: str
    queued: bool = Field(default=False, description="The trigger was busy: it waits its turn")
    rerun_of: str | None = Field(default=None, description="A rerun: the run it reruns")
