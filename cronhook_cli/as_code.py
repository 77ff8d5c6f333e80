"""``cronhook apply``, ``diff`` and ``export``: triggers declared in files (docs/as-code.md).

- ``diff -f PATH``: the plan; exit 0 when nothing would change, 3 when something would.
- ``apply -f PATH [--prune] [--dry-run]``: the plan, then each change, in file order.
  Every document is checked (here, then by the server's plan) before anything is
  written; a refusal during the apply stops it, naming the document and the field. A
  webhook secret the server generated is printed once, by the apply that created it.
- ``export [--tag T] [--workflow W]``: the tenant's triggers as documents that ``apply``
  takes back with no change. No secret is ever exported: a provider-issued secret is a
  reference (``{"env": "<KEY>_SECRET"}``), a generated one is left to the trigger. A
  trigger without a key is exported under its id as key, which adopts it (the server
  gives an unkeyed trigger the key that is its own id).
"""

from __future__ import annotations

import re
import sys
from datetime import UTC, datetime

import click

from cronhook_cli.alert_documents import ALERT_KIND, run_alert_step
from cronhook_cli.client import ApiError, Client
from cronhook_cli.context import client_of, command
from cronhook_cli.documents import load_documents
from cronhook_cli.output import emit, output_format, say, warn
from cronhook_cli.parsing import INSTANT
from cronhook_cli.plan import (
    Plan,
    Step,
    key_path,
    make_plan,
    plan_json,
    print_plan,
    request_body,
)

__all__ = ["apply", "diff", "export", "DIFF_CHANGES_EXIT", "export_documents"]

# ``diff``'s exit status when something would change (0: nothing would; 1 and 2 as for
# every command): a CI job fails, or comments, on 3.
DIFF_CHANGES_EXIT = 3

_FILE = click.option(
    "-f",
    "--file",
    "target",
    required=True,
    type=click.Path(exists=True),
    help="A YAML or JSON file, or a folder of them.",
)


_FROM = click.option(
    "--from",
    "from_at",
    type=INSTANT,
    help="Preview the next fires after this ISO instant (default now).",
)


def _plan(ctx: click.Context, target: str, *, prune: bool, from_at: str | None) -> Plan:
    documents = load_documents(target)
    # The command line is the edge: "now" is read here, once.
    now = datetime.fromisoformat(from_at) if from_at else datetime.now(UTC)
    return make_plan(client_of(ctx), documents, prune=prune, now=now)


@command("diff", _FILE, click.option("--prune", is_flag=True, help="Also plan deletions."), _FROM)
def diff(ctx: click.Context, target: str, prune: bool, from_at: str | None, as_json: bool) -> None:
    """Show what `apply` would change (exit 0: nothing, 3: something)."""
    plan = _plan(ctx, target, prune=prune, from_at=from_at)
    emit(ctx, plan_json(plan), as_json, lambda: print_plan(plan))
    if plan.changes_anything:
        ctx.exit(DIFF_CHANGES_EXIT)


def _run_step(client: Client, step: Step) -> dict:
    """Make one change; a refusal names the document (and the server names the field)."""
    try:
        if step.kind == ALERT_KIND:
            return run_alert_step(client, step)
        if step.action == "delete":
            client.request("DELETE", key_path(step.key))
            return {"action": "delete", "key": step.key}
        assert step.document is not None
        answer = client.request("PUT", key_path(step.key), body=request_body(step.document))
    except ApiError as exc:
        where = step.document.where if step.document else f"key {step.key}"
        raise ApiError(f"{where}: {exc.message} (the changes above it were applied)") from exc
    done = {"action": step.action, "key": step.key, "id": answer.get("id")}
    if answer.get("webhook"):
        done["webhook"] = dict(answer["webhook"])
        if "secret" in (step.document.body.get("event") or {}):
            # The provider's own secret, from the environment: never printed back.
            done["webhook"].pop("secret", None)
    if answer.get("outbound_secret"):
        done["outbound_secret"] = answer["outbound_secret"]
    return done


def _say_done(done: dict) -> None:
    what = f"alert {done['key']}" if done.get("kind") == ALERT_KIND else done["key"]
    say(f"{done['action']}d {what}" + (f" ({done['id']})" if done.get("id") else ""))
    hook = done.get("webhook") or {}
    if hook.get("secret"):
        say(f"    webhook url: {hook.get('url')}")
        say(f"    webhook secret: {hook['secret']}")
        warn(f"the webhook secret of {done['key']} is shown only this once; store it now")
    if done.get("signing_secret"):
        say(f"    webhook signing secret: {done['signing_secret']}")
        warn(f"the signing secret of alert {done['key']} is shown only this once; store it now")
    if done.get("outbound_secret"):
        say(f"    outbound secret: {done['outbound_secret']}")
        warn(f"the outbound secret of {done['key']} is shown only this once; store it now")


@command(
    "apply",
    _FILE,
    click.option(
        "--prune", is_flag=True, help="Delete triggers made by apply that no file declares now."
    ),
    click.option("--dry-run", is_flag=True, help="Show the plan; change nothing."),
    _FROM,
)
def apply(
    ctx: click.Context,
    target: str,
    prune: bool,
    dry_run: bool,
    from_at: str | None,
    as_json: bool,
) -> None:
    """Create, update (and with --prune delete) triggers to match the files."""
    plan = _plan(ctx, target, prune=prune, from_at=from_at)
    table = output_format(ctx, as_json) == "table"
    if table:
        print_plan(plan)
    if dry_run or not plan.changes_anything:
        if not table:
            emit(ctx, {**plan_json(plan), "applied": []}, as_json, lambda: None)
        return
    client = client_of(ctx)
    applied = []
    for step in plan.steps:
        if step.changes_anything:
            done = _run_step(client, step)
            applied.append(done)
            if table:
                _say_done(done)
    emit(ctx, {**plan_json(plan), "applied": applied}, as_json, lambda: say("Applied."))


# The fields of a trigger's view that are not part of its create body.
_READ_ONLY = frozenset(
    {
        "id", "display_name", "kind", "cadence", "status", "disabled_reason", "disabled_note",
        "disabled_by", "disabled_at", "next_fire_at", "consecutive_failures", "run_count",
        "last_run", "webhook_url", "webhook", "outbound_secret", "created_by", "created_at",
        "updated_at", "version", "warnings", "budget", "key", "managed_by", "drift", "state",
        "enabled",
    }
)  # fmt: skip
_NESTED = ("schedule", "event", "limits")


def _env_name(key: str) -> str:
    return re.sub(r"[^A-Z0-9]", "_", key.upper()) + "_SECRET"


def _without_nulls(value: dict) -> dict:
    return {k: v for k, v in value.items() if v is not None}


def export_document(trigger: dict) -> dict:
    """One trigger as a document ``apply`` takes back unchanged (never a secret)."""
    from chalicelib.domain.signatures.inbound import SECRET_REQUIRED
    from chalicelib.domain.trigger_spec import compact

    key = trigger.get("key") or trigger["id"]
    body = compact({k: v for k, v in trigger.items() if k not in _READ_ONLY})
    body = _without_nulls(body)
    for name in _NESTED:
        if isinstance(body.get(name), dict):
            body[name] = _without_nulls(body[name])
    event = body.get("event")
    if isinstance(event, dict) and event.get("source") in SECRET_REQUIRED:
        event["secret"] = {"env": _env_name(key)}
    if trigger.get("state"):
        body["state"] = trigger["state"]
    if trigger.get("enabled") is False:
        body["enabled"] = False
    return {"key": key, **body}


def export_documents(client: Client, *, tag: str | None, workflow: str | None) -> list[dict]:
    """The tenant's triggers (filtered as ``triggers list``) as documents, by key."""
    listed, _ = client.pages("/v1/triggers", {"tag": tag, "workflow": workflow, "limit": 200})
    documents = []
    for item in listed:
        # The list leaves out the state: one read each for it.
        trigger = client.request("GET", f"/v1/triggers/{item['id']}")
        documents.append(export_document(trigger))
    return sorted(documents, key=lambda doc: doc["key"])


def _yaml(documents: list[dict]) -> str:
    import yaml  # the CLI's dependency only: never on the Lambda path

    return yaml.safe_dump_all(
        documents, sort_keys=False, allow_unicode=True, explicit_start=True, width=100
    )


@command(
    "export",
    click.option("--tag", help="Only triggers with this tag."),
    click.option("--workflow", help="Only triggers of this workflow."),
)
def export(ctx: click.Context, tag: str | None, workflow: str | None, as_json: bool) -> None:
    """Write the triggers as YAML documents that `apply` takes back unchanged."""
    documents = export_documents(client_of(ctx), tag=tag, workflow=workflow)
    kind = output_format(ctx, as_json)
    if kind == "json":
        emit(ctx, documents, as_json, lambda: None)
        return
    sys.stdout.write(_yaml(documents))
