"""The ``cronhook`` command: a thin client of the REST API (docs/cli.md).

It knows nothing about the server's internals: every command is one or a few HTTP calls
to the public API in CONTRACT.md, so it works the same against the local stack and a
deployed stage. Exit codes: 0 ok, 1 the API refused or could not be reached, 2 usage.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, NoReturn
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import click
import requests
from rich.console import Console
from rich.table import Table
from rich.text import Text

__all__ = [
    "ApiError",
    "Client",
    "cli",
    "main",
    "parse_every",
    "parse_instant",
]

DEFAULT_URL = "http://127.0.0.1:8000"
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_PREVIEW_COUNT = 5
DEFAULT_RUNS_LIMIT = 20

WEBHOOK_SOURCES = ("webhook", "github", "stripe", "slack", "standard", "shopify", "linkedin")
ROLES = ("viewer", "operator", "admin")
TRIGGER_STATUSES = ("active", "disabled")
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

_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_EVERY_RE = re.compile(r"(?:\d+[smhd])+")
_EVERY_PART_RE = re.compile(r"(\d+)([smhd])")
_ERRNO_RE = re.compile(r"\[Errno -?\d+\] ([^'\")]+)")
_NOT_JSON = object()


# --------------------------------------------------------------------------- parsing


def parse_every(text: str) -> int:
    """Turn ``90s``, ``15m``, ``1h``, ``2d`` or a sum such as ``1h30m`` into seconds."""
    compact = text.strip().lower()
    if not _EVERY_RE.fullmatch(compact):
        raise ValueError(f"{text!r} is not a duration like 90s, 15m, 1h, 2d or 1h30m")
    seconds = sum(int(n) * _UNIT_S[unit] for n, unit in _EVERY_PART_RE.findall(compact))
    if seconds <= 0:
        raise ValueError(f"{text!r} is not a positive duration")
    return seconds


def parse_instant(text: str) -> str:
    """Normalise an ISO-8601 instant with an offset or ``Z`` to the contract's UTC ``...Z``."""
    try:
        instant = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO-8601 instant") from None
    # A naive time is ambiguous (whose local time?), so ask rather than guess.
    if instant.tzinfo is None or instant.utcoffset() is None:
        raise ValueError(f"{text!r} needs a UTC offset or Z, e.g. 2030-01-01T08:00:00Z")
    return instant.astimezone(UTC).isoformat().replace("+00:00", "Z")


class _Every(click.ParamType):
    name = "DURATION"

    def convert(self, value: Any, param: Any, ctx: Any) -> int:
        if isinstance(value, int):
            return value
        try:
            return parse_every(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


class _Instant(click.ParamType):
    name = "ISO"

    def convert(self, value: Any, param: Any, ctx: Any) -> str:
        try:
            return parse_instant(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


class _JsonObject(click.ParamType):
    name = "JSON"

    def convert(self, value: Any, param: Any, ctx: Any) -> dict:
        if isinstance(value, dict):
            return value
        try:
            parsed = json.loads(value)
        except ValueError as exc:
            self.fail(f"not valid JSON: {exc}", param, ctx)
        if not isinstance(parsed, dict):
            self.fail("must be a JSON object, e.g. '{\"cursor\": null}'", param, ctx)
        return parsed


def _check_url(ctx: click.Context, param: click.Parameter, value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise click.BadParameter(f"{value!r} is not an http(s) URL", ctx, param)
    return value.rstrip("/")


# --------------------------------------------------------------------------- HTTP


class ApiError(click.ClickException):
    """The API refused the request or could not be reached: exit 1, message on stderr."""

    exit_code = 1


class Client:
    """Calls the cronhook REST API; every failure becomes an ``ApiError`` for people."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        session: requests.Session | None = None,
    ):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout_s = timeout_s
        self.session = session or requests.Session()

    def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        body: dict[str, Any] | None = None,
    ) -> Any:
        """Send one request; return the decoded JSON answer (``None`` for an empty one)."""
        headers = {"Accept": "application/json", "User-Agent": "cronhook-cli"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        query = {k: v for k, v in (params or {}).items() if v is not None and v != ""}
        try:
            response = self.session.request(
                method,
                self.base_url + path,
                params=query,
                json=body,
                headers=headers,
                timeout=self.timeout_s,
            )
        except requests.Timeout as exc:
            raise ApiError(
                f"cronhook at {self.base_url} did not answer within {self.timeout_s:g} s"
            ) from exc
        except requests.RequestException as exc:
            raise ApiError(self._unreachable(exc)) from exc

        data: Any = None
        if response.content:
            try:
                data = response.json()
            except ValueError:
                data = _NOT_JSON
        if response.status_code >= 400:
            raise ApiError(self._refusal(response, data))
        if data is _NOT_JSON:
            raise ApiError(
                f"unexpected answer from {self.base_url}{path}: "
                f"HTTP {response.status_code} is not JSON (is this a cronhook URL?)"
            )
        return data

    def pages(
        self,
        path: str,
        params: dict[str, Any],
        *,
        limit: int | None = None,
        keep: Callable[[dict], bool] | None = None,
    ) -> tuple[list[dict], str | None]:
        """Follow ``next_cursor`` until the end or ``limit`` kept items; return them and cursor."""
        items: list[dict] = []
        cursor: str | None = None
        seen: set[str] = set()
        while True:
            page = self.request("GET", path, params={**params, "cursor": cursor})
            if not isinstance(page, dict):
                raise ApiError(f"unexpected answer from {self.base_url}{path}: not a page")
            items.extend(item for item in page.get("items") or [] if keep is None or keep(item))
            cursor = page.get("next_cursor")
            if limit is not None and len(items) >= limit:
                return items[:limit], cursor
            if not cursor:
                return items, None
            # A server that hands back a cursor it already gave would loop us forever.
            if cursor in seen:
                raise ApiError(f"{self.base_url}{path} repeated page cursor {cursor!r}")
            seen.add(cursor)

    def _unreachable(self, exc: requests.RequestException) -> str:
        # requests nests urllib3's reason several levels deep; the errno text is the part
        # a person can act on ("Connection refused", "Name or service not known").
        found = _ERRNO_RE.search(str(exc))
        reason = found.group(1).strip() if found else type(exc).__name__
        message = f"cannot reach cronhook at {self.base_url}: {reason}"
        if urlsplit(self.base_url).hostname in ("127.0.0.1", "localhost", "::1"):
            message += " (is the local stack running? start it with `make run`)"
        return message

    def _refusal(self, response: requests.Response, data: Any) -> str:
        error = data.get("error") if isinstance(data, dict) else None
        status = response.status_code
        if isinstance(error, dict) and error.get("message"):
            code = error.get("code")
            message = f"{status}{' ' + str(code) if code else ''}: {error['message']}"
            if error.get("field"):
                message += f" (field: {error['field']})"
        else:
            snippet = response.text.strip().replace("\n", " ")[:200]
            message = f"{status} {response.reason or ''}".rstrip()
            if snippet:
                message += f": {snippet}"
        if status == 401:
            if self.api_key:
                message += " - check CRONHOOK_API_KEY or --api-key"
            else:
                message += " - no API key given: set CRONHOOK_API_KEY or pass --api-key"
        return message


# --------------------------------------------------------------------------- output

OUTPUTS = ("table", "json", "yaml")
# Wider than this, lists show their lower-value columns too (kind, last run, errors...).
WIDE_COLUMNS = 120


def _stdout() -> Console:
    # Built per call so it writes to whatever sys.stdout is now (pipes, test runners).
    return Console(highlight=False)


def _stderr() -> Console:
    return Console(stderr=True, highlight=False)


def _emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def _emit_yaml(data: Any) -> None:
    import yaml

    click.echo(yaml.safe_dump(data, sort_keys=False, allow_unicode=True).rstrip("\n"))


def _output(ctx: click.Context, as_json: bool = False) -> str:
    """The output format: ``-o`` (anywhere on the line), else ``--json``, else a table."""
    chosen = ctx.find_root().meta.get("cronhook.output")
    if chosen:
        return chosen
    return "json" if as_json else "table"


def _emit(ctx: click.Context, data: Any, as_json: bool, table: Callable[[], None]) -> None:
    """Print ``data`` as the caller asked: JSON, YAML, or ``table()`` for people."""
    kind = _output(ctx, as_json)
    if kind == "json":
        _emit_json(data)
    elif kind == "yaml":
        _emit_yaml(data)
    else:
        table()


def _warn(message: str) -> None:
    _stderr().print(Text(f"warning: {message}", style="yellow"))


def _cell(value: Any) -> Text:
    # Text, not str: a title like "[red]x" must print as typed, not as rich markup.
    return Text("-" if value is None or value == "" else str(value))


def _instant(value: Any) -> Text:
    """An instant as the API sent it, minus a zero millisecond part (never cut further)."""
    if not value:
        return _cell(None)
    text = str(value)
    if text.endswith(".000Z"):
        text = text[: -len(".000Z")] + "Z"
    return Text(text)


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
}


def _status(status: Any, reason: Any = None) -> Text:
    label = str(status or "-")
    if reason and status != "active":
        label += f" ({reason})"
    style = _STATUS_STYLE.get(str(status), "")
    if status == "disabled" and reason and reason != "manual":
        style = "red"
    return Text(label, style=style)


def _last_run_status(trigger: dict) -> Text:
    last_run = trigger.get("last_run") or {}
    return _status(last_run.get("status")) if last_run else _cell(None)


def _table() -> Table:
    return Table(box=None, header_style="bold", pad_edge=False)


def _whole(table: Table, name: str, **kwargs: Any) -> None:
    """A column of ids, URLs or instants: never wrapped, never cut with an ellipsis."""
    table.add_column(name, no_wrap=True, overflow="fold", min_width=len(name), **kwargs)


def _print_rows(rows: list[dict], empty: str, build: Callable[[Table, bool], Callable]) -> None:
    console = _stdout()
    if not rows:
        console.print(empty)
        return
    table = _table()
    add = build(table, console.width >= WIDE_COLUMNS)
    for row in rows:
        table.add_row(*add(row))
    console.print(table)


def _print_triggers(triggers: list[dict]) -> None:
    def build(table: Table, wide: bool) -> Callable:
        _whole(table, "ID")
        table.add_column("NAME", ratio=2, overflow="fold")
        if wide:
            table.add_column("KIND", overflow="fold")
        table.add_column("CADENCE", ratio=3, overflow="fold")
        table.add_column("STATUS", overflow="fold")
        _whole(table, "NEXT FIRE")
        if wide:
            table.add_column("LAST RUN", overflow="fold")

        def row(trigger: dict) -> list:
            cells = [_cell(trigger.get("id")), _cell(trigger.get("display_name"))]
            if wide:
                cells.append(_cell(trigger.get("kind")))
            cells += [
                _cell(trigger.get("cadence")),
                _status(trigger.get("status"), trigger.get("disabled_reason")),
                _instant(trigger.get("next_fire_at")),
            ]
            if wide:
                cells.append(_last_run_status(trigger))
            return cells

        return row

    _print_rows(triggers, "No triggers.", build)


def _pairs(rows: list[tuple[str, Text]]) -> None:
    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for name, value in rows:
        table.add_row(name, value)
    _stdout().print(table)


def _print_trigger(trigger: dict, *, secrets: dict[str, str] | None = None) -> None:
    last_run = trigger.get("last_run") or {}
    last = None
    if last_run:
        last = " ".join(
            str(part)
            for part in (
                last_run.get("status"),
                _instant(last_run.get("finished_at")).plain
                if last_run.get("finished_at")
                else None,
                last_run.get("id"),
            )
            if part
        )
        if last_run.get("error"):
            last += f" - {last_run['error']}"
    rows = [
        ("id", _cell(trigger.get("id"))),
        ("name", _cell(trigger.get("display_name"))),
        ("workflow", _cell(trigger.get("workflow"))),
        ("kind", _cell(trigger.get("kind"))),
        ("cadence", _cell(trigger.get("cadence"))),
        ("status", _status(trigger.get("status"), trigger.get("disabled_reason"))),
    ]
    if trigger.get("status") == "disabled" and (
        trigger.get("disabled_note") or trigger.get("disabled_by")
    ):
        by = " ".join(
            str(p)
            for p in (trigger.get("disabled_by"), _instant(trigger.get("disabled_at")).plain)
            if p and p != "-"
        )
        rows.append(("paused by", _cell(by)))
        if trigger.get("disabled_note"):
            rows.append(("note", _cell(trigger.get("disabled_note"))))
    rows += [
        ("next fire", _instant(trigger.get("next_fire_at"))),
        ("last run", _cell(last)),
        ("runs", _cell(trigger.get("run_count"))),
        ("failures in a row", _cell(trigger.get("consecutive_failures"))),
        ("tags", _cell(", ".join(trigger.get("tags") or []))),
    ]
    # On create the contract nests the URL with the one-time secret under "webhook".
    hook_url = trigger.get("webhook_url") or (trigger.get("webhook") or {}).get("url")
    if hook_url:
        rows.append(("webhook url", _cell(hook_url)))
    for name, secret in (secrets or {}).items():
        rows.append((name, Text(secret, style="bold yellow")))
    rows.append(("created", _instant(trigger.get("created_at"))))
    _pairs(rows)


def _warn_trigger(trigger: dict) -> None:
    for warning in trigger.get("warnings") or []:
        _warn(str(warning))


def _first_line(text: Any) -> str | None:
    if not text or not str(text).strip():
        return None
    return str(text).splitlines()[0][:80]


def _print_runs(runs: list[dict]) -> None:
    def build(table: Table, wide: bool) -> Callable:
        _whole(table, "ID")
        if wide:
            _whole(table, "TRIGGER")
        if wide or _stdout().width >= 100:
            table.add_column("SURFACE", overflow="fold")
        table.add_column("STATUS", overflow="fold")
        _whole(table, "SCHEDULED FOR")
        if wide:
            table.add_column("LATENESS MS", justify="right", overflow="fold")
            table.add_column("ERROR", overflow="fold")
        show_surface = wide or _stdout().width >= 100

        def row(run: dict) -> list:
            cells = [_cell(run.get("id"))]
            if wide:
                cells.append(_cell(run.get("trigger_id")))
            if show_surface:
                cells.append(_cell(run.get("surface")))
            cells += [_status(run.get("status")), _instant(run.get("scheduled_for"))]
            if wide:
                cells += [_cell(run.get("lateness_ms")), _cell(_first_line(run.get("error")))]
            return cells

        return row

    _print_rows(runs, "No runs.", build)


def _print_run(run: dict) -> None:
    rows = [
        ("id", _cell(run.get("id"))),
        ("trigger", _cell(run.get("trigger_id"))),
        ("workflow", _cell(run.get("workflow"))),
        ("surface", _cell(run.get("surface"))),
        ("status", _status(run.get("status"))),
        ("scheduled for", _instant(run.get("scheduled_for"))),
        ("started", _instant(run.get("started_at"))),
        ("finished", _instant(run.get("finished_at"))),
        ("lateness ms", _cell(run.get("lateness_ms"))),
        ("attempt", _cell(run.get("attempt"))),
        ("cost usd", _cell(run.get("cost_usd"))),
    ]
    if run.get("event_id"):
        rows.append(("event", _cell(run.get("event_id"))))
    if run.get("error"):
        rows.append(("error", _cell(run.get("error"))))
    if run.get("output") is not None:
        rows.append(("output", _cell(json.dumps(run.get("output"), ensure_ascii=False))))
    _pairs(rows)


def _print_events(events: list[dict]) -> None:
    def build(table: Table, wide: bool) -> Callable:
        _whole(table, "ID")
        table.add_column("STATUS", overflow="fold")
        _whole(table, "RECEIVED")
        table.add_column("TRY", justify="right", overflow="fold")
        if wide:
            table.add_column("TYPE", overflow="fold")
            _whole(table, "RUN")

        def row(event: dict) -> list:
            cells = [
                _cell(event.get("id")),
                _status(event.get("status")),
                _instant(event.get("received_at")),
                _cell(event.get("attempt")),
            ]
            if wide:
                cells += [_cell(event.get("event_type")), _cell(event.get("run_id"))]
            return cells

        return row

    _print_rows(events, "No events.", build)


def _print_audit(entries: list[dict]) -> None:
    def build(table: Table, wide: bool) -> Callable:
        _whole(table, "AT")
        _whole(table, "ACTOR")
        table.add_column("ACTION", overflow="fold")
        _whole(table, "TRIGGER")
        if wide:
            table.add_column("DETAIL", overflow="fold")

        def row(entry: dict) -> list:
            cells = [
                _instant(entry.get("at")),
                _cell(entry.get("actor")),
                _cell(entry.get("action")),
                _cell(entry.get("trigger_id")),
            ]
            if wide:
                detail = entry.get("detail") or {}
                cells.append(_cell(json.dumps(detail, ensure_ascii=False) if detail else None))
            return cells

        return row

    _print_rows(entries, "No audit entries.", build)


def _print_keys(items: list[dict]) -> None:
    def build(table: Table, wide: bool) -> Callable:
        _whole(table, "ID")
        table.add_column("TENANT", overflow="fold")
        table.add_column("ROLE", overflow="fold")
        _whole(table, "CREATED")
        _whole(table, "BY")

        def row(key: dict) -> list:
            return [
                _cell(key.get("id")),
                _cell(key.get("tenant")),
                _cell(key.get("role")),
                _instant(key.get("created_at")),
                _cell(key.get("created_by")),
            ]

        return row

    _print_rows(items, "No keys.", build)


def _print_workflows(items: list[dict]) -> None:
    def build(table: Table, wide: bool) -> Callable:
        _whole(table, "NAME")
        table.add_column("DESCRIPTION", overflow="fold")
        table.add_column("STATE SCHEMA", overflow="fold")

        def row(flow: dict) -> list:
            schema = flow.get("state_schema")
            return [
                _cell(flow.get("name")),
                _cell(flow.get("description")),
                _cell("yes" if schema else None),
            ]

        return row

    _print_rows(items, "No workflows.", build)


# --------------------------------------------------------------------------- commands


def _client(ctx: click.Context) -> Client:
    client = ctx.find_object(Client)
    assert client is not None, "the cli group callback builds the client"
    return client


def _usage(message: str) -> NoReturn:
    raise click.UsageError(message)


def _set_url(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    if value is not None:
        _client(ctx).base_url = _check_url(ctx, param, value)
    return value


def _set_api_key(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    if value is not None:
        _client(ctx).api_key = value or None
    return value


def _set_timeout(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    if value is not None:
        _client(ctx).timeout_s = value
    return value


def _set_output(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    if value is not None:
        ctx.find_root().meta["cronhook.output"] = value
    return value


_OUTPUT_HELP = "Output: table (for people), json or yaml (for programs)."


def global_options(func: Callable) -> Callable:
    """The group's options, accepted after the subcommand too (``cronhook runs --url ...``)."""
    options = [
        click.option("--json", "as_json", is_flag=True, help="Print the raw JSON answer."),
        click.option(
            "-o",
            "--output",
            type=click.Choice(OUTPUTS),
            callback=_set_output,
            expose_value=False,
            help=_OUTPUT_HELP,
        ),
        click.option(
            "--url", callback=_set_url, expose_value=False, help="Base URL of the cronhook API."
        ),
        click.option(
            "--api-key", callback=_set_api_key, expose_value=False, help="API key (Bearer)."
        ),
        click.option(
            "--timeout",
            type=click.FloatRange(min=0, min_open=True),
            callback=_set_timeout,
            expose_value=False,
            help="Seconds to wait for each answer.",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("cronhook")
    except PackageNotFoundError:
        return "unknown"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    _version(), "--version", "-V", prog_name="cronhook", message="%(prog)s %(version)s"
)
@click.option(
    "--url",
    envvar="CRONHOOK_URL",
    default=DEFAULT_URL,
    show_default=True,
    callback=_check_url,
    help="Base URL of the cronhook API [env CRONHOOK_URL].",
)
@click.option(
    "--api-key",
    envvar="CRONHOOK_API_KEY",
    default=None,
    help="API key, sent as a Bearer token [env CRONHOOK_API_KEY].",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=0, min_open=True),
    default=DEFAULT_TIMEOUT_S,
    show_default=True,
    help="Seconds to wait for each answer.",
)
@click.option("-o", "--output", type=click.Choice(OUTPUTS), default=None, help=_OUTPUT_HELP)
@click.pass_context
def cli(
    ctx: click.Context, url: str, api_key: str | None, timeout_s: float, output: str | None
) -> None:
    """Manage cronhook triggers and runs from the command line.

    Every option of this group is also accepted after the subcommand. Shell completion:
    see docs/cli.md (eval "$(_CRONHOOK_COMPLETE=bash_source cronhook)").
    """
    ctx.obj = Client(url, api_key or None, timeout_s=timeout_s)
    if output:
        ctx.meta["cronhook.output"] = output


@cli.group()
def triggers() -> None:
    """Create, list and manage triggers."""


@triggers.command("list")
@click.option("--tag", help="Only triggers with this tag.")
@click.option("--workflow", help="Only triggers of this workflow.")
@click.option("--status", type=click.Choice(TRIGGER_STATUSES), help="Only this status.")
@global_options
@click.pass_context
def list_triggers(
    ctx: click.Context, tag: str | None, workflow: str | None, status: str | None, as_json: bool
) -> None:
    """List triggers, following every page."""
    items, _ = _client(ctx).pages(
        "/v1/triggers", {"tag": tag, "workflow": workflow, "status": status}
    )
    _emit(ctx, {"items": items, "next_cursor": None}, as_json, lambda: _print_triggers(items))


class _Json(click.ParamType):
    name = "JSON"

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if not isinstance(value, str):
            return value
        try:
            return json.loads(value)
        except ValueError as exc:
            self.fail(f"not valid JSON: {exc}", param, ctx)


def _cadence_options(func: Callable) -> Callable:
    options = [
        click.option("--cron", help="Cron expression, e.g. '0 8 * * 1'."),
        click.option("--tz", help="IANA time zone of --cron (default UTC)."),
        click.option("--every", type=_Every(), help="Interval: 90s, 15m, 1h, 2d or 1h30m."),
        click.option("--at", "at", type=_Instant(), help="Run once at this ISO-8601 instant."),
        click.option(
            "--dst-skipped",
            type=click.Choice(("shift", "skip")),
            help="A cron time a DST jump skips: run it shifted, or skip it.",
        ),
        click.option(
            "--dst-repeated",
            type=click.Choice(("once", "both")),
            help="A cron time a DST fall-back repeats: run it once, or both times.",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _setting_options(func: Callable) -> Callable:
    options = [
        click.option("--title", help="Human title (display_name falls back to the workflow)."),
        click.option("--tag", "tags", multiple=True, help="Tag; repeat for several."),
        click.option("--state", type=_JsonObject(), help="State as a JSON object."),
        click.option("--payload", type=_Json(), help="Payload (any JSON) each run gets."),
        click.option("--max-runs", type=click.IntRange(min=1), help="Stop after this many runs."),
        click.option("--expires-at", type=_Instant(), help="Stop at this ISO-8601 instant."),
        click.option("--max-usd", type=click.FloatRange(min=0), help="Budget per --budget-period."),
        click.option(
            "--budget-period",
            type=click.Choice(("day", "week", "month", "total")),
            help="Period of --max-usd (default month).",
        ),
        click.option(
            "--max-failures",
            type=click.IntRange(min=1),
            help="Disable after this many failures in a row.",
        ),
        click.option(
            "--overlap",
            type=click.Choice(("skip", "buffer_one", "allow")),
            help="A fire while the last still runs: skip it, keep one, or allow it.",
        ),
        click.option("--concurrency", type=click.IntRange(1, 100), help="Runs at once (1)."),
        click.option("--serialize-key", help="Runs of triggers sharing this key never overlap."),
        click.option("--secret-scope", help="Secrets are looked up as <scope>/NAME first."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _limits(
    *,
    max_runs: int | None,
    expires_at: str | None,
    max_usd: float | None,
    budget_period: str | None,
    max_failures: int | None,
) -> dict[str, Any]:
    given = {
        "max_runs": max_runs,
        "expires_at": expires_at,
        "max_usd": max_usd,
        "budget_period": budget_period,
        "max_failures": max_failures,
    }
    return {name: value for name, value in given.items() if value is not None}


def _settings(
    *,
    overlap: str | None,
    concurrency: int | None,
    serialize_key: str | None,
    secret_scope: str | None,
) -> dict[str, Any]:
    given = {
        "overlap": overlap,
        "concurrency": concurrency,
        "serialize_key": serialize_key,
        "secret_scope": secret_scope,
    }
    return {name: value for name, value in given.items() if value is not None}


def _one_time_secrets(answer: dict) -> dict[str, str]:
    """The secrets an answer shows once, by the name a person sees."""
    found = {}
    secret = (answer.get("webhook") or {}).get("secret")
    if secret:
        found["webhook secret"] = str(secret)
    if answer.get("outbound_secret"):
        found["outbound secret"] = str(answer["outbound_secret"])
    return found


def _warn_secrets(trigger: dict, secrets: dict[str, str]) -> None:
    if "webhook secret" in secrets:
        _warn(
            "the webhook secret is shown only this once; store it now "
            f"(rotate it with: cronhook rotate-secret {trigger.get('id')})"
        )
    if "outbound secret" in secrets:
        _warn(
            "the outbound signing secret (the http: target verifies with it) is shown only "
            "this once; store it now"
        )


@triggers.command("create")
@click.option("--workflow", required=True, help="Registered name, lambda:<name> or http:<url>.")
@_cadence_options
@click.option(
    "--webhook",
    type=click.Choice(WEBHOOK_SOURCES, case_sensitive=False),
    help="Run on signed events from this source.",
)
@click.option(
    "--eventbridge", "pattern", type=_JsonObject(), help="Run on EventBridge events matching it."
)
@click.option("--bus", help="EventBridge bus of --eventbridge (default: default).")
@click.option("--s3", "bucket", help="Run on objects created in this S3 bucket.")
@click.option("--prefix", help="Key prefix of --s3.")
@click.option("--suffix", help="Key suffix of --s3 (e.g. .csv).")
@click.option("--email", "address", help="Run on mail received for this address.")
@click.option(
    "--file", "on_file", is_flag=True, help="Run on files (see `cronhook watch DIR --trigger ID`)."
)
@click.option("--secret", help="Signing secret (required for stripe, slack, shopify, linkedin).")
@click.option("--filter", "event_filter", type=_JsonObject(), help="Event filter JSON object.")
@_setting_options
@click.option("--disabled", is_flag=True, help="Create it paused (enable it later).")
@global_options
@click.pass_context
def create_trigger(ctx: click.Context, as_json: bool, **given: Any) -> None:
    """Create a trigger: exactly one of --cron, --every, --at or --webhook."""
    body = build_create_body(
        workflow=given["workflow"],
        cron=given["cron"],
        tz=given["tz"],
        every_s=given["every"],
        at=given["at"],
        webhook=given["webhook"],
        source=_delivered_source(
            given["pattern"],
            given["bus"],
            given["bucket"],
            given["prefix"],
            given["suffix"],
            given["address"],
            given["on_file"],
        ),
        title=given["title"],
        tags=given["tags"],
        state=given["state"],
        secret=given["secret"],
        event_filter=given["event_filter"],
        max_failures=given["max_failures"],
        payload=given["payload"],
        max_runs=given["max_runs"],
        expires_at=given["expires_at"],
        max_usd=given["max_usd"],
        budget_period=given["budget_period"],
        overlap=given["overlap"],
        concurrency=given["concurrency"],
        serialize_key=given["serialize_key"],
        secret_scope=given["secret_scope"],
        dst_skipped=given["dst_skipped"],
        dst_repeated=given["dst_repeated"],
        disabled=given["disabled"],
    )
    trigger = _client(ctx).request("POST", "/v1/triggers", body=body)
    secrets = _one_time_secrets(trigger)
    _emit(ctx, trigger, as_json, lambda: _print_trigger(trigger, secrets=secrets))
    _warn_secrets(trigger, secrets)
    _warn_trigger(trigger)


def build_create_body(
    *,
    workflow: str,
    cron: str | None = None,
    tz: str | None = None,
    every_s: int | None = None,
    at: str | None = None,
    webhook: str | None = None,
    title: str | None = None,
    tags: tuple[str, ...] | list[str] = (),
    state: dict | None = None,
    secret: str | None = None,
    event_filter: dict | None = None,
    max_failures: int | None = None,
    payload: Any = None,
    max_runs: int | None = None,
    expires_at: str | None = None,
    max_usd: float | None = None,
    budget_period: str | None = None,
    overlap: str | None = None,
    concurrency: int | None = None,
    serialize_key: str | None = None,
    secret_scope: str | None = None,
    dst_skipped: str | None = None,
    dst_repeated: str | None = None,
    disabled: bool = False,
    source: dict | None = None,
) -> dict[str, Any]:
    """Build the ``POST /v1/triggers`` body; raise ``click.UsageError`` on a bad mix."""
    cadences = {"--cron": cron, "--every": every_s, "--at": at, "--webhook": webhook}
    if source is not None:
        cadences[source["flag"]] = source
    chosen = [name for name, value in cadences.items() if value is not None]
    if len(chosen) != 1:
        given = f" (got {', '.join(chosen)})" if chosen else ""
        _usage(
            "give exactly one of --cron, --every, --at or --webhook"
            f" (or --eventbridge, --s3, --email, --file){given}"
        )
    if tz is not None and cron is None:
        _usage("--tz only applies to --cron")
    if (dst_skipped is not None or dst_repeated is not None) and cron is None:
        _usage("--dst-skipped and --dst-repeated only apply to --cron")
    if secret is not None and webhook is None:
        _usage("--secret only applies to --webhook")
    if event_filter is not None and webhook is None and source is None:
        _usage("--filter only applies to event triggers (--webhook, --eventbridge, ...)")

    body: dict[str, Any] = {"workflow": workflow}
    if title is not None:
        body["title"] = title
    if tags:
        body["tags"] = list(tags)
    if cron is not None:
        body["schedule"] = {"cron": cron, "timezone": tz or "UTC"}
        dst = {"skipped": dst_skipped, "repeated": dst_repeated}
        if any(v is not None for v in dst.values()):
            body["schedule"]["dst"] = {k: v for k, v in dst.items() if v is not None}
    elif every_s is not None:
        body["schedule"] = {"interval_s": every_s}
    elif at is not None:
        body["schedule"] = {"at": at}
    elif source is not None:
        body["event"] = {k: v for k, v in source.items() if k != "flag"}
        if event_filter is not None:
            body["event"]["filter"] = event_filter
    else:
        event: dict[str, Any] = {"source": str(webhook).lower()}
        if secret is not None:
            event["secret"] = secret
        if event_filter is not None:
            event["filter"] = event_filter
        body["event"] = event
    if state is not None:
        body["state"] = state
    if payload is not None:
        body["payload"] = payload
    limits = _limits(
        max_runs=max_runs,
        expires_at=expires_at,
        max_usd=max_usd,
        budget_period=budget_period,
        max_failures=max_failures,
    )
    if limits:
        body["limits"] = limits
    body.update(
        _settings(
            overlap=overlap,
            concurrency=concurrency,
            serialize_key=serialize_key,
            secret_scope=secret_scope,
        )
    )
    if disabled:
        body["enabled"] = False
    return body


def build_update_body(given: dict[str, Any]) -> dict[str, Any]:
    """Build the ``PATCH /v1/triggers/{id}`` body from ``triggers update``'s options."""
    cadences = [n for n in ("cron", "every", "at") if given.get(n) is not None]
    if len(cadences) > 1:
        _usage("give at most one of --cron, --every or --at")
    body: dict[str, Any] = {}
    schedule: dict[str, Any] = {}
    if given.get("cron") is not None:
        schedule["cron"] = given["cron"]
    if given.get("every") is not None:
        schedule["interval_s"] = given["every"]
    if given.get("at") is not None:
        schedule["at"] = given["at"]
    if given.get("tz") is not None:
        schedule["timezone"] = given["tz"]
    dst = {"skipped": given.get("dst_skipped"), "repeated": given.get("dst_repeated")}
    if any(v is not None for v in dst.values()):
        schedule["dst"] = {k: v for k, v in dst.items() if v is not None}
    if schedule:
        body["schedule"] = schedule
    for name in ("title", "state", "payload"):
        if given.get(name) is not None:
            body[name] = given[name]
    if given.get("tags"):
        body["tags"] = list(given["tags"])
    if given.get("no_tags"):
        if given.get("tags"):
            _usage("give --tag or --no-tags, not both")
        body["tags"] = []
    limits = _limits(
        max_runs=given.get("max_runs"),
        expires_at=given.get("expires_at"),
        max_usd=given.get("max_usd"),
        budget_period=given.get("budget_period"),
        max_failures=given.get("max_failures"),
    )
    if limits:
        body["limits"] = limits
    body.update(
        _settings(
            overlap=given.get("overlap"),
            concurrency=given.get("concurrency"),
            serialize_key=given.get("serialize_key"),
            secret_scope=given.get("secret_scope"),
        )
    )
    if not body:
        _usage("nothing to change: give at least one option (see --help)")
    if given.get("if_version") is not None:
        body["version"] = given["if_version"]
    return body


def _delivered_source(
    pattern: dict | None,
    bus: str | None,
    bucket: str | None,
    prefix: str | None,
    suffix: str | None,
    address: str | None,
    on_file: bool,
) -> dict | None:
    """The ``event`` of --eventbridge, --s3, --email or --file (None if none was given)."""
    given = [
        flag
        for flag, value in (
            ("--eventbridge", pattern),
            ("--s3", bucket),
            ("--email", address),
            ("--file", on_file or None),
        )
        if value is not None
    ]
    if len(given) > 1:
        _usage(f"give one event source, not {', '.join(given)}")
    if bus is not None and pattern is None:
        _usage("--bus only applies to --eventbridge")
    if (prefix is not None or suffix is not None) and bucket is None:
        _usage("--prefix and --suffix only apply to --s3")
    if pattern is not None:
        return {"flag": "--eventbridge", "source": "eventbridge", "pattern": pattern, "bus": bus}
    if bucket is not None:
        event = {"flag": "--s3", "source": "s3", "bucket": bucket}
        return {
            **event,
            **({"prefix": prefix} if prefix else {}),
            **({"suffix": suffix} if suffix else {}),
        }
    if address is not None:
        return {"flag": "--email", "source": "email", "address": address}
    if on_file:
        return {"flag": "--file", "source": "file"}
    return None


def _trigger_path(trigger_id: str, action: str = "") -> str:
    if not trigger_id.strip() or "/" in trigger_id:
        _usage(f"{trigger_id!r} is not a trigger id")
    return f"/v1/triggers/{trigger_id}{action}"


def _id_path(kind: str, value: str, prefix: str, action: str = "") -> str:
    if not value.strip() or "/" in value:
        _usage(f"{value!r} is not {kind}")
    return f"{prefix}/{value}{action}"


@triggers.command("update")
@click.argument("trigger_id", metavar="ID")
@_cadence_options
@_setting_options
@click.option("--no-tags", is_flag=True, help="Remove every tag.")
@click.option(
    "--if-version",
    type=int,
    help="Only if the trigger is still at this version (else exit 1, 409).",
)
@global_options
@click.pass_context
def update_trigger(ctx: click.Context, trigger_id: str, as_json: bool, **given: Any) -> None:
    """Change a trigger in place: cadence, state, payload, limits, tags, title..."""
    body = build_update_body(given)
    trigger = _client(ctx).request("PATCH", _trigger_path(trigger_id), body=body)
    secrets = _one_time_secrets(trigger)
    _emit(ctx, trigger, as_json, lambda: _print_trigger(trigger, secrets=secrets))
    _warn_secrets(trigger, secrets)
    _warn_trigger(trigger)


@triggers.command("get")
@click.argument("trigger_id", metavar="ID")
@global_options
@click.pass_context
def get_trigger(ctx: click.Context, trigger_id: str, as_json: bool) -> None:
    """Show one trigger."""
    trigger = _client(ctx).request("GET", _trigger_path(trigger_id))
    _show_trigger(ctx, trigger, as_json=as_json)


@triggers.command("fire")
@click.argument("trigger_id", metavar="ID")
@click.option("--payload", type=_Json(), help="This run's payload (any JSON).")
@global_options
@click.pass_context
def fire_trigger(ctx: click.Context, trigger_id: str, payload: Any, as_json: bool) -> None:
    """Run a trigger now (surface "manual")."""
    body = {"payload": payload} if payload is not None else None
    answer = _client(ctx).request("POST", _trigger_path(trigger_id, "/fire"), body=body)
    run_id = (answer or {}).get("run_id")
    _emit(ctx, answer, as_json, lambda: _stdout().print(Text(f"Fired {trigger_id}: run {run_id}")))


@triggers.command("enable")
@click.argument("trigger_id", metavar="ID")
@global_options
@click.pass_context
def enable_trigger(ctx: click.Context, trigger_id: str, as_json: bool) -> None:
    """Enable a trigger (its next fire is computed from now)."""
    trigger = _client(ctx).request("POST", _trigger_path(trigger_id, "/enable"))
    _show_trigger(ctx, trigger, as_json=as_json)


@triggers.command("disable")
@click.argument("trigger_id", metavar="ID")
@click.option("--note", help="Why (shown on the trigger with who and when).")
@global_options
@click.pass_context
def disable_trigger(ctx: click.Context, trigger_id: str, note: str | None, as_json: bool) -> None:
    """Disable (pause) a trigger (reason "manual")."""
    body = {"note": note} if note is not None else None
    trigger = _client(ctx).request("POST", _trigger_path(trigger_id, "/disable"), body=body)
    _show_trigger(ctx, trigger, as_json=as_json)


@triggers.command("delete")
@click.argument("trigger_id", metavar="ID")
@global_options
@click.pass_context
def delete_trigger(ctx: click.Context, trigger_id: str, as_json: bool) -> None:
    """Delete a trigger."""
    _client(ctx).request("DELETE", _trigger_path(trigger_id))
    # The API answers 204 with no body; programs still get one document to parse.
    _emit(
        ctx,
        {"id": trigger_id, "deleted": True},
        as_json,
        lambda: _stdout().print(Text(f"Deleted {trigger_id}")),
    )


def _show_trigger(ctx: click.Context, trigger: dict, *, as_json: bool) -> None:
    _emit(ctx, trigger, as_json, lambda: _print_trigger(trigger))
    _warn_trigger(trigger)


def _switch(
    ctx: click.Context,
    *,
    enable: bool,
    ids: tuple[str, ...],
    tag: str | None,
    workflow: str | None,
    note: str | None,
    as_json: bool,
) -> None:
    if ids and (tag or workflow):
        _usage("give trigger ids, or --tag/--workflow, not both")
    if not ids and not (tag or workflow):
        _usage("give trigger ids, or --tag and/or --workflow")
    client = _client(ctx)
    action = "enable" if enable else "disable"
    if ids:
        body = {"note": note} if note is not None else None
        changed = [
            client.request("POST", _trigger_path(trigger_id, f"/{action}"), body=body)
            for trigger_id in ids
        ]
        answer: dict = {"changed": len(changed), "ids": [t.get("id") for t in changed]}
    else:
        body = {k: v for k, v in {"tag": tag, "workflow": workflow, "note": note}.items() if v}
        answer = client.request("POST", f"/v1/triggers/{action}", body=body)

    def table() -> None:
        verb = "Resumed" if enable else "Paused"
        ids_done = answer.get("ids") or []
        _stdout().print(Text(f"{verb} {len(ids_done)} trigger(s)"))
        for trigger_id in ids_done:
            _stdout().print(Text(f"  {trigger_id}"))
        for skipped in answer.get("skipped") or []:
            _warn(f"{skipped.get('id')} not resumed: {skipped.get('reason')}")

    _emit(ctx, answer, as_json, table)


def _switch_options(func: Callable) -> Callable:
    options = [
        click.argument("ids", metavar="[ID]...", nargs=-1),
        click.option("--tag", help="Every trigger with this tag."),
        click.option("--workflow", help="Every trigger of this workflow."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


@cli.command("pause")
@_switch_options
@click.option("--note", help="Why (shown on each trigger with who and when).")
@global_options
@click.pass_context
def pause(
    ctx: click.Context,
    ids: tuple[str, ...],
    tag: str | None,
    workflow: str | None,
    note: str | None,
    as_json: bool,
) -> None:
    """Pause triggers: by id, or all with a --tag and/or --workflow."""
    _switch(ctx, enable=False, ids=ids, tag=tag, workflow=workflow, note=note, as_json=as_json)


@cli.command("resume")
@_switch_options
@click.option("--note", help="Why (kept in the audit log).")
@global_options
@click.pass_context
def resume(
    ctx: click.Context,
    ids: tuple[str, ...],
    tag: str | None,
    workflow: str | None,
    note: str | None,
    as_json: bool,
) -> None:
    """Resume triggers: by id, or all with a --tag and/or --workflow."""
    _switch(ctx, enable=True, ids=ids, tag=tag, workflow=workflow, note=note, as_json=as_json)


@cli.command("backfill")
@click.argument("trigger_id", metavar="ID")
@click.option("--from", "from_at", type=_Instant(), required=True, help="First slot (ISO).")
@click.option("--to", "to_at", type=_Instant(), required=True, help="Last slot (ISO, past).")
@click.option("--dry-run", is_flag=True, help="Count the slots and estimate the cost only.")
@global_options
@click.pass_context
def backfill(
    ctx: click.Context, trigger_id: str, from_at: str, to_at: str, dry_run: bool, as_json: bool
) -> None:
    """Run the slots of a past window (at most 1,000); a slot that ran is not run again."""
    body: dict[str, Any] = {"from": from_at, "to": to_at}
    if dry_run:
        body["dry_run"] = True
    answer = _client(ctx).request("POST", _trigger_path(trigger_id, "/backfill"), body=body)

    def table() -> None:
        if dry_run:
            _pairs(
                [
                    ("slots", _cell(answer.get("slots"))),
                    ("first", _instant(answer.get("first"))),
                    ("last", _instant(answer.get("last"))),
                    ("already ran", _cell(answer.get("already_ran"))),
                    ("estimated usd", _cell(answer.get("estimated_usd"))),
                ]
            )
            return
        run_ids = answer.get("run_ids") or []
        _stdout().print(Text(f"Backfilling {answer.get('slots')} slot(s) of {trigger_id}"))
        for run_id in run_ids:
            _stdout().print(Text(f"  {run_id}"))

    _emit(ctx, answer, as_json, table)


@cli.command("rotate-secret")
@click.argument("trigger_id", metavar="ID")
@click.option("--secret", help="A provider-issued secret to use (else one is generated).")
@click.option(
    "--grace",
    "grace_s",
    type=click.IntRange(0, 7 * 86400),
    help="Seconds the old secret keeps verifying (86400).",
)
@global_options
@click.pass_context
def rotate_secret(
    ctx: click.Context, trigger_id: str, secret: str | None, grace_s: int | None, as_json: bool
) -> None:
    """Rotate an event trigger's signing secret (the new one is shown only this once)."""
    body = {k: v for k, v in {"secret": secret, "grace_s": grace_s}.items() if v is not None}
    answer = _client(ctx).request(
        "POST", _trigger_path(trigger_id, "/rotate-secret"), body=body or None
    )
    _emit(
        ctx,
        answer,
        as_json,
        lambda: _pairs(
            [
                ("secret", Text(str(answer.get("secret")), style="bold yellow")),
                ("old valid until", _instant(answer.get("previous_valid_until"))),
            ]
        ),
    )
    _warn("the new secret is shown only this once; store it now")


@cli.command(
    "runs",
    context_settings={"ignore_unknown_options": False},
)
@click.argument("args", metavar="[TRIGGER_ID | get RUN_ID]", nargs=-1)
@click.option("--surface", type=click.Choice(RUN_SURFACES), help="Only runs from this surface.")
@click.option("--status", type=click.Choice(RUN_STATUSES), help="Only runs with this status.")
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=DEFAULT_RUNS_LIMIT,
    show_default=True,
    help="Show at most this many runs.",
)
@global_options
@click.pass_context
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
        if len(args) != 2:
            _usage("runs get takes one RUN_ID")
        run = _client(ctx).request("GET", _id_path("a run id", args[1], "/v1/runs"))
        _emit(ctx, run, as_json, lambda: _print_run(run))
        return
    if len(args) > 1:
        _usage("runs takes at most one TRIGGER_ID")
    trigger_id = args[0] if args else None
    path = _trigger_path(trigger_id, "/runs") if trigger_id else "/v1/runs"
    wanted = {"surface": surface, "status": status}
    wanted = {name: value for name, value in wanted.items() if value is not None}

    # The contract names these filters on /v1/runs; applying them here as well keeps the
    # list right if a trigger's own runs route answers unfiltered.
    def keep(run: dict) -> bool:
        return all(run.get(name) == value for name, value in wanted.items())

    items, cursor = _client(ctx).pages(path, wanted, limit=limit, keep=keep)
    _emit(ctx, {"items": items, "next_cursor": cursor}, as_json, lambda: _print_runs(items))
    if cursor and _output(ctx, as_json) == "table":
        _stderr().print(f"(showing the newest {len(items)}; pass --limit for more)")


@cli.command("events")
@click.argument("trigger_id", metavar="ID")
@click.option("--status", help="Only events with this status (pending, failed...).")
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=DEFAULT_RUNS_LIMIT,
    show_default=True,
    help="Show at most this many.",
)
@global_options
@click.pass_context
def list_events(
    ctx: click.Context, trigger_id: str, status: str | None, limit: int, as_json: bool
) -> None:
    """An event trigger's received events, newest first."""
    items, cursor = _client(ctx).pages(
        _trigger_path(trigger_id, "/events"), {"status": status}, limit=limit
    )
    _emit(ctx, {"items": items, "next_cursor": cursor}, as_json, lambda: _print_events(items))


@cli.command("replay")
@click.argument("event_id", metavar="EVENT_ID")
@global_options
@click.pass_context
def replay(ctx: click.Context, event_id: str, as_json: bool) -> None:
    """Run a stored event again."""
    answer = _client(ctx).request(
        "POST", _id_path("an event id", event_id, "/v1/events", "/replay")
    )
    run_id = (answer or {}).get("run_id")
    _emit(ctx, answer, as_json, lambda: _stdout().print(Text(f"Replayed {event_id}: run {run_id}")))


@cli.command("audit")
@click.option("--trigger", "trigger_id", help="Only entries about this trigger.")
@click.option("--action", help="Only this action (create, update, disable...).")
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=50,
    show_default=True,
    help="Show at most this many.",
)
@global_options
@click.pass_context
def list_audit(
    ctx: click.Context, trigger_id: str | None, action: str | None, limit: int, as_json: bool
) -> None:
    """The audit log, newest first (admin)."""
    items, cursor = _client(ctx).pages(
        "/v1/audit", {"trigger_id": trigger_id, "action": action}, limit=limit
    )
    _emit(ctx, {"items": items, "next_cursor": cursor}, as_json, lambda: _print_audit(items))


@cli.command("workflows")
@global_options
@click.pass_context
def list_workflows(ctx: click.Context, as_json: bool) -> None:
    """The registered workflows."""
    items, _ = _client(ctx).pages("/v1/workflows", {})
    _emit(ctx, {"items": items, "next_cursor": None}, as_json, lambda: _print_workflows(items))


@cli.command("preview")
@click.argument("expr", metavar='"EXPR"')
@click.option("--tz", default="UTC", show_default=True, help="IANA time zone of EXPR.")
@click.option(
    "--from", "from_at", type=_Instant(), help="Start after this ISO instant (default now)."
)
@click.option(
    "--count",
    type=click.IntRange(min=1),
    default=DEFAULT_PREVIEW_COUNT,
    show_default=True,
    help="How many fires to show.",
)
@global_options
@click.pass_context
def preview(
    ctx: click.Context, expr: str, tz: str, from_at: str | None, count: int, as_json: bool
) -> None:
    """Show the next fire times of a cron expression."""
    # The command line is the edge: "now" is read here once and sent, never on the server.
    start_at = from_at or datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    body = {"cron": expr, "timezone": tz, "from": start_at, "count": count}
    answer = _client(ctx).request("POST", "/v1/schedules/preview", body=body) or {}

    def table() -> None:
        if answer.get("cadence"):
            _stdout().print(Text(str(answer["cadence"])))
        _print_fires(answer.get("fires") or [], tz, dst=answer.get("dst") or [])

    _emit(ctx, answer, as_json, table)


def _print_fires(fires: list[str], tz: str, *, dst: list | None = None) -> None:
    try:
        zone: ZoneInfo | None = ZoneInfo(tz) if tz.upper() != "UTC" else None
    except (ZoneInfoNotFoundError, ValueError):
        zone = None  # the server knew it; this machine's tzdata may not
    table = Table(box=None, header_style="bold", pad_edge=False)
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
        row = [Text(str(number)), _cell(fire)]
        if zone is not None:
            try:
                local = datetime.fromisoformat(fire).astimezone(zone).isoformat()
            except (TypeError, ValueError):
                local = None
            row.append(_cell(local))
        if marks:
            mark = marks.get(fire)
            row.append(Text(f"{mark['change']} ({mark['policy']})" if mark else ""))
        table.add_row(*row)
    console = _stdout()
    if fires:
        console.print(table)
    else:
        console.print("No fires.")
    for at, mark in marks.items():
        if at not in fires:
            console.print(Text(f"DST: {mark.get('change')} at {at} (policy {mark.get('policy')})"))


@cli.group()
def keys() -> None:
    """Create, list and delete API keys (admin)."""


@keys.command("create")
@click.option("--role", type=click.Choice(ROLES), required=True, help="Role of the new key.")
@click.option("--tenant", help="Tenant of the new key (only the root key may set it).")
@global_options
@click.pass_context
def create_key(ctx: click.Context, role: str, tenant: str | None, as_json: bool) -> None:
    """Create an API key; the key itself is shown only this once."""
    body: dict[str, Any] = {"role": role}
    if tenant is not None:
        body["tenant"] = tenant
    answer = _client(ctx).request("POST", "/v1/keys", body=body)
    _emit(
        ctx,
        answer,
        as_json,
        lambda: _pairs(
            [(name, _cell(answer.get(name))) for name in ("id", "tenant", "role")]
            + [("key", Text(str(answer.get("key")), style="bold yellow"))]
        ),
    )
    _warn("the key is shown only this once; store it now")


@keys.command("list")
@click.option("--tenant", help="Another tenant's keys (root key only).")
@global_options
@click.pass_context
def list_keys(ctx: click.Context, tenant: str | None, as_json: bool) -> None:
    """The tenant's API keys (never the keys themselves)."""
    items, _ = _client(ctx).pages("/v1/keys", {"tenant": tenant})
    _emit(ctx, {"items": items, "next_cursor": None}, as_json, lambda: _print_keys(items))


@keys.command("delete")
@click.argument("key_id", metavar="KEY_ID")
@global_options
@click.pass_context
def delete_key(ctx: click.Context, key_id: str, as_json: bool) -> None:
    """Delete an API key (it stops working at once)."""
    _client(ctx).request("DELETE", _id_path("a key id", key_id, "/v1/keys"))
    _emit(
        ctx,
        {"id": key_id, "deleted": True},
        as_json,
        lambda: _stdout().print(Text(f"Deleted {key_id}")),
    )


# --------------------------------------------------------------------------- docs

REFERENCE_BEGIN = "<!-- reference: generated by chalicelib.cli.render_reference; do not edit -->"
REFERENCE_END = "<!-- end of reference -->"


def _leaves(group: click.Group, prefix: list[str]) -> list[tuple[list[str], click.Command]]:
    found: list[tuple[list[str], click.Command]] = []
    for name in sorted(group.commands):
        command = group.commands[name]
        if isinstance(command, click.Group):
            found += _leaves(command, [*prefix, name])
        else:
            found.append(([*prefix, name], command))
    return found


_GLOBAL_PARAMS = {"help", "as_json", "output", "url", "api_key", "timeout"}


def render_reference() -> str:
    """The command reference of docs/cli.md: every command, its arguments and options."""
    lines = [
        REFERENCE_BEGIN,
        "",
        "## Reference",
        "",
        "Every command also takes the global options after its name: `--json`, "
        "`-o/--output table|json|yaml`, `--url`, `--api-key` and `--timeout`.",
        "",
    ]
    for path, command in _leaves(cli, []):
        ctx = click.Context(command, info_name=" ".join(["cronhook", *path]))
        lines += [f"### `cronhook {' '.join(path)}`", ""]
        lines += ["```", command.get_usage(ctx).replace("Usage: ", ""), "```", ""]
        lines += [(command.help or "").strip().split("\n\n")[0].replace("\n", " "), ""]
        rows = []
        for param in command.get_params(ctx):
            if isinstance(param, click.Argument) or param.name in _GLOBAL_PARAMS:
                continue
            record = param.get_help_record(ctx)
            if record is None or "--help" in record[0]:
                continue
            names, text = (part.replace("|", "\\|") for part in record)
            rows.append(f"| `{names}` | {text} |")
        if rows:
            lines += ["| option | meaning |", "|---|---|", *rows, ""]
    lines.append(REFERENCE_END)
    return "\n".join(lines) + "\n"


def write_reference() -> None:
    """Replace the reference at the end of docs/cli.md with ``render_reference()``."""
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
    text = path.read_text()
    head = text.split(REFERENCE_BEGIN)[0].rstrip("\n")
    path.write_text(head + "\n\n" + render_reference())


@cli.command("watch")
@click.argument("directory", metavar="DIR", type=click.Path(file_okay=False))
@click.option("--trigger", "trigger_id", required=True, help="A trigger with event.source file.")
@click.option(
    "--data-dir",
    envvar="CRONHOOK_DATA_DIR",
    default=".cronhook",
    show_default=True,
    help="The local stack's data dir (CRONHOOK_DATA_DIR), where the list of watches is kept.",
)
@click.pass_context
def watch(ctx: click.Context, directory: str, trigger_id: str, data_dir: str) -> None:
    """Run a file trigger for each file written to DIR (the local stack watches it).

    A file is one event once its writes have settled; the watch survives restarts of the
    stack; if DIR disappears the trigger is disabled (source_gone).
    """
    from pathlib import Path

    from chalicelib.sources.files import add_watch

    trigger = _client(ctx).request("GET", _trigger_path(trigger_id))
    source = (trigger.get("event") or {}).get("source")
    if source != "file":
        _usage(f"trigger {trigger_id} has event.source {source!r}; create one with --file")
    if not Path(directory).is_dir():
        _usage(f"{directory} is not a directory")
    added = add_watch(Path(data_dir), directory, trigger_id)
    click.echo(
        f"watching {added.directory} for trigger {trigger_id} (kept in {data_dir}/watches.json)"
    )


def main() -> None:
    """Entry point of the ``cronhook`` console script."""
    try:
        # Standalone mode maps click's errors to exit 2 (usage) and ApiError to exit 1.
        cli.main(prog_name="cronhook")
    except Exception as exc:  # a bug of ours: still a message, not a traceback
        click.echo(f"Error: unexpected failure: {type(exc).__name__}: {exc}", err=True)
        sys.exit(1)


if __name__ == "__main__":  # pragma: no cover
    main()
