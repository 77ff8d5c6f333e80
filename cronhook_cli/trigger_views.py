"""Triggers for people: the list, one trigger in detail, its one-time secrets and warnings."""

from __future__ import annotations

import click
from rich.text import Text

from cronhook_cli.output import (
    WIDE_COLUMNS,
    Column,
    at,
    cell,
    emit,
    field,
    instant,
    pairs,
    print_list,
    secret,
    status,
    warn,
)

__all__ = [
    "one_time_secrets",
    "print_trigger",
    "print_triggers",
    "show_trigger",
    "warn_secrets",
    "warn_trigger",
]


def _last_run_status(trigger: dict) -> Text:
    last_run = trigger.get("last_run") or {}
    return status(last_run.get("status")) if last_run else cell(None)


def _status(trigger: dict) -> Text:
    return status(trigger.get("status"), trigger.get("disabled_reason"))


_TRIGGER_COLUMNS = (
    Column("ID", field("id"), whole=True),
    Column("NAME", field("display_name"), ratio=2),
    Column("KIND", field("kind"), min_columns=WIDE_COLUMNS),
    Column("CADENCE", field("cadence"), ratio=3),
    Column("STATUS", _status),
    Column("NEXT FIRE", at("next_fire_at"), whole=True),
    Column("LAST RUN", _last_run_status, min_columns=WIDE_COLUMNS),
)
# The detail view's first rows; who paused it, the run counts and secrets follow.
_TRIGGER_FIELDS = (
    ("id", field("id")),
    ("name", field("display_name")),
    ("workflow", field("workflow")),
    ("kind", field("kind")),
    ("cadence", field("cadence")),
    ("status", _status),
)


def print_triggers(triggers: list[dict]) -> None:
    """The trigger list: kind and last run only where the terminal is wide."""
    print_list(triggers, "No triggers.", _TRIGGER_COLUMNS)


def _last_run_line(trigger: dict) -> str | None:
    last_run = trigger.get("last_run") or {}
    if not last_run:
        return None
    finished_at = last_run.get("finished_at")
    parts = (
        last_run.get("status"),
        instant(finished_at).plain if finished_at else None,
        last_run.get("id"),
    )
    line = " ".join(str(part) for part in parts if part)
    if last_run.get("error"):
        line += f" - {last_run['error']}"
    return line


def _paused_rows(trigger: dict) -> list[tuple[str, Text]]:
    """Who paused a trigger by hand, when, and why (nothing for any other trigger)."""
    if trigger.get("status") != "disabled" or not (
        trigger.get("disabled_note") or trigger.get("disabled_by")
    ):
        return []
    by = " ".join(
        str(p)
        for p in (trigger.get("disabled_by"), instant(trigger.get("disabled_at")).plain)
        if p and p != "-"
    )
    rows = [("paused by", cell(by))]
    if trigger.get("disabled_note"):
        rows.append(("note", cell(trigger.get("disabled_note"))))
    return rows


def print_trigger(trigger: dict, *, secrets: dict[str, str] | None = None) -> None:
    """One trigger as name/value pairs, with the secrets shown only this once."""
    rows = [
        *((name, value(trigger)) for name, value in _TRIGGER_FIELDS),
        *_paused_rows(trigger),
        ("next fire", instant(trigger.get("next_fire_at"))),
        ("last run", cell(_last_run_line(trigger))),
        ("runs", cell(trigger.get("run_count"))),
        ("failures in a row", cell(trigger.get("consecutive_failures"))),
        ("tags", cell(", ".join(trigger.get("tags") or []))),
    ]
    # On create the contract nests the URL with the one-time secret under "webhook".
    hook_url = trigger.get("webhook_url") or (trigger.get("webhook") or {}).get("url")
    if hook_url:
        rows.append(("webhook url", cell(hook_url)))
    for name, value in (secrets or {}).items():
        rows.append((name, secret(value)))
    rows.append(("created", instant(trigger.get("created_at"))))
    pairs(rows)


def warn_trigger(trigger: dict) -> None:
    """The server's warnings about a trigger, on stderr."""
    for warning in trigger.get("warnings") or []:
        warn(str(warning))


def one_time_secrets(answer: dict) -> dict[str, str]:
    """The secrets an answer shows once, by the name a person sees."""
    found = {}
    webhook_secret = (answer.get("webhook") or {}).get("secret")
    if webhook_secret:
        found["webhook secret"] = str(webhook_secret)
    if answer.get("outbound_secret"):
        found["outbound secret"] = str(answer["outbound_secret"])
    return found


def warn_secrets(trigger: dict, secrets: dict[str, str]) -> None:
    """Say on stderr that the secrets just printed will not be shown again."""
    if "webhook secret" in secrets:
        warn(
            "the webhook secret is shown only this once; store it now "
            f"(rotate it with: cronhook rotate-secret {trigger.get('id')})"
        )
    if "outbound secret" in secrets:
        warn(
            "the outbound signing secret (the http: target verifies with it) is shown only "
            "this once; store it now"
        )


def show_trigger(
    ctx: click.Context, trigger: dict, *, as_json: bool, with_secrets: bool = False
) -> None:
    """Print a trigger the API answered, then its one-time secrets' and the server's warnings."""
    secrets = one_time_secrets(trigger) if with_secrets else None
    emit(ctx, trigger, as_json, lambda: print_trigger(trigger, secrets=secrets))
    if secrets is not None:
        warn_secrets(trigger, secrets)
    warn_trigger(trigger)
