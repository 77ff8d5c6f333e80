"""What is kept apart from the hot trigger item: a large payload, and the "about" item.

The trigger item is rewritten by every claim, start fence and settle, and DynamoDB bills
a write unit per KB of the item written. So two parts of the spec live in items of their
own, beside the trigger's state (in the states table, keyed ``<trigger_id>#<kind>#<ref>``):

- a payload larger than ``PAYLOAD_INLINE_BYTES`` (as compact JSON): a 50 KB payload on
  the item would cost ~150 write units per fire. Smaller payloads stay inline (no extra
  read per fire);
- the title and tags (``trigger_spec.ABOUT_FIELDS``): up to 200 characters and 50 tags,
  read only by the views and lists, never by a fire.

Both are keyed by a digest of their content and written before the trigger item that
refers to them, so a reader never finds a reference without its item; a write that then
fails leaves an orphan, never a dangling reference. The spec stores ``payload_ref`` or
``about_ref`` in their place.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

from pynamodb.exceptions import DoesNotExist

from chalicelib.domain.records import Trigger
from chalicelib.domain.trigger_spec import expand, split_about
from chalicelib.store.state import StateModel

__all__ = [
    "PAYLOAD_INLINE_BYTES",
    "externalize_payload",
    "externalize_about",
    "payload_ref",
    "load_spec",
    "load_abouts",
    "delete_payload",
    "delete_about",
]

PAYLOAD_INLINE_BYTES = 256
_PAYLOAD_REF = "payload_ref"
_ABOUT_REF = "about_ref"


def _key(trigger_id: str, kind: str, ref: str) -> str:
    # In the states table, beside the state item (keyed by the bare trigger id).
    return f"{trigger_id}#{kind}#{ref}"


def _put_apart(trigger_id: str, kind: str, value: object, *, existing: str | None) -> str:
    """Write ``value`` (JSON) to its own item unless ``existing`` is its reference already."""
    text = json.dumps(value, separators=(",", ":"), sort_keys=True)
    ref = hashlib.sha256(text.encode()).hexdigest()[:24]
    if ref != existing:
        StateModel(_key(trigger_id, kind, ref), state=text, version=0).save()
    return ref


def _get_apart(trigger_id: str, kind: str, ref: str) -> object:
    try:
        stored = StateModel.get(_key(trigger_id, kind, ref))
    except DoesNotExist:
        # Written before the trigger item: only a consistent-read lag can miss it.
        stored = StateModel.get(_key(trigger_id, kind, ref), consistent_read=True)
    return json.loads(stored.state)


def externalize_payload(
    trigger_id: str, spec: dict, *, existing: str | None = None
) -> tuple[dict, str | None]:
    """``spec`` to store on the trigger item: a large payload moved to an item of its own.

    A payload whose reference is ``existing`` (unchanged by an edit) is not written again.
    Returns the spec to store and the reference (None when the payload stays inline).
    """
    payload = spec.get("payload")
    if payload is None:
        return spec, None
    text = json.dumps(payload, separators=(",", ":"), sort_keys=True)
    if len(text.encode()) <= PAYLOAD_INLINE_BYTES:
        return spec, None
    ref = _put_apart(trigger_id, "payload", payload, existing=existing)
    stored = {k: v for k, v in spec.items() if k != "payload"}
    stored[_PAYLOAD_REF] = ref
    return stored, ref


def externalize_about(
    trigger_id: str, spec: dict, *, existing: str | None = None
) -> tuple[dict, str | None]:
    """``spec`` (compact) to store: its title and tags moved to the about item.

    Returns the spec to store and the about item's reference (None: no title, no tags).
    """
    hot, about = split_about(spec)
    if not about:
        return hot, None
    ref = _put_apart(trigger_id, "about", about, existing=existing)
    hot[_ABOUT_REF] = ref
    return hot, ref


def payload_ref(spec: dict) -> str | None:
    """The reference of an externalized payload in a stored spec, if any."""
    ref = spec.get(_PAYLOAD_REF)
    return str(ref) if ref else None


def load_spec(item: Trigger, *, about: bool | dict = False) -> dict:
    """The trigger's settings as the user gave them, every default spelled out (as the
    request model dumps them) and an externalized payload read back.

    ``about=True`` reads the title and tags back too (the views, and a PATCH, which stores
    the whole spec again); a dict is the about part read already (``load_abouts``). The
    fire path leaves it out: no read a fire does not need.
    """
    spec = json.loads(item.spec or "{}")
    about_ref = spec.pop(_ABOUT_REF, None)
    if about_ref and about is not False:
        read = about if isinstance(about, dict) else _get_apart(item.id, "about", about_ref)
        spec.update(read if isinstance(read, dict) else {})
    spec = expand(spec)
    ref = spec.pop(_PAYLOAD_REF, None)
    if ref:
        spec["payload"] = _get_apart(item.id, "payload", str(ref))
    return spec


def load_abouts(items: Iterable[Trigger]) -> dict[str, dict]:
    """The about parts of ``items`` that have one, by trigger id (one BatchGetItem a 100)."""
    refs = {}
    for item in items:
        ref = json.loads(item.spec or "{}").get(_ABOUT_REF)
        if ref:
            refs[_key(item.id, "about", str(ref))] = (item.id, str(ref))
    found = {row.trigger_id: row.state for row in StateModel.batch_get(list(refs))} if refs else {}
    abouts: dict[str, dict] = {}
    for key, (trigger_id, ref) in refs.items():
        text = found.get(key)
        read = json.loads(text) if text is not None else _get_apart(trigger_id, "about", ref)
        abouts[trigger_id] = read if isinstance(read, dict) else {}
    return abouts


def delete_payload(trigger_id: str, ref: str | None) -> None:
    """Delete an externalized payload (no-op for None or one already gone)."""
    _delete_apart(trigger_id, "payload", ref)


def delete_about(trigger_id: str, ref: str | None) -> None:
    """Delete an about item (no-op for None or one already gone)."""
    _delete_apart(trigger_id, "about", ref)


def _delete_apart(trigger_id: str, kind: str, ref: str | None) -> None:
    if not ref:
        return
    try:
        StateModel(_key(trigger_id, kind, ref)).delete()
    except DoesNotExist:
        pass
