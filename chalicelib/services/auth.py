"""API keys: who is calling, for which tenant, with which role."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass

from chalicelib.domain.errors import Forbidden, Unauthorized
from chalicelib.observability import logger
from chalicelib.settings import get_settings
from chalicelib.store import keys as key_store

__all__ = [
    "Principal",
    "ROLES",
    "CLOUDFORMATION_KEY_ID",
    "authenticate",
    "require",
    "hash_key",
    "new_api_key",
    "root_key",
]

ROLES = ("viewer", "operator", "admin")
ROOT_KEY_ID = "root"
# The creator of a trigger declared in a CloudFormation stack (services/trigger_resource.py):
# the account itself, through the stack's TriggerProvider function, never a key.
CLOUDFORMATION_KEY_ID = "cloudformation"


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


# How long a warm process keeps the root key it read from SSM: after a rotation the old
# key stops working within this time (docs/runbook.md, "Rotating keys and secrets").
ROOT_KEY_TTL_S = 300.0

# Monotonic, so a wall-clock step never stretches or shortens the TTL (tests replace it).
_monotonic = time.monotonic
# parameter name -> (the key, the monotonic time it was read)
_root_cache: dict[str, tuple[str, float]] = {}


def root_key() -> str | None:
    """The root key: ``CRONHOOK_API_KEY`` locally, an SSM SecureString in AWS.

    The SSM value is kept for ``ROOT_KEY_TTL_S`` (monotonic clock), then read again. If
    that read fails, the value read before is used for at most one more TTL (every call
    tries again; every ``/v1`` request needs this, so a blip in SSM must not answer 503
    to every key); after that, or with nothing read before, the error propagates (the
    authorizer answers 503).
    """
    settings = get_settings()
    if settings.root_key:
        return settings.root_key
    name = settings.root_key_param
    if not name:
        return None
    now = _monotonic()
    cached = _root_cache.get(name)
    if cached is not None and 0 <= now - cached[1] < ROOT_KEY_TTL_S:
        return cached[0]
    from chalicelib.store.aws import client

    try:
        answer = client("ssm").get_parameter(Name=name, WithDecryption=True)
    except Exception:
        if cached is not None and 0 <= now - cached[1] < 2 * ROOT_KEY_TTL_S:
            logger.warning("the root key could not be read again; using the one read before")
            return cached[0]
        raise
    value = answer["Parameter"]["Value"]
    _root_cache[name] = (value, now)
    return value


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
        stored = key_store.get_key(key_id)
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
    if not key_id or key_id in (ROOT_KEY_ID, CLOUDFORMATION_KEY_ID):
        return True
    stored = key_store.get_key(key_id)
    if stored is None:
        return False
    return (
        (not stored.revoked)
        and stored.tenant == tenant
        and ROLES.index(stored.role) >= ROLES.index(role)
    )
