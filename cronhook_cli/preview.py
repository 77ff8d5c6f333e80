"""``cronhook preview``: the next fire times of a cron expression, in UTC and its zone."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import click
from rich.text import Text

from cronhook_cli.context import client_of, command
from cronhook_cli.output import cell, emit, list_table, say, stdout
from cronhook_cli.parsing import INSTANT

__all__ = ["DEFAULT_PREVIEW_COUNT", "preview", "print_fires"]

DEFAULT_PREVIEW_COUNT = 5


def _zone(tz: str) -> ZoneInfo | None:
    """The zone to show local times in; None for UTC or a zone this machine lacks."""
    try:
        return ZoneInfo(tz) if tz.upper() != "UTC" else None
    except (ZoneInfoNotFoundError, ValueError):
        return None  # the server knew it; this machine's tzdata may not


def _local(fire: str, zone: ZoneInfo) -> str | None:
    try:
        return datetime.fromisoformat(fire).astimezone(zone).isoformat()
    except (TypeError, ValueError):
        return None


def print_fires(
    fires: list[str], tz: str, *, dst: list | None = None, calendar: list | None = None
) -> None:
    """The fires as a numbered table, with local times, the DST transitions' marks and the
    slots a calendar removed or moved (listed under the table)."""
    zone = _zone(tz)
    table = list_table()
    table.add_column("#", justify="right", overflow="fold")
    table.add_column("UTC", overflow="fold")
    if zone is not None:
        table.add_column(tz)
    # A fire a DST transition moved or doubled is marked beside it, with the policy that
    # decided; a fire the transition removed has no row, so it is listed under the table.
    marks = {m.get("at"): m for m in dst or [] if isinstance(m, dict)}
    if marks:
        table.add_column("DST", overflow="fold")
    for number, fire in enumerate(fires, start=1):
        row = [Text(str(number)), cell(fire)]
        if zone is not None:
            row.append(cell(_local(fire, zone)))
        if marks:
            mark = marks.get(fire)
            row.append(Text(f"{mark['change']} ({mark['policy']})" if mark else ""))
        table.add_row(*row)
    console = stdout()
    if fires:
        console.print(table)
    else:
        console.print("No fires.")
    for at, mark in marks.items():
        if at not in fires:
            say(f"DST: {mark.get('change')} at {at} (policy {mark.get('policy')})")
    for entry in calendar or []:
        if not isinstance(entry, dict):
            continue
        why = entry.get("name") or "excluded date"
        moved = f" -> moved to {entry['moved_to']}" if entry.get("moved_to") else ""
        say(f"Calendar: {entry.get('change')} at {entry.get('at')} ({why}){moved}")


@command(
    "preview",
    click.argument("exprs", metavar='"EXPR"...', nargs=-1, required=True),
    click.option("--tz", default="UTC", show_default=True, help="IANA time zone of EXPR."),
    click.option(
        "--holidays", multiple=True, help="Holiday calendar code (DE, DE-BY, US-NY); repeatable."
    ),
    click.option("--exclude", multiple=True, help="A local date to leave out (YYYY-MM-DD)."),
    click.option(
        "--on-holiday",
        type=click.Choice(["skip", "next_business_day", "previous_business_day"]),
        default=None,
        help="What a slot on a holiday or excluded date does (default skip).",
    ),
    click.option(
        "--from", "from_at", type=INSTANT, help="Start after this ISO instant (default now)."
    ),
    click.option(
        "--count",
        type=click.IntRange(min=1),
        default=DEFAULT_PREVIEW_COUNT,
        show_default=True,
        help="How many fires to show.",
    ),
)
def preview(
    ctx: click.Context,
    exprs: tuple[str, ...],
    tz: str,
    holidays: tuple[str, ...],
    exclude: tuple[str, ...],
    on_holiday: str | None,
    from_at: str | None,
    count: int,
    as_json: bool,
) -> None:
    """Show the next fire times of a cron expression (several: their union)."""
    # The command line is the edge: "now" is read here once and sent, never on the server.
    start_at = from_at or datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    cron: str | list[str] = exprs[0] if len(exprs) == 1 else list(exprs)
    body: dict = {"cron": cron, "timezone": tz, "from": start_at, "count": count}
    calendar = {
        k: v
        for k, v in (
            ("holidays", list(holidays) or None),
            ("exclude_dates", list(exclude) or None),
            ("on_holiday", on_holiday),
        )
        if v is not None
    }
    if calendar:
        body["calendar"] = calendar
    answer = client_of(ctx).request("POST", "/v1/schedules/preview", body=body) or {}

    def table() -> None:
        if answer.get("cadence"):
            say(str(answer["cadence"]))
        print_fires(
            answer.get("fires") or [],
            tz,
            dst=answer.get("dst") or [],
            calendar=answer.get("calendar") or [],
        )

    emit(ctx, answer, as_json, table)
