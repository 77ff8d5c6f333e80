"""Large trigger payloads, kept in an item of their own beside the trigger's state.

A trigger's payload larger than ``PAYLOAD_INLINE_BYTES`` (as compact JSON) is not kept in
the trigger item that every claim, start and settle rewrites: DynamoDB bills a write unit
per KB of the item written, so a 50 KB payload would cost ~150 write units per fire.
Smaller payloads stay inline (no extra read per fire).
"""

from __future__ import annotations

import hashlib
import json

from pynamodb.exceptions import DoesNotExist

from chalicelib.store.state import StateModel
from chalicelib.store.triggers import TriggerModel

__all__ = [
    "PAYLOAD_INLINE_BYTES",
    "externalize_payload",
    "payload_ref",
    "load_spec",
    "delete_payload",
]

PAYLOAD_INLINE_BYTES = 256
_PAYLOAD_REF = "payload_ref"


def _payload_key(trigger_id: str, ref: str) -> str:
    # In the states table, beside the state item (keyed by the bare trigger id).
    return f"{trigger_id}#payload#{ref}"


def externalize_payload(
    trigger_id: str, spec: dict, *, existing: str | None = None
) -> tuple[dict, str | None]:
    """``spec`` to store on the trigger item: a large payload moved to an item of its own.

    The payload item is keyed by a digest of its content and written before the trigger
    item that refers to it, so a reader never finds a reference without its payload; a
    write that then fails leaves an orphan, never a dangling reference. A payload whose
    reference is ``existing`` (unchanged by an edit) is not written again. Returns the
    spec to store and the reference (None when the payload stays inline).
    """
    payload = spec.get("payload")
    if payload is None:
        return spec, None
    text = json.dumps(payload, separators=(",", ":"), sort_keys=True)
    if len(text.encode()) <= PAYLOAD_INLINE_BYTES:
        return spec, None
    ref = hashlib.sha256(text.encode()).hexdigest()[:24]
    if ref != existing:
        StateModel(_payload_key(trigger_id, ref), state=text, version=0).save()
    stored = {k: v for k, v in spec.items() if k != "payload"}
    stored[_PAYLOAD_REF] = ref
    return stored, ref


def payload_ref(spec: dict) -> str | None:
    """The reference of an externalized payload in a stored spec, if any."""
    ref = spec.get(_PAYLOAD_REF)
    return str(ref) if ref else None


def load_spec(item: TriggerModel) -> dict:
    """The trigger's settings as the user gave them (an externalized payload read back)."""
    spec = json.loads(item.spec or "{}")
    ref = spec.pop(_PAYLOAD_REF, None)
    if ref:
        try:
            stored = StateModel.get(_payload_key(item.id, str(ref)))
        except DoesNotExist:
            # Written before the trigger item: only a consistent-read lag can miss it.
            stored = StateModel.get(_payload_key(item.id, str(ref)), consistent_read=True)
        spec["payload"] = json.loads(stored.state)
    return spec


def delete_payload(trigger_id: str, ref: str | None) -> None:
    """Delete an externalized payload (no-op for None or one already gone)."""
    if not ref:
        return
    try:
        StateModel(_payload_key(trigger_id, ref)).delete()
    except DoesNotExist:
        pass
