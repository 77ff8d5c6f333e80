"""What remote targets share: the fire as they get it, and reading their JSON answer."""

from __future__ import annotations

import json

from chalicelib.workflows.model import Fire, WorkflowFailed

__all__ = ["MAX_ANSWER_BYTES", "fire_body", "read_answer"]

MAX_ANSWER_BYTES = 1024 * 1024


def fire_body(fire: Fire) -> bytes:
    """The fire as JSON bytes (``Fire.to_json()``), the body both kinds of target get."""
    return json.dumps(fire.to_json(), separators=(",", ":"), default=str).encode("utf-8")


def read_answer(raw: bytes, *, what: str, strict: bool) -> dict | None:
    """The JSON answer of a target as a dict for ``to_result`` (None: nothing to apply)."""
    if len(raw) > MAX_ANSWER_BYTES:
        raise WorkflowFailed(f"{what} answered more than {MAX_ANSWER_BYTES} bytes")
    if not raw.strip():
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        if strict:
            raise WorkflowFailed(f"{what} answered with something that is not JSON") from None
        return {"output": raw[:4096].decode("utf-8", "replace")}
    if value is None:
        return None
    return value if isinstance(value, dict) else {"output": value}
