"""What the command prints: json or yaml for programs, tables for people (80 columns up).

Every command hands ``emit`` the API's answer and a function that draws it as a table;
``-o`` (anywhere on the line) or ``--json`` picks which one runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import click
from rich.console import Console, JustifyMethod
from rich.table import Table
from rich.text import Text

__all__ = [
    "Column",
    "at",
    "field",
    "OUTPUTS",
    "OUTPUT_META_KEY",
    "WIDE_COLUMNS",
    "cell",
    "emit",
    "emit_page",
    "emit_secret",
    "instant",
    "list_table",
    "output_format",
    "pairs",
    "print_list",
    "say",
    "secret",
    "status",
    "stderr",
    "stdout",
    "warn",
]

OUTPUTS = ("table", "json", "yaml")
# Where the root context keeps the -o choice, so it counts wherever on the line it stood.
OUTPUT_META_KEY = "cronhook.output"
# Wider than this, lists show their lower-value columns too (kind, last run, errors...).
WIDE_COLUMNS = 120

_STATUS_STYLE = {
    "active": "green",
    "succeeded": "green",
    "running": "cyan",
    "queued": "cyan",
    "pending": "cyan",
    "skipped": "yellow",
    "disabled": "yellow",
    "failed": "red",
    "refused": "red",
    "budget_exceeded": "red",
    "lost": "red",
    "missed": "yellow",
}


def stdout() -> Console:
    """A console on stdout, built per call so it writes to whatever sys.stdout is now."""
    return Console(highlight=False)


def stderr() -> Console:
    """A console on stderr, for warnings and hints that must not spoil parseable output."""
    return Console(stderr=True, highlight=False)


def _emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def _emit_yaml(data: Any) -> None:
    import yaml

    click.echo(yaml.safe_dump(data, sort_keys=False, allow_unicode=True).rstrip("\n"))


def output_format(ctx: click.Context, as_json: bool = False) -> str:
    """The output format: ``-o`` (anywhere on the line), else ``--json``, else a table."""
    chosen = ctx.find_root().meta.get(OUTPUT_META_KEY)
    if chosen:
        return str(chosen)
    return "json" if as_json else "table"


def emit(ctx: click.Context, data: Any, as_json: bool, table: Callable[[], None]) -> None:
    """Print ``data`` as the caller asked: JSON, YAML, or ``table()`` for people."""
    kind = output_format(ctx, as_json)
    if kind == "json":
        _emit_json(data)
    elif kind == "yaml":
        _emit_yaml(data)
    else:
        table()


def emit_page(
    ctx: click.Context,
    items: list[dict],
    cursor: str | None,
    as_json: bool,
    table: Callable[[list[dict]], None],
) -> None:
    """Print a list as one page document (``items``, ``next_cursor``) or ``table(items)``."""
    emit(ctx, {"items": items, "next_cursor": cursor}, as_json, lambda: table(items))


def emit_secret(
    ctx: click.Context,
    answer: Any,
    as_json: bool,
    rows: Callable[[], list[tuple[str, Text]]],
    *,
    what: str,
) -> None:
    """Print an answer that holds a secret shown only once, and say so on stderr."""
    emit(ctx, answer, as_json, lambda: pairs(rows()))
    warn(f"{what} is shown only this once; store it now")


def say(text: str) -> None:
    """One line for people on stdout, printed as typed (never read as rich markup)."""
    stdout().print(Text(text))


def warn(message: str) -> None:
    """A warning on stderr."""
    stderr().print(Text(f"warning: {message}", style="yellow"))


def cell(value: Any) -> Text:
    """A table cell: ``-`` for nothing."""
    # Text, not str: a title like "[red]x" must print as typed, not as rich markup.
    return Text("-" if value is None or value == "" else str(value))


def instant(value: Any) -> Text:
    """An instant as the API sent it, minus a zero millisecond part (never cut further)."""
    if not value:
        return cell(None)
    text = str(value)
    if text.endswith(".000Z"):
        text = text[: -len(".000Z")] + "Z"
    return Text(text)


def secret(value: Any) -> Text:
    """A secret the API shows only once, in a colour that asks to be copied now."""
    return Text(str(value), style="bold yellow")


def status(value: Any, reason: Any = None) -> Text:
    """A trigger's, run's or event's status, coloured, with a disabled trigger's reason."""
    label = str(value or "-")
    if reason and value != "active":
        label += f" ({reason})"
    style = _STATUS_STYLE.get(str(value), "")
    if value == "disabled" and reason and reason != "manual":
        style = "red"
    return Text(label, style=style)


def list_table() -> Table:
    """An empty table with a bold header and no box, as every list is drawn."""
    return Table(box=None, header_style="bold", pad_edge=False)


@dataclass(frozen=True)
class Column:
    """A column of a list: its header, how a row's cell is drawn, and when it is shown.

    ``whole`` is for ids, URLs and instants: never wrapped, never cut with an ellipsis.
    A column with ``min_columns`` is left out on a terminal narrower than that.
    """

    header: str
    value: Callable[[dict], Text]
    whole: bool = False
    min_columns: int = 0
    justify: JustifyMethod = "left"
    ratio: int | None = None

    def add_to(self, table: Table) -> None:
        """Add this column to ``table``, as ``whole`` or folding at its edge."""
        if self.whole:
            table.add_column(self.header, no_wrap=True, overflow="fold", min_width=len(self.header))
        else:
            table.add_column(self.header, justify=self.justify, ratio=self.ratio, overflow="fold")


def field(name: str) -> Callable[[dict], Text]:
    """A cell showing ``row[name]`` as text."""
    return lambda row: cell(row.get(name))


def at(name: str) -> Callable[[dict], Text]:
    """A cell showing the instant ``row[name]``."""
    return lambda row: instant(row.get(name))


def print_list(rows: list[dict], empty: str, columns: Sequence[Column]) -> None:
    """A list as a table of the ``columns`` this terminal is wide enough for."""
    console = stdout()
    if not rows:
        console.print(empty)
        return
    shown = [column for column in columns if console.width >= column.min_columns]
    table = list_table()
    for column in shown:
        column.add_to(table)
    for row in rows:
        table.add_row(*(column.value(row) for column in shown))
    console.print(table)


def pairs(rows: list[tuple[str, Text]]) -> None:
    """One thing as two columns: name, value."""
    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for name, value in rows:
        table.add_row(name, value)
    stdout().print(table)
