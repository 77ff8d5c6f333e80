"""API keys: who is calling, for which tenant, with which role."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from pynamodb.exceptions import DoesNotExist

from chalicelib.domain.errors import Forbidden, Unauthorized
from chalicelib.settings import get_settings
from chalicelib.store.models import KeyModel

__all__ = ["Principal", "ROLES", "authenticate", "require", "hash_key", "new_api_key", "root_key"]

ROLES = ("viewer", "operator", "admin")
ROOT_KEY_ID = "root"


@dataclass(frozen=True)
class Principal:
    """The caller: a key id, its tenant and role."""

    key_id: str
    tenant: str
    role: str

    @property
    def is_root(self) -> bool:
        return self.key_id == ROOT_KEY_ID


def hash_key(key: str) -> str:
    """SHA-256 of a key, hex: the only form a key is stored in."""
    return hashlib.sha256(key.encode()).hexdigest()


def new_api_key(key_id: str) -> str:
    """A fresh key that names its id (so a lookup is one GetItem)."""
    return f"chk_{key_id}_{secrets.token_urlsafe(32)}"


_root_cache: dict[str, str | None] = {}


def root_key() -> str | None:
    """The root key: ``CRONHOOK_API_KEY`` locally, an SSM SecureString in AWS (cached)."""
    settings = get_settings()
    if settings.root_key:
        return settings.root_key
    if not settings.root_key_param:
        return None
    if settings.root_key_param not in _root_cache:
        from chalicelib.store.aws import client

        answer = client("ssm").get_parameter(Name=settings.root_key_param, WithDecryption=True)
        _root_cache[settings.root_key_param] = answer["Parameter"]["Value"]
    return _root_cache[settings.root_key_param]


def authenticate(authorization: str | None) -> Principal:
    """The principal for an ``Authorization: Bearer <key>`` header, or 401."""
    if not authorization or not authorization.lower().startswith("bearer "):
        raise Unauthorized("missing API key: send Authorization: Bearer <key>")
    key = authorization[7:].strip()
    root = root_key()
    if root and hmac.compare_digest(key.encode(), root.encode()):
        return Principal(ROOT_KEY_ID, "local", "admin")
    parts = key.split("_")
    # A key names its id; anything longer than an id could be is not one of ours (and would
    # be refused by DynamoDB as a key, not answered 401).
    if len(parts) >= 4 and parts[0] == "chk" and parts[1] == "key" and 0 < len(parts[2]) <= 40:
        key_id = f"key_{parts[2]}"
        try:
            stored = KeyModel.get(key_id)
        except DoesNotExist:
            stored = None
        if (
            stored is not None
            and not stored.revoked
            and hmac.compare_digest(stored.key_hash, hash_key(key))
        ):
            return Principal(key_id, stored.tenant, stored.role)
    raise Unauthorized("invalid API key")


def require(principal: Principal, role: str) -> None:
    """403 unless ``principal`` has at least ``role``."""
    if ROLES.index(principal.role) < ROLES.index(role):
        raise Forbidden(f"this action needs the {role} role; the key has {principal.role}")


def principal_still_allowed(key_id: str | None, tenant: str, role: str = "operator") -> bool:
    """Whether the key that created a trigger still exists with at least ``role`` in ``tenant``."""
    if not key_id or key_id == ROOT_KEY_ID:
        return True
    try:
        stored = KeyModel.get(key_id)
    except DoesNotExist:
        return False
    return (
        (not stored.revoked)
        and stored.tenant == tenant
        and ROLES.index(stored.role) >= ROLES.index(role)
    )
