"""``cronhook alerts ...``: alert policies, their test sends and their notifications."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
import yaml

from cronhook_cli.context import client_of, command, delete, id_path, usage
from cronhook_cli.output import (
    Column,
    at,
    cell,
    emit,
    emit_page,
    emit_secret,
    field,
    print_list,
    say,
    secret,
)

__all__ = ["alerts", "alert_body", "KINDS"]

KINDS = ("failed", "disabled", "recovered", "late", "no_event", "budget")


def _channels(row: dict) -> Any:
    names = []
    for c in row.get("channels") or []:
        target = c.get("to") or c.get("host") or c.get("url") or c.get("topic_arn") or ""
        if isinstance(target, list):
            target = ",".join(target)
        names.append(f"{c.get('type')}:{target}")
    return cell(" ".join(names) or "(bus only)")


def _match(row: dict) -> Any:
    match = row.get("match") or {}
    parts = [f"{k}={','.join(v)}" for k, v in match.items() if v]
    return cell(" ".join(parts) or "every trigger")


_POLICY_COLUMNS = (
    Column("ID", field("id"), whole=True),
    Column("NAME", field("name")),
    Column("ON", lambda row: cell(",".join(row.get("on") or []))),
    Column("MATCH", _match),
    Column("CHANNELS", _channels),
)
_NOTIFICATION_COLUMNS = (
    Column("AT", at("at"), whole=True),
    Column("KIND", field("kind")),
    Column("TRIGGER", field("trigger_id"), whole=True),
    Column("CHANNEL", field("channel")),
    Column("OUTCOME", field("outcome")),
    Column("ERROR", field("error")),
)


@click.group()
def alerts() -> None:
    """Alert policies: who is told when triggers fail, stop, run late or hear nothing."""


@command("list", group=alerts)
def list_alerts(ctx: click.Context, as_json: bool) -> None:
    """The tenant's alert policies (Slack URLs and signing secrets are never shown)."""
    items, cursor = client_of(ctx).pages("/v1/alerts", {})  # every page
    emit_page(
        ctx,
        items,
        cursor,
        as_json,
        lambda rows: print_list(rows, "No alert policies.", _POLICY_COLUMNS),
    )


def alert_body(
    *,
    name: str | None,
    on: tuple[str, ...],
    tags: tuple[str, ...],
    workflows: tuple[str, ...],
    trigger_ids: tuple[str, ...],
    email: tuple[str, ...],
    slack: str | None,
    webhook: str | None,
    sns: str | None,
    numbers: dict[str, int | None],
) -> dict:
    """A create body from the command's options (the API validates it)."""
    if not name or not on:
        usage("give --name and --on (or a file with -f)")
    channels: list[dict] = []
    if email:
        channels.append({"type": "email", "to": list(email)})
    if slack:
        channels.append({"type": "slack", "webhook_url": slack})
    if webhook:
        channels.append({"type": "webhook", "url": webhook})
    if sns:
        channels.append({"type": "sns", "topic_arn": sns})
    body: dict[str, Any] = {
        "name": name,
        "on": list(dict.fromkeys(k for part in on for k in part.split(",") if k)),
        "match": {
            "tags": list(tags),
            "workflows": list(workflows),
            "trigger_ids": list(trigger_ids),
        },
        "channels": channels,
    }
    body.update({k: v for k, v in numbers.items() if v is not None})
    return body


def _from_file(path: str) -> dict:
    text = Path(path).read_text() if path != "-" else sys.stdin.read()
    try:
        doc = json.loads(text)
    except ValueError:
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError:
            usage(f"{path} is neither JSON nor YAML")
    if not isinstance(doc, dict):
        usage("the file must hold one alert policy (a JSON or YAML object)")
    # YAML 1.1 (PyYAML) reads the key ``on`` as the boolean true: give the policy its name.
    return {("on" if key is True else key): value for key, value in doc.items()}


@command(
    "create",
    click.option("-f", "--file", "path", help="A policy body (JSON or YAML; - for stdin)."),
    click.option("--name", help="The policy's name."),
    click.option("--on", "on", multiple=True, help=f"Kinds, comma-separated: {', '.join(KINDS)}."),
    click.option("--tag", "tags", multiple=True, help="Only triggers with this tag."),
    click.option("--workflow", "workflows", multiple=True, help="Only triggers of this workflow."),
    click.option("--trigger", "trigger_ids", multiple=True, help="Only this trigger."),
    click.option("--email", multiple=True, help="Send email to this address."),
    click.option("--slack", help="A Slack incoming webhook URL."),
    click.option("--webhook", help="A URL that gets signed JSON (Standard Webhooks)."),
    click.option("--sns", help="An SNS topic ARN."),
    click.option("--failures-in-a-row", type=click.IntRange(1), help="failed: the Nth in a row."),
    click.option("--late-after", "late_after_s", type=click.IntRange(60), help="late: seconds."),
    click.option("--no-event-for", "no_event_for_s", type=click.IntRange(60), help="no_event: s."),
    click.option(
        "--budget-percent", type=click.IntRange(1, 100), help="budget: percent of max_usd."
    ),
    click.option(
        "--quiet", "quiet_s", type=click.IntRange(0), help="Seconds between two of a kind."
    ),
    group=alerts,
)
def create_alert(ctx: click.Context, path: str | None, as_json: bool, **options: Any) -> None:
    """Create an alert policy; a webhook channel's signing secret is shown only this once."""
    numbers = {
        k: options.pop(k)
        for k in (
            "failures_in_a_row",
            "late_after_s",
            "no_event_for_s",
            "budget_percent",
            "quiet_s",
        )
    }
    body = _from_file(path) if path else alert_body(numbers=numbers, **options)
    answer = client_of(ctx).request("POST", "/v1/alerts", body=body)
    if not answer.get("signing_secret"):
        emit(ctx, answer, as_json, lambda: say(f"Created alert policy {answer.get('id')}"))
        return
    emit_secret(
        ctx,
        answer,
        as_json,
        lambda: [
            ("id", cell(answer.get("id"))),
            ("signing_secret", secret(answer["signing_secret"])),
        ],
        what="the webhook signing secret",
    )


@command("test", click.argument("alert_id", metavar="ALERT_ID"), group=alerts)
def test_alert(ctx: click.Context, alert_id: str, as_json: bool) -> None:
    """Send a test notification on every channel (see `alerts notifications` for outcomes)."""
    answer = client_of(ctx).request("POST", id_path("an alert id", alert_id, "/v1/alerts", "/test"))
    emit(ctx, answer, as_json, lambda: say(f"Test queued on {answer.get('channels')} channel(s)"))


@command(
    "notifications",
    click.argument("alert_id", metavar="ALERT_ID"),
    click.option("--limit", type=click.IntRange(1), default=50, show_default=True),
    group=alerts,
)
def list_notifications(ctx: click.Context, alert_id: str, limit: int, as_json: bool) -> None:
    """A policy's notifications, newest first, with their outcomes."""
    path = id_path("an alert id", alert_id, "/v1/alerts", "/notifications")
    items, cursor = client_of(ctx).pages(path, {}, limit=limit)
    emit_page(
        ctx,
        items,
        cursor,
        as_json,
        lambda rows: print_list(rows, "No notifications.", _NOTIFICATION_COLUMNS),
    )


@command("delete", click.argument("alert_id", metavar="ALERT_ID"), group=alerts)
def delete_alert(ctx: click.Context, alert_id: str, as_json: bool) -> None:
    """Delete an alert policy."""
    delete(ctx, id_path("an alert id", alert_id, "/v1/alerts"), alert_id, as_json=as_json)
