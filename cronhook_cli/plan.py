"""The plan of ``cronhook diff`` and ``apply``: what would be created, updated, deleted.

The server decides what changes (``POST /v1/triggers/by-key/{key}/plan``, the same code as
the PUT), so the plan and the apply cannot disagree. The plan is drawn for a reviewer:
each changed field ``old -> new``, the drift an edit elsewhere left, and for every
created or changed schedule its next five fires with the DST transitions marked.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from cronhook_cli.alert_documents import ALERT_KIND, alert_steps
from cronhook_cli.client import ApiError, Client
from cronhook_cli.documents import Document
from cronhook_cli.output import say, warn
from cronhook_cli.preview import DEFAULT_PREVIEW_COUNT, print_fires

__all__ = ["MANAGED_BY", "Step", "Plan", "make_plan", "print_plan", "plan_json", "key_path"]

# What ``apply`` labels its triggers with; ``--prune`` deletes only triggers so labelled.
MANAGED_BY = "apply"
# The schedule fields the preview routes take (a newer server may take more; a field a
# document has that the preview does not take is left out of the preview only).
_PREVIEW_FIELDS: tuple[str, ...] = (
    "cron",
    "timezone",
    "dst",
    "interval_s",
    "at",
    "calendar",
    "business_day",
    "time",
    "jitter_s",
)


def key_path(key: str, action: str = "") -> str:
    """The route of one key (keys are one path segment by their own rule)."""
    return f"/v1/triggers/by-key/{key}{action}"


@dataclass
class Step:
    """One line of the plan."""

    action: str  # create | update | none | delete
    key: str
    document: Document | None = None
    changes: dict = field(default_factory=dict)
    trigger: dict | None = None  # the trigger (or, for an alert, the policy) as it is
    preview: dict | None = None
    kind: str = "trigger"

    @property
    def changes_anything(self) -> bool:
        return self.action in ("create", "update", "delete")


@dataclass
class Plan:
    steps: list[Step]

    def count(self, action: str) -> int:
        return sum(1 for step in self.steps if step.action == action)

    @property
    def changes_anything(self) -> bool:
        return any(step.changes_anything for step in self.steps)

    def summary(self) -> str:
        return (
            f"Plan: {self.count('create')} to create, {self.count('update')} to update, "
            f"{self.count('delete')} to delete, {self.count('none')} unchanged."
        )


def request_body(doc: Document) -> dict:
    """The PUT body of a document: its create body, labelled by this tool."""
    return {**doc.body, "managed_by": MANAGED_BY}


def _refused(doc: Document, exc: ApiError) -> ApiError:
    unset = "".join(f" (${name} is not set)" for name in doc.missing_env)
    return ApiError(f"{doc.where}: {exc.message}{unset}")


def _preview(client: Client, doc: Document, *, now: datetime) -> dict | None:
    schedule = doc.body.get("schedule")
    if not isinstance(schedule, dict):
        return None
    body = {k: v for k, v in schedule.items() if k in _PREVIEW_FIELDS}
    body.update({"from": now.isoformat().replace("+00:00", "Z"), "count": DEFAULT_PREVIEW_COUNT})
    try:
        answer = client.request("POST", "/v1/schedules/preview", body=body)
    except ApiError as exc:
        return {"error": exc.message}
    answer = dict(answer or {})
    answer["timezone"] = schedule.get("timezone") or "UTC"
    return answer


def _step(client: Client, doc: Document, *, now: datetime) -> Step:
    try:
        answer = client.request("POST", key_path(doc.key, "/plan"), body=request_body(doc))
    except ApiError as exc:
        raise _refused(doc, exc) from exc
    step = Step(
        answer.get("action", "none"),
        doc.key,
        document=doc,
        changes=answer.get("changes") or {},
        trigger=answer.get("trigger"),
    )
    schedule_changed = any(name.startswith("schedule") for name in step.changes)
    if step.action == "create" or schedule_changed:
        step.preview = _preview(client, doc, now=now)
    return step


def make_plan(client: Client, documents: list[Document], *, prune: bool, now: datetime) -> Plan:
    """Ask the server what each document would change; with ``prune``, which triggers
    this tool manages that no document names any more (``now``: previews start there)."""
    triggers = [doc for doc in documents if doc.kind != ALERT_KIND]
    steps = [_step(client, doc, now=now) for doc in triggers]
    steps += alert_steps(client, [doc for doc in documents if doc.kind == ALERT_KIND], Step)
    if prune:
        declared = {doc.key for doc in triggers}
        items, _ = client.pages(
            "/v1/triggers",
            {"limit": 200},
            keep=lambda t: t.get("managed_by") == MANAGED_BY and t.get("key") not in declared,
        )
        steps.extend(Step("delete", str(t["key"]), trigger=t) for t in items)
    return Plan(steps)


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _print_drift(trigger: dict | None) -> None:
    drift = (trigger or {}).get("drift")
    if drift:
        fields = ", ".join(drift.get("fields") or [])
        say(
            f"    drift: edited outside {MANAGED_BY} at {drift.get('at')} by "
            f"{drift.get('by')} ({fields}); this apply puts the file's values back"
        )


def _print_preview(preview: dict | None) -> None:
    if not preview:
        return
    if preview.get("error"):
        say(f"    next fires: not previewed ({preview['error']})")
        return
    say(f"    next {DEFAULT_PREVIEW_COUNT} fires:")
    print_fires(preview.get("fires") or [], preview["timezone"], dst=preview.get("dst") or [])


def _print_step(step: Step) -> None:
    where = f"  ({step.document.where.rsplit(' (', 1)[0]})" if step.document else ""
    if step.kind == ALERT_KIND:
        sign = {"create": "+", "update": "~"}.get(step.action, " ")
        say(f"{sign} {step.action} alert {step.key}{where}")
        for name, change in step.changes.items():
            say(f"    {name}: {_shown(change.get('from'))} -> {_shown(change.get('to'))}")
    elif step.action == "create":
        say(f"+ create {step.key}{where}")
        body = step.document.body if step.document else {}
        for name in ("workflow", "schedule", "event"):
            value = body.get(name)
            if isinstance(value, dict) and "secret" in value:
                value = {**value, "secret": "(from the environment)"}
            if value is not None:
                say(f"    {name}: {_shown(value)}")
    elif step.action == "update":
        say(f"~ update {step.key}{where}")
        for name, change in step.changes.items():
            say(f"    {name}: {_shown(change.get('from'))} -> {_shown(change.get('to'))}")
        _print_drift(step.trigger)
    elif step.action == "delete":
        say(f"- delete {step.key}  (managed by {MANAGED_BY}, in no file now)")
    _print_preview(step.preview)


def print_plan(plan: Plan) -> None:
    """The plan for people: one block per change, the unchanged counted."""
    for step in plan.steps:
        if step.changes_anything:
            _print_step(step)
    for doc in (step.document for step in plan.steps if step.document is not None):
        for name in doc.missing_env:
            warn(f"{doc.where}: ${name} is not set: event.secret left out")
    say(plan.summary())


def plan_json(plan: Plan) -> dict:
    """The plan for programs."""
    return {
        "create": plan.count("create"),
        "update": plan.count("update"),
        "delete": plan.count("delete"),
        "unchanged": plan.count("none"),
        "steps": [
            {
                "action": step.action,
                "kind": step.kind,
                "key": step.key,
                "file": step.document.path if step.document else None,
                "document": step.document.number if step.document else None,
                "changes": step.changes,
                "drift": (step.trigger or {}).get("drift"),
                "preview": step.preview,
            }
            for step in plan.steps
        ],
    }
