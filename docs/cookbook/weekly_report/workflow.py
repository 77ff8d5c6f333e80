"""Cookbook: a weekly report for each of 18 clients, from one workflow.

One workflow, one cron trigger per client. Each trigger carries the client in its payload,
is tagged ``client-N`` (``cronhook triggers list --tag client-7`` finds it), reads its
token under ``secret_scope: client-N`` and runs under ``serialize_key: client-N``, so two
reports for one client never overlap (a manual fire during the Monday run waits its turn).

Outside action: one POST per report to the client's endpoint, with the action-level dedupe
key ``weekly-report/<fire_id>``. ``fire_id`` is stable per fire (trigger + scheduled
instant), so a retried or redelivered fire presents the same key and the receiver keeps one
report.
"""

from __future__ import annotations

import json
import urllib.request

from chalicelib.workflows import Fire, Result, WorkflowFailed, workflow

STATE_SCHEMA = {
    "type": "object",
    "properties": {
        "reports_sent": {"type": "integer", "minimum": 0},
        "last_week": {"type": ["string", "null"]},
    },
    "additionalProperties": False,
}


def dedupe_key(fire: Fire) -> str:
    """The report's action-level dedupe key: one report per fire, however often it runs."""
    return f"weekly-report/{fire.fire_id}"


def iso_week(fire: Fire) -> str:
    """The ISO week the fire was scheduled in ("2026-W49"); a manual fire uses its own time."""
    if fire.scheduled_for is None:
        raise WorkflowFailed("a weekly report needs the fire's scheduled time")
    year, week, _ = fire.scheduled_for.isocalendar()
    return f"{year}-W{week:02d}"


@workflow("weekly-report", state_schema=STATE_SCHEMA)
def weekly_report(fire: Fire) -> Result:
    """Posts one client's weekly report to its endpoint, once per fire."""
    payload = fire.payload if isinstance(fire.payload, dict) else {}
    client, endpoint = payload.get("client"), payload.get("endpoint")
    if not isinstance(client, str) or not isinstance(endpoint, str):
        raise WorkflowFailed("the trigger's payload needs 'client' and 'endpoint'")
    token = fire.secrets.get("REPORT_TOKEN")  # "<client-N>/REPORT_TOKEN", then "REPORT_TOKEN"
    week = iso_week(fire)
    report = {"client": client, "week": week, "fire_id": fire.fire_id}
    request = urllib.request.Request(
        endpoint,
        data=json.dumps(report).encode(),
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Authorization": f"Bearer {token}",
            "Idempotency-Key": dedupe_key(fire),
        },
    )
    with urllib.request.urlopen(request, timeout=20) as answer:  # noqa: S310 (the client's URL)
        status = answer.status
    state = dict(fire.state or {})
    state["reports_sent"] = int(state.get("reports_sent") or 0) + 1
    state["last_week"] = week
    return Result(state=state, output={"client": client, "week": week, "status": status})


def trigger_body(n: int, endpoint: str) -> dict:
    """The ``POST /v1/triggers`` body for client ``n``: Monday 07:00 in the client's zone."""
    return {
        "workflow": "weekly-report",
        "title": f"Weekly report for client {n}",
        "tags": [f"client-{n}", "weekly-report"],
        "schedule": {"cron": "0 7 * * 1", "timezone": "Europe/Berlin"},
        "payload": {"client": f"client-{n}", "endpoint": endpoint},
        "state": {"reports_sent": 0, "last_week": None},
        "secret_scope": f"client-{n}",
        "serialize_key": f"client-{n}",
        "limits": {"max_failures": 3},
    }
