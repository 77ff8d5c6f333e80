"""What the command prints: json or yaml for programs, tables for people (80 columns up).

Every command hands ``emit`` the API's answer and a function that draws it as a table;
``-o`` (anywhere on the line) or ``--json`` picks which one runs.
"""

from __future__ import annotations

import json
import textwrap
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
    """A line for people on stdout, printed as typed (never read as rich markup), wrapped
    at word boundaries only: an id or URL longer than the terminal stays whole."""
    console = stdout()
    lines = textwrap.wrap(
        text, width=max(20, console.width), break_long_words=False, break_on_hyphens=False
    )
    for line in lines or [""]:
        console.print(Text(line), soft_wrap=True)


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


def _longest_word(cell_value: Any, *, whole: bool) -> int:
    text = cell_value.plain if isinstance(cell_value, Text) else str(cell_value)
    parts = text.splitlines() if whole else text.split()
    return max((len(part) for part in parts), default=0)


def _print_unbroken(console: Console, table: Table) -> None:
    """Print a table wrapped at word boundaries only.

    Each column is kept at least as wide as its longest word (a whole column: its longest
    value), so rich never folds inside one; where the terminal (or a pipe's 80 columns) is
    too narrow for that, the table is printed wider than the terminal rather than break an
    id, a URL, an instant or a word.
    """
    needed = 0
    for column in table.columns:
        whole = bool(column.no_wrap)
        longest = max((_longest_word(c, whole=whole) for c in column.cells), default=0)
        longest = max(longest, len(str(column.header)) if table.show_header else 0)
        column.min_width = max(column.min_width or 0, longest)
        needed += column.min_width + 2  # the cell padding either side
    needed -= 2  # no padding at the table's edges
    if needed > console.width:
        # Every column at exactly its narrowest unbroken width, the table that wide.
        for column in table.columns:
            column.width = column.min_width
        console = Console(highlight=False, width=needed)
    console.print(table)


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
    _print_unbroken(console, table)


def _pairs_table(name_width: int) -> Table:
    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column(style="bold", no_wrap=True, min_width=name_width)
    table.add_column(overflow="fold")
    return table


def _one_token(text: str) -> bool:
    return bool(text) and not any(ch.isspace() for ch in text)


def pairs(rows: list[tuple[str, Text]]) -> None:
    """One thing as two columns: name, value, wrapped at word boundaries.

    A value that is one token (a URL, a secret, a key, an id) too long for its column goes
    on a line of its own, whole, even past the terminal's width: copied from the
    terminal or a pipe, it is the value, never two halves of it.
    """
    console = stdout()
    name_width = max((len(name) for name, _ in rows), default=0)
    room = console.width - name_width - 2
    table = _pairs_table(name_width)
    for name, value in rows:
        if len(value.plain) > room and _one_token(value.plain):
            if table.row_count:
                _print_unbroken(console, table)
                table = _pairs_table(name_width)
            console.print(Text(name, style="bold"))
            console.print(value, soft_wrap=True)
            continue
        table.add_row(name, value)
    if table.row_count:
        _print_unbroken(console, table)
