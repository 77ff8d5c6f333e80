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

WEBHOOK_SOURCES = ("webhook", "github", "stripe", "slack", "standard", "shopify")
ROLES = ("viewer", "operator", "admin")
TRIGGER_STATUSES = ("active", "disabled")
RUN_SURFACES = ("schedule", "event", "manual")
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


def _stdout() -> Console:
    # Built per call so it writes to whatever sys.stdout is now (pipes, test runners).
    return Console(highlight=False)


def _stderr() -> Console:
    return Console(stderr=True, highlight=False)


def _emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def _warn(message: str) -> None:
    _stderr().print(Text(f"warning: {message}", style="yellow"))


def _cell(value: Any) -> Text:
    # Text, not str: a title like "[red]x" must print as typed, not as rich markup.
    return Text("-" if value is None or value == "" else str(value))


_STATUS_STYLE = {
    "active": "green",
    "succeeded": "green",
    "running": "cyan",
    "queued": "cyan",
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


def _print_triggers(triggers: list[dict]) -> None:
    table = Table(box=None, header_style="bold", pad_edge=False)
    table.add_column("ID", no_wrap=True)
    for name in ("NAME", "KIND", "CADENCE", "STATUS", "NEXT FIRE", "LAST RUN"):
        table.add_column(name)
    for trigger in triggers:
        table.add_row(
            _cell(trigger.get("id")),
            _cell(trigger.get("display_name")),
            _cell(trigger.get("kind")),
            _cell(trigger.get("cadence")),
            _status(trigger.get("status"), trigger.get("disabled_reason")),
            _cell(trigger.get("next_fire_at")),
            _last_run_status(trigger),
        )
    console = _stdout()
    if triggers:
        console.print(table)
    else:
        console.print("No triggers.")


def _print_trigger(trigger: dict, *, webhook_secret: str | None = None) -> None:
    last_run = trigger.get("last_run") or {}
    last = None
    if last_run:
        last = " ".join(
            str(part)
            for part in (last_run.get("status"), last_run.get("finished_at"), last_run.get("id"))
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
        ("next fire", _cell(trigger.get("next_fire_at"))),
        ("last run", _cell(last)),
        ("runs", _cell(trigger.get("run_count"))),
        ("failures in a row", _cell(trigger.get("consecutive_failures"))),
        ("tags", _cell(", ".join(trigger.get("tags") or []))),
    ]
    # On create the contract nests the URL with the one-time secret under "webhook".
    hook_url = trigger.get("webhook_url") or (trigger.get("webhook") or {}).get("url")
    if hook_url:
        rows.append(("webhook url", _cell(hook_url)))
    if webhook_secret:
        rows.append(("webhook secret", Text(webhook_secret, style="bold yellow")))
    rows.append(("created", _cell(trigger.get("created_at"))))
    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    for name, value in rows:
        table.add_row(name, value)
    _stdout().print(table)


def _warn_trigger(trigger: dict) -> None:
    for warning in trigger.get("warnings") or []:
        _warn(str(warning))


def _print_runs(runs: list[dict]) -> None:
    table = Table(box=None, header_style="bold", pad_edge=False)
    table.add_column("ID", no_wrap=True)
    table.add_column("TRIGGER", no_wrap=True)
    for name in ("SURFACE", "STATUS", "SCHEDULED FOR"):
        table.add_column(name)
    table.add_column("LATENESS MS", justify="right")
    table.add_column("ERROR")
    for run in runs:
        error = run.get("error")
        if error:
            error = str(error).splitlines()[0][:80] if str(error).strip() else None
        table.add_row(
            _cell(run.get("id")),
            _cell(run.get("trigger_id")),
            _cell(run.get("surface")),
            _status(run.get("status")),
            _cell(run.get("scheduled_for")),
            _cell(run.get("lateness_ms")),
            _cell(error),
        )
    console = _stdout()
    if runs:
        console.print(table)
    else:
        console.print("No runs.")


# --------------------------------------------------------------------------- commands


def _client(ctx: click.Context) -> Client:
    client = ctx.find_object(Client)
    assert client is not None, "the cli group callback builds the client"
    return client


def _usage(message: str) -> NoReturn:
    raise click.UsageError(message)


json_option = click.option("--json", "as_json", is_flag=True, help="Print the raw JSON answer.")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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
@click.pass_context
def cli(ctx: click.Context, url: str, api_key: str | None, timeout_s: float) -> None:
    """Manage cronhook triggers and runs from the command line."""
    ctx.obj = Client(url, api_key or None, timeout_s=timeout_s)


@cli.group()
def triggers() -> None:
    """Create, list and manage triggers."""


@triggers.command("list")
@click.option("--tag", help="Only triggers with this tag.")
@click.option("--workflow", help="Only triggers of this workflow.")
@click.option("--status", type=click.Choice(TRIGGER_STATUSES), help="Only this status.")
@json_option
@click.pass_context
def list_triggers(
    ctx: click.Context, tag: str | None, workflow: str | None, status: str | None, as_json: bool
) -> None:
    """List triggers, following every page."""
    items, _ = _client(ctx).pages(
        "/v1/triggers", {"tag": tag, "workflow": workflow, "status": status}
    )
    if as_json:
        _emit_json({"items": items, "next_cursor": None})
    else:
        _print_triggers(items)


@triggers.command("create")
@click.option("--workflow", required=True, help="Registered name, lambda:<name> or http:<url>.")
@click.option("--cron", help="Cron expression, e.g. '0 8 * * 1'.")
@click.option("--tz", help="IANA time zone of --cron (default UTC).")
@click.option("--every", type=_Every(), help="Interval: 90s, 15m, 1h, 2d or 1h30m.")
@click.option("--at", "at", type=_Instant(), help="Run once at this ISO-8601 instant.")
@click.option(
    "--webhook",
    type=click.Choice(WEBHOOK_SOURCES, case_sensitive=False),
    help="Run on signed events from this source.",
)
@click.option("--title", help="Human title (display_name falls back to the workflow).")
@click.option("--tag", "tags", multiple=True, help="Tag; repeat for several.")
@click.option("--state", type=_JsonObject(), help="Initial state as a JSON object.")
@click.option("--secret", help="Signing secret (required for stripe, slack, shopify).")
@click.option("--filter", "event_filter", type=_JsonObject(), help="Event filter JSON object.")
@click.option(
    "--max-failures",
    type=click.IntRange(min=1),
    help="Disable after this many failures in a row.",
)
@json_option
@click.pass_context
def create_trigger(
    ctx: click.Context,
    workflow: str,
    cron: str | None,
    tz: str | None,
    every: int | None,
    at: str | None,
    webhook: str | None,
    title: str | None,
    tags: tuple[str, ...],
    state: dict | None,
    secret: str | None,
    event_filter: dict | None,
    max_failures: int | None,
    as_json: bool,
) -> None:
    """Create a trigger: exactly one of --cron, --every, --at or --webhook."""
    body = build_create_body(
        workflow=workflow,
        cron=cron,
        tz=tz,
        every_s=every,
        at=at,
        webhook=webhook,
        title=title,
        tags=tags,
        state=state,
        secret=secret,
        event_filter=event_filter,
        max_failures=max_failures,
    )
    trigger = _client(ctx).request("POST", "/v1/triggers", body=body)
    webhook_info = trigger.get("webhook") or {}
    one_time_secret = webhook_info.get("secret")
    if as_json:
        _emit_json(trigger)
    else:
        _print_trigger(trigger, webhook_secret=one_time_secret)
    if one_time_secret:
        _warn(
            "the webhook secret is shown only this once; store it now "
            f"(rotate it with POST /v1/triggers/{trigger.get('id')}/rotate-secret)"
        )
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
) -> dict[str, Any]:
    """Build the ``POST /v1/triggers`` body; raise ``click.UsageError`` on a bad mix."""
    cadences = {"--cron": cron, "--every": every_s, "--at": at, "--webhook": webhook}
    chosen = [name for name, value in cadences.items() if value is not None]
    if len(chosen) != 1:
        given = f" (got {', '.join(chosen)})" if chosen else ""
        _usage(f"give exactly one of --cron, --every, --at or --webhook{given}")
    if tz is not None and cron is None:
        _usage("--tz only applies to --cron")
    if (secret is not None or event_filter is not None) and webhook is None:
        _usage("--secret and --filter only apply to --webhook")

    body: dict[str, Any] = {"workflow": workflow}
    if title is not None:
        body["title"] = title
    if tags:
        body["tags"] = list(tags)
    if cron is not None:
        body["schedule"] = {"cron": cron, "timezone": tz or "UTC"}
    elif every_s is not None:
        body["schedule"] = {"interval_s": every_s}
    elif at is not None:
        body["schedule"] = {"at": at}
    else:
        event: dict[str, Any] = {"source": str(webhook).lower()}
        if secret is not None:
            event["secret"] = secret
        if event_filter is not None:
            event["filter"] = event_filter
        body["event"] = event
    if state is not None:
        body["state"] = state
    if max_failures is not None:
        body["limits"] = {"max_failures": max_failures}
    return body


def _trigger_path(trigger_id: str, action: str = "") -> str:
    if not trigger_id.strip() or "/" in trigger_id:
        _usage(f"{trigger_id!r} is not a trigger id")
    return f"/v1/triggers/{trigger_id}{action}"


@triggers.command("get")
@click.argument("trigger_id", metavar="ID")
@json_option
@click.pass_context
def get_trigger(ctx: click.Context, trigger_id: str, as_json: bool) -> None:
    """Show one trigger."""
    trigger = _client(ctx).request("GET", _trigger_path(trigger_id))
    _show_trigger(trigger, as_json=as_json)


@triggers.command("fire")
@click.argument("trigger_id", metavar="ID")
@json_option
@click.pass_context
def fire_trigger(ctx: click.Context, trigger_id: str, as_json: bool) -> None:
    """Run a trigger now (surface "manual")."""
    answer = _client(ctx).request("POST", _trigger_path(trigger_id, "/fire"))
    if as_json:
        _emit_json(answer)
    else:
        run_id = (answer or {}).get("run_id")
        _stdout().print(Text(f"Fired {trigger_id}: run {run_id}"))


@triggers.command("enable")
@click.argument("trigger_id", metavar="ID")
@json_option
@click.pass_context
def enable_trigger(ctx: click.Context, trigger_id: str, as_json: bool) -> None:
    """Enable a trigger (its next fire is computed from now)."""
    trigger = _client(ctx).request("POST", _trigger_path(trigger_id, "/enable"))
    _show_trigger(trigger, as_json=as_json)


@triggers.command("disable")
@click.argument("trigger_id", metavar="ID")
@json_option
@click.pass_context
def disable_trigger(ctx: click.Context, trigger_id: str, as_json: bool) -> None:
    """Disable a trigger (reason "manual")."""
    trigger = _client(ctx).request("POST", _trigger_path(trigger_id, "/disable"))
    _show_trigger(trigger, as_json=as_json)


@triggers.command("delete")
@click.argument("trigger_id", metavar="ID")
@json_option
@click.pass_context
def delete_trigger(ctx: click.Context, trigger_id: str, as_json: bool) -> None:
    """Delete a trigger."""
    _client(ctx).request("DELETE", _trigger_path(trigger_id))
    # The API answers 204 with no body; programs still get one JSON document to parse.
    if as_json:
        _emit_json({"id": trigger_id, "deleted": True})
    else:
        _stdout().print(Text(f"Deleted {trigger_id}"))


def _show_trigger(trigger: dict, *, as_json: bool) -> None:
    if as_json:
        _emit_json(trigger)
    else:
        _print_trigger(trigger)
    _warn_trigger(trigger)


@cli.command("runs")
@click.argument("trigger_id", metavar="[TRIGGER_ID]", required=False)
@click.option("--surface", type=click.Choice(RUN_SURFACES), help="Only runs from this surface.")
@click.option("--status", type=click.Choice(RUN_STATUSES), help="Only runs with this status.")
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=DEFAULT_RUNS_LIMIT,
    show_default=True,
    help="Show at most this many runs.",
)
@json_option
@click.pass_context
def list_runs(
    ctx: click.Context,
    trigger_id: str | None,
    surface: str | None,
    status: str | None,
    limit: int,
    as_json: bool,
) -> None:
    """List runs, newest first: of one trigger, or of all."""
    path = _trigger_path(trigger_id, "/runs") if trigger_id else "/v1/runs"
    wanted = {"surface": surface, "status": status}
    wanted = {name: value for name, value in wanted.items() if value is not None}

    # The contract names these filters on /v1/runs; applying them here as well keeps the
    # list right if a trigger's own runs route answers unfiltered.
    def keep(run: dict) -> bool:
        return all(run.get(name) == value for name, value in wanted.items())

    items, cursor = _client(ctx).pages(path, wanted, limit=limit, keep=keep)
    if as_json:
        _emit_json({"items": items, "next_cursor": cursor})
        return
    _print_runs(items)
    if cursor:
        _stderr().print(f"(showing the newest {len(items)}; pass --limit for more)")


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
@json_option
@click.pass_context
def preview(
    ctx: click.Context, expr: str, tz: str, from_at: str | None, count: int, as_json: bool
) -> None:
    """Show the next fire times of a cron expression."""
    # The command line is the edge: "now" is read here once and sent, never on the server.
    start_at = from_at or datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    body = {"cron": expr, "timezone": tz, "from": start_at, "count": count}
    answer = _client(ctx).request("POST", "/v1/schedules/preview", body=body)
    if as_json:
        _emit_json(answer)
        return
    answer = answer or {}
    if answer.get("cadence"):
        _stdout().print(Text(str(answer["cadence"])))
    _print_fires(answer.get("fires") or [], tz)


def _print_fires(fires: list[str], tz: str) -> None:
    try:
        zone: ZoneInfo | None = ZoneInfo(tz) if tz.upper() != "UTC" else None
    except (ZoneInfoNotFoundError, ValueError):
        zone = None  # the server knew it; this machine's tzdata may not
    table = Table(box=None, header_style="bold", pad_edge=False)
    table.add_column("#", justify="right")
    table.add_column("UTC")
    if zone is not None:
        table.add_column(tz)
    for number, fire in enumerate(fires, start=1):
        row = [Text(str(number)), _cell(fire)]
        if zone is not None:
            try:
                local = datetime.fromisoformat(fire).astimezone(zone).isoformat()
            except (TypeError, ValueError):
                local = None
            row.append(_cell(local))
        table.add_row(*row)
    console = _stdout()
    if fires:
        console.print(table)
    else:
        console.print("No fires.")


@cli.group()
def keys() -> None:
    """Create API keys (admin)."""


@keys.command("create")
@click.option("--role", type=click.Choice(ROLES), required=True, help="Role of the new key.")
@click.option("--tenant", help="Tenant of the new key (only the root key may set it).")
@json_option
@click.pass_context
def create_key(ctx: click.Context, role: str, tenant: str | None, as_json: bool) -> None:
    """Create an API key; the key itself is shown only this once."""
    body: dict[str, Any] = {"role": role}
    if tenant is not None:
        body["tenant"] = tenant
    answer = _client(ctx).request("POST", "/v1/keys", body=body)
    if as_json:
        _emit_json(answer)
    else:
        table = Table(box=None, show_header=False, pad_edge=False)
        table.add_column(style="bold", no_wrap=True)
        table.add_column()
        for name in ("id", "tenant", "role", "key"):
            table.add_row(name, _cell(answer.get(name)))
        _stdout().print(table)
    _warn("the key is shown only this once; store it now")


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
