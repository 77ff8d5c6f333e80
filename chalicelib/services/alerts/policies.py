"""The ``/v1/alerts`` use cases: create, list, read, edit, delete, test, notifications.

A policy is stored as the validated body plus what the service adds: its id and times,
each Slack URL sealed (``webhook_url_sealed``, shown only as its host), and one signing
secret for its webhooks (``signing_secret_sealed``, shown once, in the create answer).
Secrets are sealed with KMS like trigger secrets, under the policy's own context.
"""

from __future__ import annotations

import base64
import secrets as _random
from datetime import datetime
from urllib.parse import urlsplit

from chalicelib.domain.errors import NotFound, ServiceUnavailable, ValidationError
from chalicelib.domain.records import Notification
from chalicelib.domain.signatures import generate_secret
from chalicelib.domain.spec.alerts import parse_alert, parse_alert_patch
from chalicelib.services import audit
from chalicelib.services.alerts.channels import seal_context
from chalicelib.services.auth import Principal
from chalicelib.services.pages import decode_cursor, encode_cursor, parse_limit
from chalicelib.services.runs import iso_ms
from chalicelib.settings import get_settings
from chalicelib.store import alerts as store
from chalicelib.store import kms
from chalicelib.store.alert_queue import send_alert_messages
from chalicelib.workflows.remote.addresses import check_http_url
from chalicelib.workflows.remote.display import display_target

__all__ = [
    "create_alert",
    "list_alerts",
    "get_alert",
    "patch_alert",
    "delete_alert",
    "test_alert",
    "list_notifications",
    "policy_view",
    "SWEPT_KINDS",
]

SWEPT_KINDS = ("late", "no_event")
_SETTINGS = (
    "name",
    "match",
    "on",
    "failures_in_a_row",
    "late_after_s",
    "no_event_for_s",
    "budget_percent",
    "quiet_s",
)
NOTIFICATION_CURSOR = {"pk": "S", "sk": "S"}
POLICY_CURSOR = {"pk": "S", "sk": "S"}
MATCH_KEYS = ("tags", "workflows", "trigger_ids")


def _new_alert_id() -> str:
    return "alr_" + base64.b32encode(_random.token_bytes(10)).decode().rstrip("=").lower()


def _url_problem(url: str) -> str | None:
    problem = check_http_url(url)
    return problem.replace("the http target's", "the channel's") if problem else None


def _prepare_channels(channels: list[dict], policy: dict) -> list[dict]:
    """Check each channel (addresses, topics, a sender for email) and seal its secrets."""
    settings = get_settings()
    deployed = settings.stage not in ("local", "test")
    prepared = []
    for n, channel in enumerate(channels):
        kind = channel["type"]
        if (
            kind == "email"
            and settings.stage not in ("local", "test")
            and not settings.alert_sender
        ):
            raise ValidationError(
                "email channels need the stack parameter AlertSender (an SES-verified sender)",
                field=f"channels.{n}",
            )
        if kind == "sns" and (settings.alert_topic_arns or deployed):
            if channel["topic_arn"] not in settings.alert_topic_arns:
                raise ValidationError(
                    "this stack may publish only to the topics its AlertTopics parameter lists",
                    field=f"channels.{n}.topic_arn",
                )
        url_field = {"slack": "webhook_url", "webhook": "url"}.get(kind)
        if url_field is not None:
            problem = _url_problem(channel[url_field])
            if problem is not None:
                raise ValidationError(problem, field=f"channels.{n}.{url_field}")
        if kind == "slack":
            url = channel["webhook_url"]
            channel = {
                "type": "slack",
                "host": urlsplit(url).hostname,
                "webhook_url_sealed": kms.seal(url, trigger_id=seal_context(policy["id"])),
            }
        prepared.append(channel)
    return prepared


def _ensure_signing_secret(policy: dict) -> str | None:
    """A policy with a webhook channel gets its signing secret once: the new secret, or None."""
    wants = any(c.get("type") == "webhook" for c in policy.get("channels") or [])
    if not wants or policy.get("signing_secret_sealed"):
        return None
    secret = generate_secret("standard")
    policy["signing_secret_sealed"] = kms.seal(secret, trigger_id=seal_context(policy["id"]))
    return secret


def _masked_url(url: str) -> str:
    """A webhook URL as views show it: query values masked like an ``http:`` target's."""
    return display_target("http:" + url)[len("http:") :]


def _public_channel(channel: dict) -> dict:
    if channel.get("type") == "slack":
        return {"type": "slack", "host": channel.get("host"), "webhook_url": None}
    if channel.get("type") == "webhook" and isinstance(channel.get("url"), str):
        # Users put tokens in query strings; the stored URL (the one sent to) keeps them.
        return {**channel, "url": _masked_url(channel["url"])}
    return dict(channel)


def _public_match(match: dict | None) -> dict:
    """``match`` with its three lists always present (a policy patched before they were
    stored whole may lack some)."""
    match = match or {}
    return {k: list(match.get(k) or []) for k in MATCH_KEYS}


def policy_view(policy: dict) -> dict:
    """A policy as the API shows it: never a Slack URL, a webhook URL's query values nor a
    signing secret."""
    view = {"id": policy["id"], **{k: policy.get(k) for k in _SETTINGS}}
    view["match"] = _public_match(policy.get("match"))
    view["channels"] = [_public_channel(c) for c in policy.get("channels") or []]
    view["has_signing_secret"] = bool(policy.get("signing_secret_sealed"))
    view["created_at"] = iso_ms(policy.get("created_ms"))
    view["updated_at"] = iso_ms(policy.get("updated_ms"))
    view["created_by"] = policy.get("created_by")
    return view


def _swept(policy: dict) -> bool:
    return any(kind in SWEPT_KINDS for kind in policy.get("on") or [])


def create_alert(principal: Principal, body: object, *, now: datetime) -> dict:
    """``POST /v1/alerts``: the policy, and its webhook signing secret once."""
    parsed = parse_alert(body)
    now_ms = int(now.timestamp() * 1000)
    policy = {**parsed, "id": _new_alert_id(), "created_ms": now_ms, "updated_ms": now_ms}
    policy["created_by"] = principal.key_id
    policy["channels"] = _prepare_channels(parsed["channels"], policy)
    secret = _ensure_signing_secret(policy)
    store.put_policy(principal.tenant, policy, swept=_swept(policy))
    audit.record(
        principal,
        "alert.create",
        tenant=principal.tenant,
        trigger_id=None,
        now=now,
        detail={"alert_id": policy["id"], "name": policy["name"]},
    )
    view = policy_view(policy)
    if secret is not None:
        view["signing_secret"] = secret
    return view


def _owned(principal: Principal, alert_id: str) -> dict:
    found = None
    if alert_id.startswith("alr_") and len(alert_id) <= 40:
        found = store.get_policy(principal.tenant, alert_id)
    if found is None:
        raise NotFound(f"no alert policy {alert_id!r}")
    return found


def list_alerts(principal: Principal, params: dict) -> dict:
    """``GET /v1/alerts``: the tenant's policies, oldest id first, a page at a time."""
    limit = parse_limit(params.get("limit"))
    cursor = decode_cursor(
        params.get("cursor"), shape=POLICY_CURSOR, fixed={"pk": f"t#{principal.tenant}"}
    )
    # A key outside the query's ``p#`` range is refused by DynamoDB: a 422 here instead.
    if cursor is not None and not cursor["sk"]["S"].startswith("p#"):
        raise ValidationError("cursor is not valid", field="cursor")
    page = store.policies_page(principal.tenant, limit=limit, cursor=cursor)
    return {
        "items": [policy_view(p) for p in page],
        "next_cursor": encode_cursor(page.last_evaluated_key),
    }


def get_alert(principal: Principal, alert_id: str) -> dict:
    return policy_view(_owned(principal, alert_id))


def patch_alert(principal: Principal, alert_id: str, body: object, *, now: datetime) -> dict:
    """``PATCH``: the fields given replace the stored ones (``channels`` as a whole)."""
    policy = _owned(principal, alert_id)
    given = parse_alert_patch(body)
    if "channels" in given:
        given["channels"] = _prepare_channels(given["channels"], policy)
    policy.update(given)
    policy["updated_ms"] = int(now.timestamp() * 1000)
    secret = _ensure_signing_secret(policy)
    store.put_policy(principal.tenant, policy, swept=_swept(policy))
    audit.record(
        principal,
        "alert.update",
        tenant=principal.tenant,
        trigger_id=None,
        now=now,
        detail={"alert_id": alert_id, "fields": sorted(given)},
    )
    view = policy_view(policy)
    if secret is not None:
        view["signing_secret"] = secret
    return view


def delete_alert(principal: Principal, alert_id: str, *, now: datetime) -> None:
    _owned(principal, alert_id)
    store.delete_policy(principal.tenant, alert_id)
    audit.record(
        principal,
        "alert.delete",
        tenant=principal.tenant,
        trigger_id=None,
        now=now,
        detail={"alert_id": alert_id},
    )


def test_alert(principal: Principal, alert_id: str, *, now: datetime) -> dict:
    """``POST /v1/alerts/{id}/test``: a test notification on every channel, queued."""
    policy = _owned(principal, alert_id)
    channels = policy.get("channels") or []
    if not channels:
        raise ValidationError("this policy has no channel to test", field="channels")
    message = {
        "k": "test",
        "tenant": principal.tenant,
        "policy_id": alert_id,
        "at_ms": int(now.timestamp() * 1000),
        "by": principal.key_id,
    }
    if not send_alert_messages([message]):
        raise ServiceUnavailable("no alerts queue is configured; nothing was sent")
    return {"queued": True, "channels": len(channels)}


def notification_view(row: Notification) -> dict:
    """A notification as the API shows it."""
    body = row.body
    return {
        "id": body.get("id"),
        "at": iso_ms(body.get("at_ms")),
        "kind": body.get("kind"),
        "trigger_id": body.get("trigger_id"),
        "run_id": body.get("run_id"),
        "channel": body.get("channel"),
        "outcome": row.outcome,
        "error": row.error,
    }


def list_notifications(principal: Principal, alert_id: str, params: dict) -> dict:
    """``GET /v1/alerts/{id}/notifications``: newest first, with outcomes."""
    _owned(principal, alert_id)
    limit = parse_limit(params.get("limit"))
    cursor = decode_cursor(
        params.get("cursor"), shape=NOTIFICATION_CURSOR, fixed={"pk": f"n#{alert_id}"}
    )
    page = store.notifications_page(alert_id, limit=limit, cursor=cursor)
    return {
        "items": [notification_view(r) for r in page],
        "next_cursor": encode_cursor(page.last_evaluated_key),
    }
