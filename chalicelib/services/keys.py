"""API keys as a resource (create, list, delete) and the run-as-creator guard.

A key is random, shown once in the answer to its creation, and stored only as its
SHA-256 (``auth.hash_key``). Keys belong to a tenant; only the root key may create,
list or delete keys of another tenant. Every other admin sees its own tenant only,
and another tenant's key answers 404 (as every other resource does).

Run as creator: a trigger records the key that created it, and each fire re-resolves
that key (``guardrails.creator``, in the run pipeline). A
deleted key, or one demoted below ``operator``, disables the trigger with the reason
``creator_gone``: the trigger never runs on someone else's authority or bill.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from chalicelib.domain.epoch_ms import ms
from chalicelib.domain.errors import Forbidden, NotFound, ValidationError
from chalicelib.domain.ids import new_key_id
from chalicelib.domain.records import ApiKey
from chalicelib.domain.spec import KeyIn, parse_model
from chalicelib.observability import logger, record_metric
from chalicelib.services import audit, quotas
from chalicelib.services.auth import Principal, hash_key, new_api_key
from chalicelib.services.pages import decode_cursor, encode_cursor, parse_limit
from chalicelib.services.runs import iso_ms
from chalicelib.store import keys as key_store

__all__ = ["create_key", "list_keys", "delete_key", "key_view"]

CURSOR_SHAPE = {"id": "S", "tenant": "S", "created_ms": "N"}
_TENANT_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789_-")


def key_view(stored: ApiKey) -> dict:
    """A key as the API lists it: never the key, never its hash."""
    return {
        "id": stored.id,
        "tenant": stored.tenant,
        "role": stored.role,
        "created_at": iso_ms(stored.created_ms),
        "created_by": stored.created_by,
    }


def _tenant_for(principal: Principal, requested: str | None) -> str:
    """The tenant a key operation acts on: only the root key may name another one."""
    if requested is None or requested == principal.tenant:
        return principal.tenant
    if not principal.is_root:
        raise Forbidden("only the root key may act on another tenant's keys", field="tenant")
    return requested


def create_key(principal: Principal, body: Any, *, now: datetime) -> dict:
    """A new key for ``{role, tenant?}``; the answer is the only place the key ever appears."""
    data = parse_model(KeyIn, body)
    tenant = _tenant_for(principal, data.tenant)
    key_id = new_key_id()
    key = new_api_key(key_id)
    quotas.take(tenant, keys=1)  # 429 quota when the tenant has all the keys it may
    try:
        stored = key_store.put_key(
            key_id,
            tenant=tenant,
            role=data.role,
            key_hash=hash_key(key),
            created_ms=ms(now),
            created_by=principal.key_id,
        )
    except Exception:
        quotas.release(tenant, keys=1)
        raise
    audit.record(
        principal,
        "create_key",
        tenant=tenant,
        trigger_id=None,
        now=now,
        detail={"key_id": key_id, "role": data.role, "tenant": tenant},
    )
    record_metric("KeysCreated", role=data.role)
    logger.info("api key created", extra={"key_id": key_id, "tenant": tenant, "role": data.role})
    return {**key_view(stored), "key": key}


def list_keys(principal: Principal, params: dict) -> dict:
    """The tenant's keys, newest first (the root key may pass ``tenant``)."""
    requested = params.get("tenant") or None
    if requested is not None and not set(requested) <= _TENANT_CHARS:
        raise ValidationError("tenant is not a valid tenant name", field="tenant")
    tenant = _tenant_for(principal, requested)
    limit = parse_limit(params.get("limit"))
    cursor = decode_cursor(params.get("cursor"), shape=CURSOR_SHAPE, fixed={"tenant": tenant})
    page = key_store.query_keys(tenant, limit=limit, last_evaluated_key=cursor)
    items = [key_view(k) for k in page if not k.revoked]
    return {"items": items, "next_cursor": encode_cursor(page.last_evaluated_key)}


def _load_key(principal: Principal, key_id: str) -> ApiKey:
    if not key_id.startswith("key_") or len(key_id) > 64:
        raise NotFound(f"key {key_id!r} not found")
    stored = key_store.get_key(key_id, consistent=True)
    if stored is None:
        raise NotFound(f"key {key_id!r} not found")
    if stored.tenant != principal.tenant and not principal.is_root:
        raise NotFound(f"key {key_id!r} not found")
    return stored


def delete_key(principal: Principal, key_id: str, *, now: datetime) -> None:
    """Delete a key: it stops authenticating at once, and its triggers stop at their next fire."""
    removed = key_store.delete_key(_load_key(principal, key_id).id)
    if removed is None:  # a concurrent delete removed it: it releases, audits, answers 204
        raise NotFound(f"key {key_id!r} not found")
    stored = removed
    quotas.release(stored.tenant, keys=1)
    audit.record(
        principal,
        "delete_key",
        tenant=stored.tenant,
        trigger_id=None,
        now=now,
        detail={"key_id": stored.id, "role": stored.role, "tenant": stored.tenant},
    )
    logger.info("api key deleted", extra={"key_id": stored.id, "tenant": stored.tenant})
