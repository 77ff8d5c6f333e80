"""Top-level commands that act on triggers: pause, resume, backfill and rotate-secret."""

from __future__ import annotations

from typing import Any

import click

from cronhook_cli.context import client_of, command, trigger_path, usage
from cronhook_cli.output import cell, emit, emit_secret, instant, pairs, say, secret, warn
from cronhook_cli.parsing import INSTANT

__all__ = ["backfill", "pause", "resume", "rotate_secret"]

_ID = click.argument("trigger_id", metavar="ID")


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
    """Enable or disable the triggers named by id (one call each), or by tag/workflow (one)."""
    if ids and (tag or workflow):
        usage("give trigger ids, or --tag/--workflow, not both")
    if not ids and not (tag or workflow):
        usage("give trigger ids, or --tag and/or --workflow")
    client = client_of(ctx)
    action = "enable" if enable else "disable"
    if ids:
        body = {"note": note} if note is not None else None
        changed = [
            client.request("POST", trigger_path(trigger_id, f"/{action}"), body=body)
            for trigger_id in ids
        ]
        answer: dict = {"changed": len(changed), "ids": [t.get("id") for t in changed]}
    else:
        body = {k: v for k, v in {"tag": tag, "workflow": workflow, "note": note}.items() if v}
        answer = client.request("POST", f"/v1/triggers/{action}", body=body)

    def table() -> None:
        ids_done = answer.get("ids") or []
        say(f"{'Resumed' if enable else 'Paused'} {len(ids_done)} trigger(s)")
        for trigger_id in ids_done:
            say(f"  {trigger_id}")
        for skipped in answer.get("skipped") or []:
            warn(f"{skipped.get('id')} not resumed: {skipped.get('reason')}")

    emit(ctx, answer, as_json, table)


def _switch_command(name: str, *, enable: bool, note_help: str, doc: str) -> click.Command:
    """``pause`` or ``resume``: the same options, the same switch, the other direction."""

    @command(
        name,
        click.argument("ids", metavar="[ID]...", nargs=-1),
        click.option("--tag", help="Every trigger with this tag."),
        click.option("--workflow", help="Every trigger of this workflow."),
        click.option("--note", help=note_help),
        help=doc,
    )
    def switch(ctx: click.Context, as_json: bool, **given: Any) -> None:
        _switch(ctx, enable=enable, as_json=as_json, **given)

    return switch


pause = _switch_command(
    "pause",
    enable=False,
    note_help="Why (shown on each trigger with who and when).",
    doc="Pause triggers: by id, or all with a --tag and/or --workflow.",
)
resume = _switch_command(
    "resume",
    enable=True,
    note_help="Why (kept in the audit log).",
    doc="Resume triggers: by id, or all with a --tag and/or --workflow.",
)


@command(
    "backfill",
    _ID,
    click.option("--from", "from_at", type=INSTANT, required=True, help="First slot (ISO)."),
    click.option("--to", "to_at", type=INSTANT, required=True, help="Last slot (ISO, past)."),
    click.option("--dry-run", is_flag=True, help="Count the slots and estimate the cost only."),
)
def backfill(
    ctx: click.Context, trigger_id: str, from_at: str, to_at: str, dry_run: bool, as_json: bool
) -> None:
    """Run the slots of a past window (at most 1,000); a slot that ran is not run again."""
    body: dict[str, Any] = {"from": from_at, "to": to_at}
    if dry_run:
        body["dry_run"] = True
    answer = client_of(ctx).request("POST", trigger_path(trigger_id, "/backfill"), body=body)

    def table() -> None:
        if dry_run:
            pairs(
                [
                    ("slots", cell(answer.get("slots"))),
                    ("first", instant(answer.get("first"))),
                    ("last", instant(answer.get("last"))),
                    ("already ran", cell(answer.get("already_ran"))),
                    ("estimated usd", cell(answer.get("estimated_usd"))),
                ]
            )
            return
        say(f"Backfilling {answer.get('slots')} slot(s) of {trigger_id}")
        for run_id in answer.get("run_ids") or []:
            say(f"  {run_id}")

    emit(ctx, answer, as_json, table)


@command(
    "rotate-secret",
    _ID,
    click.option(
        "--secret", "new_secret", help="A provider-issued secret to use (else one is generated)."
    ),
    click.option(
        "--grace",
        "grace_s",
        type=click.IntRange(0, 7 * 86400),
        help="Seconds the old secret keeps verifying (86400).",
    ),
)
def rotate_secret(
    ctx: click.Context, trigger_id: str, new_secret: str | None, grace_s: int | None, as_json: bool
) -> None:
    """Rotate an event trigger's signing secret (the new one is shown only this once)."""
    given = {"secret": new_secret, "grace_s": grace_s}
    body = {k: v for k, v in given.items() if v is not None}
    answer = client_of(ctx).request(
        "POST", trigger_path(trigger_id, "/rotate-secret"), body=body or None
    )
    emit_secret(
        ctx,
        answer,
        as_json,
        lambda: [
            ("secret", secret(answer.get("secret"))),
            ("old valid until", instant(answer.get("previous_valid_until"))),
        ],
        what="the new secret",
    )
