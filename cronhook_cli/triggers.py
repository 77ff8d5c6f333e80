"""``cronhook triggers ...``: create, list, show, change, fire, pause and delete triggers."""

from __future__ import annotations

from typing import Any

import click

from cronhook_cli.bodies import build_create_body, build_update_body
from cronhook_cli.context import client_of, command, delete, stack, trigger_path
from cronhook_cli.output import emit, emit_page, say
from cronhook_cli.parsing import EVERY, INSTANT, JSON, JSON_OBJECT
from cronhook_cli.trigger_views import print_triggers, show_trigger

__all__ = ["TRIGGER_STATUSES", "WEBHOOK_SOURCES", "triggers"]

WEBHOOK_SOURCES = ("webhook", "github", "stripe", "slack", "standard", "shopify", "linkedin")
TRIGGER_STATUSES = ("active", "disabled")

_ID = click.argument("trigger_id", metavar="ID")

_cadence_options = stack(
    click.option("--cron", help="Cron expression, e.g. '0 8 * * 1'."),
    click.option("--tz", help="IANA time zone of --cron (default UTC)."),
    click.option("--every", type=EVERY, help="Interval: 90s, 15m, 1h, 2d or 1h30m."),
    click.option("--at", "at", type=INSTANT, help="Run once at this ISO-8601 instant."),
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
)

_setting_options = stack(
    click.option("--title", help="Human title (display_name falls back to the workflow)."),
    click.option("--tag", "tags", multiple=True, help="Tag; repeat for several."),
    click.option("--state", type=JSON_OBJECT, help="State as a JSON object."),
    click.option("--payload", type=JSON, help="Payload (any JSON) each run gets."),
    click.option("--max-runs", type=click.IntRange(min=1), help="Stop after this many runs."),
    click.option("--expires-at", type=INSTANT, help="Stop at this ISO-8601 instant."),
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
        type=click.Choice(("skip", "buffer_one", "buffer_all", "allow")),
        help="A fire while the last still runs: skip it, keep one, or allow it.",
    ),
    click.option("--concurrency", type=click.IntRange(1, 100), help="Runs at once (1)."),
    click.option("--serialize-key", help="Runs of triggers sharing this key never overlap."),
    click.option("--secret-scope", help="Secrets are looked up as <scope>/NAME first."),
    click.option(
        "--history",
        type=click.Choice(("full", "failures")),
        help="Record every run (full), or only runs that did not succeed (failures).",
    ),
)

_event_options = stack(
    click.option(
        "--webhook",
        type=click.Choice(WEBHOOK_SOURCES, case_sensitive=False),
        help="Run on signed events from this source.",
    ),
    click.option(
        "--eventbridge", "pattern", type=JSON_OBJECT, help="Run on EventBridge events matching it."
    ),
    click.option("--bus", help="EventBridge bus of --eventbridge (default: default)."),
    click.option("--s3", "bucket", help="Run on objects created in this S3 bucket."),
    click.option("--prefix", help="Key prefix of --s3."),
    click.option("--suffix", help="Key suffix of --s3 (e.g. .csv)."),
    click.option("--email", "address", help="Run on mail received for this address."),
    click.option(
        "--file",
        "on_file",
        is_flag=True,
        help="Run on files (see `cronhook watch DIR --trigger ID`).",
    ),
    click.option(
        "--secret", help="Signing secret (required for stripe, slack, shopify, linkedin)."
    ),
    click.option("--filter", "event_filter", type=JSON_OBJECT, help="Event filter JSON object."),
)


@click.group()
def triggers() -> None:
    """Create, list and manage triggers."""


@command(
    "list",
    click.option("--tag", help="Only triggers with this tag."),
    click.option("--workflow", help="Only triggers of this workflow."),
    click.option("--status", type=click.Choice(TRIGGER_STATUSES), help="Only this status."),
    group=triggers,
)
def list_triggers(
    ctx: click.Context, tag: str | None, workflow: str | None, status: str | None, as_json: bool
) -> None:
    """List triggers, following every page."""
    items, _ = client_of(ctx).pages(
        "/v1/triggers", {"tag": tag, "workflow": workflow, "status": status}
    )
    emit_page(ctx, items, None, as_json, print_triggers)


@command(
    "create",
    click.option("--workflow", required=True, help="Registered name, lambda:<name> or http:<url>."),
    _cadence_options,
    _event_options,
    _setting_options,
    click.option("--disabled", is_flag=True, help="Create it paused (enable it later)."),
    group=triggers,
)
def create_trigger(ctx: click.Context, as_json: bool, **given: Any) -> None:
    """Create a trigger: exactly one of --cron, --every, --at or --webhook."""
    trigger = client_of(ctx).request("POST", "/v1/triggers", body=build_create_body(given))
    show_trigger(ctx, trigger, as_json=as_json, with_secrets=True)


@command(
    "update",
    _ID,
    _cadence_options,
    _setting_options,
    click.option("--no-tags", is_flag=True, help="Remove every tag."),
    click.option(
        "--if-version",
        type=int,
        help="Only if the trigger is still at this version (else exit 1, 409).",
    ),
    group=triggers,
)
def update_trigger(ctx: click.Context, trigger_id: str, as_json: bool, **given: Any) -> None:
    """Change a trigger in place: cadence, state, payload, limits, tags, title..."""
    body = build_update_body(given)
    trigger = client_of(ctx).request("PATCH", trigger_path(trigger_id), body=body)
    show_trigger(ctx, trigger, as_json=as_json, with_secrets=True)


@command("get", _ID, group=triggers)
def get_trigger(ctx: click.Context, trigger_id: str, as_json: bool) -> None:
    """Show one trigger."""
    trigger = client_of(ctx).request("GET", trigger_path(trigger_id))
    show_trigger(ctx, trigger, as_json=as_json)


@command(
    "fire",
    _ID,
    click.option("--payload", type=JSON, help="This run's payload (any JSON)."),
    click.option(
        "--if-idle", is_flag=True, help="Refuse (409) instead of queueing when the trigger is busy."
    ),
    group=triggers,
)
def fire_trigger(
    ctx: click.Context, trigger_id: str, payload: Any, if_idle: bool, as_json: bool
) -> None:
    """Run a trigger now (surface "manual"); on a busy trigger the run waits its turn."""
    body: dict | None = {"payload": payload} if payload is not None else None
    if if_idle:
        body = {**(body or {}), "if_idle": True}
    answer = client_of(ctx).request("POST", trigger_path(trigger_id, "/fire"), body=body)
    run_id = (answer or {}).get("run_id")
    waits = " (the trigger is busy: it waits its turn)" if (answer or {}).get("queued") else ""
    emit(ctx, answer, as_json, lambda: say(f"Fired {trigger_id}: run {run_id}{waits}"))


@command("enable", _ID, group=triggers)
def enable_trigger(ctx: click.Context, trigger_id: str, as_json: bool) -> None:
    """Enable a trigger (its next fire is computed from now)."""
    trigger = client_of(ctx).request("POST", trigger_path(trigger_id, "/enable"))
    show_trigger(ctx, trigger, as_json=as_json)


@command(
    "disable",
    _ID,
    click.option("--note", help="Why (shown on the trigger with who and when)."),
    group=triggers,
)
def disable_trigger(ctx: click.Context, trigger_id: str, note: str | None, as_json: bool) -> None:
    """Disable (pause) a trigger (reason "manual")."""
    body = {"note": note} if note is not None else None
    trigger = client_of(ctx).request("POST", trigger_path(trigger_id, "/disable"), body=body)
    show_trigger(ctx, trigger, as_json=as_json)


@command("delete", _ID, group=triggers)
def delete_trigger(ctx: click.Context, trigger_id: str, as_json: bool) -> None:
    """Delete a trigger."""
    delete(ctx, trigger_path(trigger_id), trigger_id, as_json=as_json)
