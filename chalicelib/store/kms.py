"""Webhook secrets sealed with KMS: the item stores the ciphertext and the key id, never the secret.

A sealed secret is the text ``k1:<key id>:<base64 ciphertext>``. The encryption context
names the trigger, so a sealed secret copied onto another trigger does not unseal.

``unseal`` is on the ingress hot path, so plaintexts are cached in process for a short
while, keyed by the ciphertext (the same ciphertext always opens to the same secret; a
rotated secret has a new ciphertext, so the cache never serves a stale secret). The TTL
bounds how long a disabled KMS key keeps working in a warm process.
"""

from __future__ import annotations

import base64
import binascii
import threading
from collections import OrderedDict

from botocore.exceptions import BotoCoreError, ClientError

from chalicelib.domain.errors import ServiceUnavailable
from chalicelib.settings import get_settings
from chalicelib.store.aws import client

__all__ = ["seal", "unseal", "clear_cache", "CACHE_TTL_S"]

CACHE_TTL_S = 300.0
_CACHE_MAX = 1024
_PREFIX = "k1"
_CONTEXT_KEY = "cronhook:trigger"

_lock = threading.Lock()
# sealed text -> (plaintext, cached at epoch s)
_cache: OrderedDict[str, tuple[str, float]] = OrderedDict()


def seal(secret: str, *, trigger_id: str) -> str:
    """Encrypt ``secret`` for ``trigger_id`` with the configured KMS key."""
    key_id = get_settings().kms_key_id
    if not key_id:
        raise ServiceUnavailable("no KMS key is configured for webhook secrets")
    try:
        answer = client("kms").encrypt(
            KeyId=key_id,
            Plaintext=secret.encode("utf-8"),
            EncryptionContext={_CONTEXT_KEY: trigger_id},
        )
    except (ClientError, BotoCoreError) as exc:
        raise ServiceUnavailable("the secret could not be sealed; try again") from exc
    # The key's short id (not the ARN) keeps the hot trigger item small.
    short_id = str(answer.get("KeyId") or key_id).rsplit("/", 1)[-1]
    blob = base64.b64encode(answer["CiphertextBlob"]).decode("ascii")
    return f"{_PREFIX}:{short_id}:{blob}"


def unseal(sealed: str, *, trigger_id: str, now_s: float) -> str:
    """The secret inside ``sealed`` (cached for ``CACHE_TTL_S``); ValueError if not ours."""
    with _lock:
        hit = _cache.get(sealed)
        if hit is not None and 0 <= now_s - hit[1] < CACHE_TTL_S:
            _cache.move_to_end(sealed)
            return hit[0]
    prefix, sep, rest = sealed.partition(":")
    key_id, sep2, blob = rest.partition(":")
    if prefix != _PREFIX or not sep or not sep2 or not key_id:
        raise ValueError("not a sealed secret")
    try:
        ciphertext = base64.b64decode(blob, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("not a sealed secret") from None
    try:
        answer = client("kms").decrypt(
            KeyId=key_id,
            CiphertextBlob=ciphertext,
            EncryptionContext={_CONTEXT_KEY: trigger_id},
        )
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        if code in ("InvalidCiphertextException", "IncorrectKeyException"):
            raise ValueError("sealed secret does not open for this trigger") from None
        raise ServiceUnavailable("the secret could not be unsealed; try again") from None
    except BotoCoreError:
        raise ServiceUnavailable("the secret could not be unsealed; try again") from None
    secret = answer["Plaintext"].decode("utf-8")
    with _lock:
        _cache[sealed] = (secret, now_s)
        _cache.move_to_end(sealed)
        while len(_cache) > _CACHE_MAX:
            _cache.popitem(last=False)
    return secret


def clear_cache() -> None:
    """Forget every cached plaintext (tests, key rotation drills)."""
    with _lock:
        _cache.clear()
