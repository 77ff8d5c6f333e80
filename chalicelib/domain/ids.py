"""Identifiers. A run id is stable per fire, so a retried fire keeps its identity.

Run ids start with their trigger id and sort by time within it:
``<trigger_id>.<ms:013d><s|e|m><suffix>`` (schedule slot, event, manual fire).
"""

from __future__ import annotations

import base64
import hashlib
import secrets

__all__ = [
    "new_trigger_id",
    "new_key_id",
    "new_webhook_token",
    "trigger_id_of_token",
    "schedule_run_id",
    "event_run_id",
    "manual_run_id",
    "trigger_id_of_run",
    "event_id_for",
    "run_sort_key",
]


def _rand(nbytes: int) -> str:
    return base64.b32encode(secrets.token_bytes(nbytes)).decode().rstrip("=").lower()


def new_trigger_id() -> str:
    """A random trigger id (``trg_`` + 16 base32 chars)."""
    return "trg_" + _rand(10)


def new_key_id() -> str:
    """A random API key id."""
    return "key_" + _rand(10)


def new_webhook_token(trigger_id: str) -> str:
    """An unguessable token for ``/hooks/{token}``; it names its trigger so ingress reads one item."""
    return f"{trigger_id}.{secrets.token_urlsafe(24)}"


def trigger_id_of_token(token: str) -> str | None:
    """The trigger id a token names, or None for a malformed token."""
    head, sep, tail = token.partition(".")
    if not sep or not head.startswith("trg_") or len(head) > 40 or not tail:
        return None
    return head


def schedule_run_id(trigger_id: str, scheduled_ms: int) -> str:
    """The run id of a scheduled slot: the same slot always gets the same id."""
    return f"{trigger_id}.{scheduled_ms:013d}s"


def event_run_id(trigger_id: str, received_ms: int, event_id: str) -> str:
    """The run id of an event (kept across its retries and replays)."""
    return f"{trigger_id}.{received_ms:013d}e{event_id[-10:]}"


def manual_run_id(trigger_id: str, now_ms: int) -> str:
    """The run id of a ``fire now``."""
    return f"{trigger_id}.{now_ms:013d}m{_rand(3)}"


def trigger_id_of_run(run_id: str) -> str | None:
    """The trigger a run id belongs to, or None if it is not a run id."""
    head, sep, tail = run_id.partition(".")
    if not sep or not head.startswith("trg_") or len(tail) < 14 or not tail[:13].isdigit():
        return None
    return head


def event_id_for(trigger_id: str, dedupe_key: str | None) -> str:
    """Derived from the dedupe key (so the event's put is its dedupe), else random."""
    if dedupe_key is None:
        return "evt_" + _rand(12)
    digest = hashlib.sha256(f"{trigger_id}\0{dedupe_key}".encode()).digest()
    return "evt_" + base64.b32encode(digest[:15]).decode().lower()


def run_sort_key(at_ms: int, run_id: str) -> str:
    """Sort key for tenant-wide run listings, newest last."""
    return f"{at_ms:013d}#{run_id}"
