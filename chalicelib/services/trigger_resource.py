"""``Custom::CronhookTrigger``: a trigger declared in any CloudFormation stack of the account.

The stack's ``TriggerProvider`` function (service token ``CronhookTriggerProvider``)
receives CloudFormation's request and answers it the way the custom-resource protocol
asks: one ``PUT`` of a JSON document to the request's pre-signed ``ResponseURL``, with
``Status``, ``Reason``, ``PhysicalResourceId``, ``StackId``, ``RequestId`` and
``LogicalResourceId``. It always answers (a stack never waits an hour for us), and every
change goes through the routes' own code (``triggers.by_key``):

1. **Create**: the trigger named by ``Key`` is created (``managed_by: cloudformation``);
   a key that exists already is refused (two stacks must not fight over one trigger).
   The physical id is the key.
2. **Update**, same ``Key``: updated in place (state, runs, webhook secret kept), the
   same physical id, so CloudFormation never deletes it. A new ``Key``: a new trigger and
   a new physical id; CloudFormation then sends a Delete for the old one.
3. **Delete**: the trigger is deleted if it is still there and still CloudFormation's.

A refusal is ``FAILED`` with the reason CloudFormation shows in its events (``field:
message``). A failed Create answers a physical id that is no key (``create-failed-...``),
so the Delete of the rollback can never remove a trigger someone else owns under that key.

Properties: ``Key``, optionally ``Tenant`` (default: the root key's tenant), and the
fields of a create body. CloudFormation hands every scalar to a custom resource as a
string; they are read back as the create body's types (``"3600"`` is 3600 where a number
goes, ``"false"`` is false where a boolean goes). Inside free-form objects (``state``,
``payload``, ``event.filter``, ``event.pattern``) values stay as CloudFormation sends them.
"""

from __future__ import annotations

import json
import re
import urllib.request
from datetime import datetime
from typing import Any

from chalicelib.domain.errors import CronhookError, NotFound, ValidationError
from chalicelib.domain.trigger_keys import KEY_PATTERN, check_key
from chalicelib.observability import logger
from chalicelib.services.auth import CLOUDFORMATION_KEY_ID, Principal

__all__ = ["MANAGED_BY", "DEFAULT_TENANT", "handle", "answer", "coerce_body", "send_response"]

MANAGED_BY = "cloudformation"
DEFAULT_TENANT = "local"  # the root key's tenant (services/auth.py)
_TENANT = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_FAILED_CREATE = "create-failed-"
# CloudFormation takes a response body of at most 4 KB; its console shows the reason.
_REASON_CHARS = 1000


def _schema() -> tuple[dict, dict]:
    from chalicelib.domain.spec import TriggerIn  # cold start: the provider only

    schema = TriggerIn.model_json_schema()
    return schema, schema.get("$defs", {})


def _options(schema: dict, defs: dict) -> list[dict]:
    options = schema.get("anyOf") or [schema]
    return [defs[o["$ref"].rsplit("/", 1)[1]] if "$ref" in o else o for o in options]


def _scalar(value: str, types: set) -> Any:
    if "string" in types:
        return value
    if "integer" in types and re.fullmatch(r"-?\d+", value):
        return int(value)
    if "number" in types and re.fullmatch(r"-?\d+(\.\d+)?([eE][-+]?\d+)?", value):
        return float(value) if re.search(r"[.eE]", value) else int(value)
    if "boolean" in types and value in ("true", "false"):
        return value == "true"
    return value


def _coerce(value: Any, schema: dict, defs: dict) -> Any:
    options = _options(schema, defs)
    if isinstance(value, str):
        return _scalar(value, {o.get("type") for o in options})
    if isinstance(value, dict):
        for option in options:
            if option.get("type") == "object" and "properties" in option:
                fields = option["properties"]
                return {k: _coerce(v, fields.get(k, {}), defs) for k, v in value.items()}
        return value
    if isinstance(value, list):
        for option in options:
            if option.get("type") == "array":
                return [_coerce(v, option.get("items", {}), defs) for v in value]
    return value


def coerce_body(properties: dict) -> dict:
    """A create body from CloudFormation's properties (scalars as the body's types)."""
    schema, defs = _schema()
    return _coerce(properties, schema, defs)


def _split(properties: Any) -> tuple[str, str, dict]:
    """``(key, tenant, create body)`` of a request's properties; 422 naming the property."""
    if not isinstance(properties, dict):
        raise ValidationError("the resource has no properties", field="Key")
    body = {k: v for k, v in properties.items() if k not in ("ServiceToken", "Key", "Tenant")}
    key = check_key(properties.get("Key"), field="Key")
    tenant = properties.get("Tenant") or DEFAULT_TENANT
    if not isinstance(tenant, str) or not _TENANT.match(tenant):
        raise ValidationError("Tenant is a tenant name: a-z, 0-9, '_' and '-'", field="Tenant")
    return key, tenant, coerce_body(body)


def _principal(tenant: str) -> Principal:
    return Principal(CLOUDFORMATION_KEY_ID, tenant, "operator")


def _data(view: dict) -> dict:
    """What ``Fn::GetAtt`` reads: strings only, never a secret."""
    return {
        "Id": view["id"],
        "Key": view.get("key") or "",
        "WebhookUrl": view.get("webhook_url") or "",
    }


def _create(key: str, tenant: str, body: dict, *, now: datetime) -> dict:
    from chalicelib.services import triggers

    principal = _principal(tenant)
    try:
        existing = triggers.get_by_key(principal, key)
    except NotFound:
        existing = None
    if existing is not None:
        owner = existing.get("managed_by") or "nobody"
        raise ValidationError(
            f"tenant {tenant!r} already has a trigger with key {key!r} (managed by {owner}); "
            "choose another Key, or delete that trigger first",
            field="Key",
        )
    _, view = triggers.put_trigger(principal, key, {**body, "managed_by": MANAGED_BY}, now=now)
    return view


def _update(event: dict, *, now: datetime) -> tuple[str, dict]:
    from chalicelib.services import triggers

    key, tenant, body = _split(event.get("ResourceProperties"))
    old_key, old_tenant, _ = _split(event.get("OldResourceProperties"))
    if tenant != old_tenant and key == old_key:
        raise ValidationError(
            "Tenant cannot change in place: give the trigger a new Key as well (the old "
            "one is then deleted)",
            field="Tenant",
        )
    if key != old_key:
        return key, _create(key, tenant, body, now=now)
    body = {**body, "managed_by": MANAGED_BY}
    _, view = triggers.put_trigger(_principal(tenant), key, body, now=now)
    return key, view


def _delete(event: dict, *, now: datetime) -> str:
    from chalicelib.services import triggers

    physical = str(event.get("PhysicalResourceId") or "")
    if not re.match(KEY_PATTERN, physical):
        return physical  # a create that failed made nothing
    properties = event.get("ResourceProperties") or {}
    tenant = properties.get("Tenant") or DEFAULT_TENANT
    principal = _principal(str(tenant))
    try:
        view = triggers.get_by_key(principal, physical)
    except (NotFound, ValidationError):
        return physical  # gone already: deleted is what CloudFormation wants
    if view.get("managed_by") == MANAGED_BY:
        try:
            triggers.delete_by_key(principal, physical, now=now)
        except NotFound:
            pass
    return physical


def _dispatch(event: dict, *, now: datetime) -> tuple[str, dict]:
    kind = event.get("RequestType")
    if kind == "Create":
        key, tenant, body = _split(event.get("ResourceProperties"))
        return key, _data(_create(key, tenant, body, now=now))
    if kind == "Update":
        key, view = _update(event, now=now)
        return key, _data(view)
    if kind == "Delete":
        return _delete(event, now=now), {}
    raise ValidationError(f"unknown RequestType {kind!r}", field="RequestType")


def _failed_physical(event: dict) -> str:
    if event.get("RequestType") == "Create":
        return _FAILED_CREATE + str(event.get("RequestId") or "unknown")
    return str(event.get("PhysicalResourceId") or _FAILED_CREATE + "unknown")


def _reason(exc: CronhookError) -> str:
    where = f"{exc.field}: " if exc.field else ""
    return f"{where}{exc.message}"


def answer(event: dict, *, now: datetime) -> dict:
    """The response document for ``event`` (the change made first, when it succeeds)."""
    base = {k: event.get(k) for k in ("StackId", "RequestId", "LogicalResourceId")}
    try:
        physical, data = _dispatch(event, now=now)
        return {**base, "Status": "SUCCESS", "PhysicalResourceId": physical, "Data": data}
    except CronhookError as exc:
        reason = _reason(exc)
    except Exception as exc:  # never leave the stack waiting: a failure it can show
        logger.exception("custom resource request failed", extra={"request": base})
        reason = f"internal error ({type(exc).__name__}); see the TriggerProvider log"
    return {
        **base,
        "Status": "FAILED",
        "Reason": reason[:_REASON_CHARS],
        "PhysicalResourceId": _failed_physical(event),
    }


def send_response(url: str, document: dict, *, timeout_s: float = 20.0) -> None:
    """PUT the response to CloudFormation's pre-signed URL (no content type: it is signed
    without one)."""
    data = json.dumps(document).encode()
    request = urllib.request.Request(
        url, data=data, method="PUT", headers={"Content-Type": "", "Content-Length": str(len(data))}
    )
    with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310
        response.read()


def handle(event: dict, *, now: datetime) -> dict:
    """Make the change ``event`` asks for and answer CloudFormation; the answer sent."""
    document = answer(event, now=now)
    try:
        send_response(str(event["ResponseURL"]), document)
    except Exception:
        # Not raised: Lambda would run the request again, and a Create run twice is
        # refused the second time (its key exists). CloudFormation times the resource out.
        logger.exception("the response could not be sent to CloudFormation")
    logger.info(
        "custom resource answered",
        extra={"request_type": event.get("RequestType"), "status": document["Status"]},
    )
    return document
