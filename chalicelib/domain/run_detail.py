"""What a run page shows beside the run record: its payload, why it failed, how long it took.

The run record is the hot item (one per fire, written by every settle): it stays small.
The payload a run was given and the detail of its failure live in a run-detail item of
their own, written only when there is something to keep (``detail_to_keep``): a failure,
a payload that is not the trigger's own (a manual fire with a body, a rerun), or a rerun's
origin. A success on a trigger's own payload writes nothing more than it did.

The sizes are the contract's: a payload is kept to 4 KB, a traceback to 8 KB, and an
``http:`` target's answer to its first 1 KB.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "PAYLOAD_LIMIT_BYTES",
    "TRACEBACK_LIMIT_BYTES",
    "ANSWER_EXCERPT_BYTES",
    "MESSAGE_LIMIT_BYTES",
    "clip_bytes",
    "clip_payload",
    "error_detail",
    "http_error_detail",
    "lambda_error_detail",
    "detail_to_keep",
    "duration_of",
]

PAYLOAD_LIMIT_BYTES = 4096
TRACEBACK_LIMIT_BYTES = 8192
ANSWER_EXCERPT_BYTES = 1024
MESSAGE_LIMIT_BYTES = 1000
_CLIPPED = "...[clipped]"


def clip_bytes(text: str, *, max_bytes: int) -> str:
    """``text`` cut to at most ``max_bytes`` of UTF-8, marked when cut."""
    raw = text.encode("utf-8")
    if len(raw) <= max_bytes:
        return text
    keep = max_bytes - len(_CLIPPED)
    return raw[:keep].decode("utf-8", errors="ignore") + _CLIPPED


def clip_payload(payload: Any) -> tuple[Any, bool]:
    """The payload to keep, and whether it was clipped.

    A payload of at most 4 KB (as compact JSON) is kept as it is; a larger one is kept as
    its JSON text cut to 4 KB (a string: the cut text is no longer JSON).
    """
    text = json.dumps(payload, separators=(",", ":"), default=str)
    if len(text.encode("utf-8")) <= PAYLOAD_LIMIT_BYTES:
        return payload, False
    return clip_bytes(text, max_bytes=PAYLOAD_LIMIT_BYTES), True


def error_detail(kind: str, message: str, traceback: str | None) -> dict:
    """``{type, message, traceback}`` with the contract's sizes."""
    return {
        "type": clip_bytes(kind or "Error", max_bytes=200),
        "message": clip_bytes(message or "", max_bytes=MESSAGE_LIMIT_BYTES),
        "traceback": clip_bytes(traceback, max_bytes=TRACEBACK_LIMIT_BYTES) if traceback else None,
    }


def lambda_error_detail(function_error: str, answer: Any) -> dict:
    """A Lambda function's error (``errorType``, ``errorMessage``, ``stackTrace``)."""
    if not isinstance(answer, dict):
        text = "" if answer is None else str(answer)
        return error_detail(function_error, text, None)
    stack = answer.get("stackTrace")
    trace: str | None
    if isinstance(stack, list):
        trace = "\n".join(str(line).rstrip("\n") for line in stack)
    else:
        trace = str(stack) if stack else None
    kind = str(answer.get("errorType") or function_error)
    return error_detail(kind, str(answer.get("errorMessage") or ""), trace)


def http_error_detail(status: int, answer: bytes) -> dict:
    """An ``http:`` target's refusal: its status, and the first 1 KB of its answer."""
    excerpt = answer[:ANSWER_EXCERPT_BYTES].decode("utf-8", errors="replace")
    detail = error_detail(f"HTTP {status}", f"http target answered {status}", excerpt or None)
    detail["status"] = status
    return detail


def detail_to_keep(
    *,
    failed: bool,
    error_detail: dict | None,
    payload_given: bool,
    payload: Any,
    rerun_of: str | None,
) -> dict | None:
    """The run-detail item's content, or None when there is nothing worth a write.

    ``payload_given``: the run's payload is its own (a manual fire's body, a rerun's), not
    the trigger's (a view shows the trigger's, or the event's, without a copy per run).
    A failure keeps its payload too, so the run page shows what the failing run was given.
    """
    keep: dict = {}
    if failed and error_detail:
        keep["error_detail"] = error_detail
    if payload_given or (failed and payload is not None):
        kept, clipped = clip_payload(payload)
        keep["payload"] = kept
        if clipped:
            keep["payload_clipped"] = True
    if rerun_of:
        keep["rerun_of"] = rerun_of
    return keep or None


def duration_of(started_ms: float | None, finished_ms: float | None) -> int | None:
    """How long a run took, in ms (None unless it started and finished)."""
    if started_ms is None or finished_ms is None:
        return None
    return max(0, int(finished_ms) - int(started_ms))
