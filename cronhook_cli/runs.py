"""What happened: ``runs``, ``events``, ``replay``, ``audit`` and ``workflows``."""

from __future__ import annotations

import json
from typing import Any

import click
from rich.text import Text

from chalicelib.domain.runs import RUN_STATUSES, RUN_SURFACES
from cronhook_cli.context import Decorator, client_of, command, id_path, trigger_path, usage
from cronhook_cli.output import (
    WIDE_COLUMNS,
    Column,
    at,
    cell,
    emit,
    emit_page,
    field,
    output_format,
    pairs,
    print_list,
    say,
    status,
    stderr,
    stdout,
)

__all__ = [
    "DEFAULT_RUNS_LIMIT",
    "RUN_STATUSES",
    "RUN_SURFACES",
    "list_audit",
    "list_events",
    "list_runs",
    "list_workflows",
    "replay",
]

DEFAULT_RUNS_LIMIT = 20
# Below this width the runs list drops its SURFACE column.
SURFACE_COLUMNS = 100


def _limit(default: int, help_text: str) -> Decorator:
    return click.option(
        "--limit", type=click.IntRange(min=1), default=default, show_default=True, help=help_text
    )


def _first_line(text: Any) -> str | None:
    if not text or not str(text).strip():
        return None
    return str(text).splitlines()[0][:80]


def _status(row: dict) -> Text:
    return status(row.get("status"))


def _detail(entry: dict) -> Text:
    detail = entry.get("detail") or {}
    return cell(json.dumps(detail, ensure_ascii=False) if detail else None)


_RUN_COLUMNS = (
    Column("ID", field("id"), whole=True),
    Column("TRIGGER", field("trigger_id"), whole=True, min_columns=WIDE_COLUMNS),
    Column("SURFACE", field("surface"), min_columns=SURFACE_COLUMNS),
    Column("STATUS", _status),
    Column("SCHEDULED FOR", at("scheduled_for"), whole=True),
    Column("LATENESS MS", field("lateness_ms"), justify="right", min_columns=WIDE_COLUMNS),
    Column("ERROR", lambda run: cell(_first_line(run.get("error"))), min_columns=WIDE_COLUMNS),
)
_RUN_FIELDS = (
    ("id", field("id")),
    ("trigger", field("trigger_id")),
    ("workflow", field("workflow")),
    ("surface", field("surface")),
    ("status", _status),
    ("scheduled for", at("scheduled_for")),
    ("started", at("started_at")),
    ("finished", at("finished_at")),
    ("lateness ms", field("lateness_ms")),
    ("attempt", field("attempt")),
    ("cost usd", field("cost_usd")),
)
_EVENT_COLUMNS = (
    Column("ID", field("id"), whole=True),
    Column("STATUS", _status),
    Column("RECEIVED", at("received_at"), whole=True),
    Column("TRY", field("attempt"), justify="right"),
    Column("TYPE", field("event_type"), min_columns=WIDE_COLUMNS),
    Column("RUN", field("run_id"), whole=True, min_columns=WIDE_COLUMNS),
)
_AUDIT_COLUMNS = (
    Column("AT", at("at"), whole=True),
    Column("ACTOR", field("actor"), whole=True),
    Column("ACTION", field("action")),
    Column("TRIGGER", field("trigger_id"), whole=True),
    Column("DETAIL", _detail, min_columns=WIDE_COLUMNS),
)
_WORKFLOW_COLUMNS = (
    Column("NAME", field("name"), whole=True),
    Column("DESCRIPTION", field("description")),
    Column("STATE SCHEMA", lambda flow: cell("yes" if flow.get("state_schema") else None)),
)


def print_runs(runs: list[dict]) -> None:
    """The runs list: surface from 100 columns; trigger, lateness and error when wide."""
    print_list(runs, "No runs.", _RUN_COLUMNS)


def print_run(run: dict) -> None:
    """One run as name/value pairs, then its error's traceback as it was written."""
    rows = [(name, value(run)) for name, value in _RUN_FIELDS]
    if run.get("duration_ms") is not None:
        rows.append(("duration ms", cell(run.get("duration_ms"))))
    if run.get("rerun_of"):
        rows.append(("rerun of", cell(run.get("rerun_of"))))
    if run.get("event_id"):
        rows.append(("event", cell(run.get("event_id"))))
    if run.get("error"):
        rows.append(("error", cell(run.get("error"))))
    if run.get("payload") is not None:
        rows.append(("payload", cell(json.dumps(run.get("payload"), ensure_ascii=False))))
    if run.get("output") is not None:
        rows.append(("output", cell(json.dumps(run.get("output"), ensure_ascii=False))))
    pairs(rows)
    trace = (run.get("error_detail") or {}).get("traceback")
    if trace:
        # Line by line as written (never re-wrapped): a traceback is read and pasted whole.
        stdout().print(Text("traceback", style="bold"))
        for line in str(trace).rstrip("\n").splitlines():
            stdout().print(Text(line), soft_wrap=True)


def print_events(events: list[dict]) -> None:
    """An event trigger's events: type and run only where the terminal is wide."""
    print_list(events, "No events.", _EVENT_COLUMNS)


def print_audit(entries: list[dict]) -> None:
    """The audit log: each entry's detail only where the terminal is wide."""
    print_list(entries, "No audit entries.", _AUDIT_COLUMNS)


def print_workflows(items: list[dict]) -> None:
    """The registered workflows."""
    print_list(items, "No workflows.", _WORKFLOW_COLUMNS)


def _show_run(ctx: click.Context, args: tuple[str, ...], as_json: bool) -> None:
    if len(args) != 2:
        usage("runs get takes one RUN_ID")
    run = client_of(ctx).request("GET", id_path("a run id", args[1], "/v1/runs"))
    emit(ctx, run, as_json, lambda: print_run(run))


def _rerun(ctx: click.Context, args: tuple[str, ...], as_json: bool) -> None:
    if len(args) != 2:
        usage("runs rerun takes one RUN_ID")
    path = id_path("a run id", args[1], "/v1/runs", "/rerun")
    answer = client_of(ctx).request("POST", path) or {}

    def table() -> None:
        waits = " (the trigger is busy: it waits its turn)" if answer.get("queued") else ""
        say(f"Rerun of {args[1]} started{waits}; its run id:")
        pairs([("run", cell(answer.get("run_id")))])

    emit(ctx, answer, as_json, table)


@command(
    "runs",
    click.argument("args", metavar="[TRIGGER_ID | get RUN_ID | rerun RUN_ID]", nargs=-1),
    click.option("--surface", type=click.Choice(RUN_SURFACES), help="Only runs from this surface."),
    click.option("--status", type=click.Choice(RUN_STATUSES), help="Only runs with this status."),
    _limit(DEFAULT_RUNS_LIMIT, "Show at most this many runs."),
    context_settings={"ignore_unknown_options": False},
)
def list_runs(
    ctx: click.Context,
    args: tuple[str, ...],
    surface: str | None,
    status: str | None,
    limit: int,
    as_json: bool,
) -> None:
    """List runs, newest first (of one trigger, or of all); `runs get RUN_ID` shows one
    (with its traceback), `runs rerun RUN_ID` runs it again with the same payload."""
    if args and args[0] == "get":
        _show_run(ctx, args, as_json)
        return
    if args and args[0] == "rerun":
        _rerun(ctx, args, as_json)
        return
    if len(args) > 1:
        usage("runs takes at most one TRIGGER_ID")
    trigger_id = args[0] if args else None
    path = trigger_path(trigger_id, "/runs") if trigger_id else "/v1/runs"
    given = {"surface": surface, "status": status}
    wanted = {name: value for name, value in given.items() if value is not None}

    # The contract names these filters on /v1/runs; applying them here as well keeps the
    # list right if a trigger's own runs route answers unfiltered.
    def keep(run: dict) -> bool:
        return all(run.get(name) == value for name, value in wanted.items())

    items, cursor = client_of(ctx).pages(path, wanted, limit=limit, keep=keep)
    emit_page(ctx, items, cursor, as_json, print_runs)
    if cursor and output_format(ctx, as_json) == "table":
        stderr().print(f"(showing the newest {len(items)}; pass --limit for more)")


@command(
    "events",
    click.argument("trigger_id", metavar="ID"),
    click.option("--status", help="Only events with this status (pending, failed...)."),
    _limit(DEFAULT_RUNS_LIMIT, "Show at most this many."),
)
def list_events(
    ctx: click.Context, trigger_id: str, status: str | None, limit: int, as_json: bool
) -> None:
    """An event trigger's received events, newest first."""
    path = trigger_path(trigger_id, "/events")
    items, cursor = client_of(ctx).pages(path, {"status": status}, limit=limit)
    emit_page(ctx, items, cursor, as_json, print_events)


@command("replay", click.argument("event_id", metavar="EVENT_ID"))
def replay(ctx: click.Context, event_id: str, as_json: bool) -> None:
    """Run a stored event again."""
    path = id_path("an event id", event_id, "/v1/events", "/replay")
    answer = client_of(ctx).request("POST", path)
    run_id = (answer or {}).get("run_id")
    emit(ctx, answer, as_json, lambda: say(f"Replayed {event_id}: run {run_id}"))


@command(
    "audit",
    click.option("--trigger", "trigger_id", help="Only entries about this trigger."),
    click.option("--action", help="Only this action (create, update, disable...)."),
    _limit(50, "Show at most this many."),
)
def list_audit(
    ctx: click.Context, trigger_id: str | None, action: str | None, limit: int, as_json: bool
) -> None:
    """The audit log, newest first (admin)."""
    query = {"trigger_id": trigger_id, "action": action}
    items, cursor = client_of(ctx).pages("/v1/audit", query, limit=limit)
    emit_page(ctx, items, cursor, as_json, print_audit)


@command("workflows")
def list_workflows(ctx: click.Context, as_json: bool) -> None:
    """The registered workflows."""
    items, _ = client_of(ctx).pages("/v1/workflows", {})
    emit_page(ctx, items, None, as_json, print_workflows)
