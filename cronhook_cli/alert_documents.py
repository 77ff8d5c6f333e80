"""``kind: alert`` documents: alert policies (docs/alerts.md) declared beside the triggers.

A policy is named by its ``name`` (one policy per name in a tenant's files). What the API
never shows cannot be compared: a Slack channel is compared by the host of its URL, which
is a reference in the file (``webhook_url: {"env": "NAME"}``), never a literal. ``apply``
creates (``POST /v1/alerts``) or replaces the settings (``PATCH``) of each policy; the
webhook signing secret of a new policy is printed once. Alert policies are never pruned.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

from cronhook_cli.client import ApiError, Client

__all__ = [
    "ALERT_KIND",
    "resolve_alert_secrets",
    "check_alert",
    "comparable_alert",
    "alert_steps",
    "run_alert_step",
]

ALERT_KIND = "alert"


def resolve_alert_secrets(where: str, body: dict, error: type[Exception]) -> None:
    """Each Slack channel's ``webhook_url``: an ``{"env": NAME}`` reference, resolved."""
    for number, channel in enumerate(body.get("channels") or []):
        if not isinstance(channel, dict) or channel.get("type") != "slack":
            continue
        ref = channel.get("webhook_url")
        field = f"channels.{number}.webhook_url"
        if not (isinstance(ref, dict) and set(ref) == {"env"} and isinstance(ref["env"], str)):
            raise error(
                f"{where}: field {field}: a Slack URL is a secret, never written in a file; "
                'give a reference instead: webhook_url: {"env": "NAME"}'
            )
        value = os.environ.get(ref["env"])
        if value is None:
            raise error(f"{where}: field {field}: ${ref['env']} is not set")
        channel["webhook_url"] = value


def check_alert(body: dict) -> None:
    """The policy as the server's request model reads it (raises its ValidationError)."""
    from chalicelib.domain.spec import parse_model
    from chalicelib.domain.spec.alerts import AlertIn

    parse_model(AlertIn, body)


def _channel(channel: dict) -> dict:
    if channel.get("type") == "slack":
        url = channel.get("webhook_url")
        host = urlsplit(url).hostname if isinstance(url, str) else channel.get("host")
        return {"type": "slack", "host": host}
    return dict(channel)


def comparable_alert(policy: dict) -> dict:
    """A policy (a document's body, or the API's view) as compared: defaults filled in."""
    from chalicelib.domain.spec import parse_model
    from chalicelib.domain.spec.alerts import AlertIn

    fields = set(AlertIn.model_fields)
    settings = {k: v for k, v in policy.items() if k in fields and k != "channels"}
    filled = parse_model(AlertIn, {**settings, "channels": []}).model_dump(mode="json")
    filled["channels"] = [_channel(c) for c in policy.get("channels") or []]
    return filled


def _by_name(client: Client) -> dict[str, dict]:
    found: dict[str, dict] = {}
    for view in (client.request("GET", "/v1/alerts") or {}).get("items") or []:
        if view["name"] in found:
            raise ApiError(
                f"two alert policies are named {view['name']!r}: a file names one; rename or "
                "delete one of them first"
            )
        found[view["name"]] = view
    return found


def alert_steps(client: Client, documents: list[Any], step_type: Any) -> list[Any]:
    """The plan's steps of the alert documents (``step_type``: ``plan.Step``)."""
    from chalicelib.domain.trigger_keys import field_changes

    if not documents:
        return []
    existing = _by_name(client)
    steps = []
    for doc in documents:
        view = existing.get(doc.key)
        if view is None:
            steps.append(step_type("create", doc.key, document=doc, kind=ALERT_KIND))
            continue
        changes = field_changes(comparable_alert(view), comparable_alert(doc.body))
        action = "update" if changes else "none"
        steps.append(
            step_type(action, doc.key, document=doc, changes=changes, trigger=view, kind=ALERT_KIND)
        )
    return steps


def run_alert_step(client: Client, step: Any) -> dict:
    """Create or update one policy; what was done (a new signing secret, once)."""
    if step.action == "create":
        answer = client.request("POST", "/v1/alerts", body=step.document.body)
    else:
        from chalicelib.domain.spec import parse_model
        from chalicelib.domain.spec.alerts import AlertIn

        # Every setting, defaults included: a field the file no longer gives goes back to
        # its default (a PATCH keeps what it is not sent).
        whole = parse_model(AlertIn, step.document.body).model_dump(mode="json")
        answer = client.request("PATCH", f"/v1/alerts/{step.trigger['id']}", body=whole)
    done = {"action": step.action, "key": step.key, "id": answer.get("id"), "kind": ALERT_KIND}
    if answer.get("signing_secret"):
        done["signing_secret"] = answer["signing_secret"]
    return done
