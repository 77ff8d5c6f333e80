"""``cronhook simulate``: a trigger's slots over a window, through outages, and what the
engine does with each (``POST /v1/schedules/simulate``)."""

from __future__ import annotations

import json
from typing import Any

import click

from cronhook_cli.context import client_of, command, usage
from cronhook_cli.output import cell, emit, instant, list_table, say, stdout
from cronhook_cli.parsing import INSTANT

__all__ = ["simulate"]


def _outage(text: str) -> dict:
    start, sep, end = text.partition("/")
    if not sep:
        usage(f"--outage takes FROM/TO (two ISO instants), not {text!r}")
    return {"from": INSTANT.convert(start, None, None), "to": INSTANT.convert(end, None, None)}


def _table(answer: dict) -> None:
    table = list_table()
    for name in ("slot", "outcome", "fire_at", "reason"):
        table.add_column(name, overflow="fold")
    for slot in answer.get("slots") or []:
        table.add_row(
            instant(slot.get("slot")),
            cell(slot.get("outcome")),
            instant(slot.get("fire_at")),
            cell(slot.get("reason")),
        )
    stdout().print(table)
    say(f"{answer.get('runs')} run(s), estimated ${answer.get('estimated_usd')}")


@command(
    "simulate",
    click.option("--trigger-id", help="A stored trigger to simulate."),
    click.option("--file", "body_file", type=click.File(), help="A create body (JSON) instead."),
    click.option("--from", "from_at", type=INSTANT, required=True, help="Window start (ISO)."),
    click.option("--to", "to_at", type=INSTANT, required=True, help="Window end (ISO, ≤ 1 year)."),
    click.option("--outage", multiple=True, help="FROM/TO: nothing runs then; repeatable."),
    click.option("--run-s", type=click.IntRange(min=0), default=30, show_default=True),
)
def simulate(
    ctx: click.Context,
    trigger_id: str | None,
    body_file: Any,
    from_at: str,
    to_at: str,
    outage: tuple[str, ...],
    run_s: int,
    as_json: bool,
) -> None:
    """What-if: every slot of a window with its outcome (run, skipped, missed, moved,
    holiday, extra), the run count and the estimated cost, by the engine's own rules."""
    if (trigger_id is None) == (body_file is None):
        usage("give --trigger-id or --file")
    body: dict[str, Any] = {"from": from_at, "to": to_at, "run_s": run_s}
    body["outages"] = [_outage(text) for text in outage]
    if trigger_id is not None:
        body["trigger_id"] = trigger_id
    else:
        try:
            body["trigger"] = json.load(body_file)
        except ValueError as exc:
            usage(f"--file is not JSON: {exc}")
    answer = client_of(ctx).request("POST", "/v1/schedules/simulate", body=body) or {}
    emit(ctx, answer, as_json, lambda: _table(answer))
