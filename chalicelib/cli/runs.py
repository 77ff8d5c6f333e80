"""What happened: ``runs``, ``events``, ``replay``, ``audit`` and ``workflows``."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click
from rich.table import Table

from chalicelib.cli.context import Decorator, client_of, command, id_path, trigger_path, usage
from chalicelib.cli.output import (
    cell,
    emit,
    emit_page,
    instant,
    output_format,
    pairs,
    print_rows,
    say,
    status,
    stderr,
    stdout,
    whole,
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

RUN_SURFACES = ("schedule", "event", "manual", "backfill")
RUN_STATUSES = (
    "queued",
    "running",
    "succeeded",
    "failed",
    "skipped",
    "refused",
    "budget_exceeded",
    "lost",
)


def _limit(default: int, help_text: str) -> Decorator:
    return click.option(
        "--limit", type=click.IntRange(min=1), default=default, show_default=True, help=help_text
    )


def _first_line(text: Any) -> str | None:
    if not text or not str(text).strip():
        return None
    return str(text).splitlines()[0][:80]


def print_runs(runs: list[dict]) -> None:
    """The runs list: trigger, lateness and error only where the terminal is wide."""

    def build(table: Table, wide: bool) -> Callable:
        show_surface = wide or stdout().width >= SURFACE_COLUMNS
        whole(table, "ID")
        if wide:
            whole(table, "TRIGGER")
        if show_surface:
            table.add_column("SURFACE", overflow="fold")
        table.add_column("STATUS", overflow="fold")
        whole(table, "SCHEDULED FOR")
        if wide:
            table.add_column("LATENESS MS", justify="right", overflow="fold")
            table.add_column("ERROR", overflow="fold")

        def row(run: dict) -> list:
            cells = [cell(run.get("id"))]
            if wide:
                cells.append(cell(run.get("trigger_id")))
            if show_surface:
                cells.append(cell(run.get("surface")))
            cells += [status(run.get("status")), instant(run.get("scheduled_for"))]
            if wide:
                cells += [cell(run.get("lateness_ms")), cell(_first_line(run.get("error")))]
            return cells

        return row

    print_rows(runs, "No runs.", build)


def print_run(run: dict) -> None:
    """One run as name/value pairs."""
    rows = [
        ("id", cell(run.get("id"))),
        ("trigger", cell(run.get("trigger_id"))),
        ("workflow", cell(run.get("workflow"))),
        ("surface", cell(run.get("surface"))),
        ("status", status(run.get("status"))),
        ("scheduled for", instant(run.get("scheduled_for"))),
        ("started", instant(run.get("started_at"))),
        ("finished", instant(run.get("finished_at"))),
        ("lateness ms", cell(run.get("lateness_ms"))),
        ("attempt", cell(run.get("attempt"))),
        ("cost usd", cell(run.get("cost_usd"))),
    ]
    if run.get("event_id"):
        rows.append(("event", cell(run.get("event_id"))))
    if run.get("error"):
        rows.append(("error", cell(run.get("error"))))
    if run.get("output") is not None:
        rows.append(("output", cell(json.dumps(run.get("output"), ensure_ascii=False))))
    pairs(rows)


def print_events(events: list[dict]) -> None:
    """An event trigger's events: type and run only where the terminal is wide."""

    def build(table: Table, wide: bool) -> Callable:
        whole(table, "ID")
        table.add_column("STATUS", overflow="fold")
        whole(table, "RECEIVED")
        table.add_column("TRY", justify="right", overflow="fold")
        if wide:
            table.add_column("TYPE", overflow="fold")
            whole(table, "RUN")

        def row(event: dict) -> list:
            cells = [
                cell(event.get("id")),
                status(event.get("status")),
                instant(event.get("received_at")),
                cell(event.get("attempt")),
            ]
            if wide:
                cells += [cell(event.get("event_type")), cell(event.get("run_id"))]
            return cells

        return row

    print_rows(events, "No events.", build)


def print_audit(entries: list[dict]) -> None:
    """The audit log: each entry's detail only where the terminal is wide."""

    def build(table: Table, wide: bool) -> Callable:
        whole(table, "AT")
        whole(table, "ACTOR")
        table.add_column("ACTION", overflow="fold")
        whole(table, "TRIGGER")
        if wide:
            table.add_column("DETAIL", overflow="fold")

        def row(entry: dict) -> list:
            cells = [
                instant(entry.get("at")),
                cell(entry.get("actor")),
                cell(entry.get("action")),
                cell(entry.get("trigger_id")),
            ]
            if wide:
                detail = entry.get("detail") or {}
                cells.append(cell(json.dumps(detail, ensure_ascii=False) if detail else None))
            return cells

        return row

    print_rows(entries, "No audit entries.", build)


def print_workflows(items: list[dict]) -> None:
    """The registered workflows."""

    def build(table: Table, wide: bool) -> Callable:
        whole(table, "NAME")
        table.add_column("DESCRIPTION", overflow="fold")
        table.add_column("STATE SCHEMA", overflow="fold")

        def row(flow: dict) -> list:
            schema = flow.get("state_schema")
            return [
                cell(flow.get("name")),
                cell(flow.get("description")),
                cell("yes" if schema else None),
            ]

        return row

    print_rows(items, "No workflows.", build)


def _show_run(ctx: click.Context, args: tuple[str, ...], as_json: bool) -> None:
    if len(args) != 2:
        usage("runs get takes one RUN_ID")
    run = client_of(ctx).request("GET", id_path("a run id", args[1], "/v1/runs"))
    emit(ctx, run, as_json, lambda: print_run(run))


@command(
    "runs",
    click.argument("args", metavar="[TRIGGER_ID | get RUN_ID]", nargs=-1),
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
    """List runs, newest first (of one trigger, or of all); `runs get RUN_ID` shows one."""
    if args and args[0] == "get":
        _show_run(ctx, args, as_json)
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
