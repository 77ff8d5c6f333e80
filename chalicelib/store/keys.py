"""API keys: only a key's SHA-256 is stored; its id is part of the key itself."""

from __future__ import annotations

from pynamodb.attributes import BooleanAttribute, NumberAttribute, UnicodeAttribute
from pynamodb.exceptions import DoesNotExist
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex

from chalicelib.domain.records import ApiKey, Page
from chalicelib.store.base import TableBase
from chalicelib.store.removal import delete_if_present

__all__ = ["KeyModel", "KeysByTenant", "get_key", "put_key", "delete_key", "query_keys"]


class KeysByTenant(GlobalSecondaryIndex):
    class Meta:
        index_name = "by_tenant"
        projection = AllProjection()

    tenant = UnicodeAttribute(hash_key=True)
    created_ms = NumberAttribute(range_key=True)


class KeyModel(TableBase):
    """An API key: only its SHA-256 is stored; the id is part of the key itself."""

    class Meta(TableBase.Meta):
        table_name = "keys"

    id = UnicodeAttribute(hash_key=True)
    tenant = UnicodeAttribute()
    role = UnicodeAttribute()
    key_hash = UnicodeAttribute()
    created_ms = NumberAttribute()
    created_by = UnicodeAttribute(null=True)
    revoked = BooleanAttribute(default=False)

    by_tenant = KeysByTenant()


def _record(stored: KeyModel) -> ApiKey:
    return ApiKey(
        id=stored.id,
        tenant=stored.tenant,
        role=stored.role,
        key_hash=stored.key_hash,
        created_ms=int(stored.created_ms),
        created_by=stored.created_by,
        revoked=bool(stored.revoked),
    )


def get_key(key_id: str, *, consistent: bool = False) -> ApiKey | None:
    """The stored key, or None."""
    try:
        return _record(KeyModel.get(key_id, consistent_read=consistent))
    except DoesNotExist:
        return None


def put_key(
    key_id: str,
    *,
    tenant: str,
    role: str,
    key_hash: str,
    created_ms: int,
    created_by: str | None,
) -> ApiKey:
    """Store a new key (its id is fresh: the write fails rather than overwrite one)."""
    stored = KeyModel(
        key_id,
        tenant=tenant,
        role=role,
        key_hash=key_hash,
        created_ms=created_ms,
        created_by=created_by,
    )
    stored.save(condition=KeyModel.id.does_not_exist())
    return _record(stored)


def delete_key(key_id: str) -> ApiKey | None:
    """Delete a key: it stops authenticating at once. The key as it was when removed, or
    None if another caller removed it first (``store/removal.py``)."""
    removed = delete_if_present(KeyModel(key_id))
    return _record(removed) if removed is not None else None


def query_keys(tenant: str, *, limit: int, last_evaluated_key: dict | None) -> Page[ApiKey]:
    """One page of a tenant's keys, newest first."""
    results = KeyModel.by_tenant.query(
        tenant, scan_index_forward=False, limit=limit, last_evaluated_key=last_evaluated_key
    )
    items = tuple(_record(k) for k in results)
    return Page(items, results.last_evaluated_key)
