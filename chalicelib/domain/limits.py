"""What a request may hold: sizes, nesting depth, secret names. Pure, and pydantic-free.

The runner checks a workflow's returned state against ``MAX_STATE_BYTES``, the secrets
reader checks names with ``secret_path_problem`` and the API's body reader answers a
body too deep to parse with ``too_deep_error``: none of them loads the request models.
"""

from __future__ import annotations

import json
import re
from typing import Any

from chalicelib.domain.errors import ValidationError

__all__ = [
    "MAX_STATE_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_NOTE_CHARS",
    "depth_over",
    "nested_too_deep",
    "too_deep_error",
    "secret_path_problem",
]

MAX_STATE_BYTES = 64 * 1024
# How deep a JSON value in a body may nest (payload, state, filters). Far more than any
# real document needs, and far less than the ~1,000 frames at which Python's json (and
# pydantic) would fail with a RecursionError instead of an answer.
MAX_JSON_DEPTH = 64
MAX_NOTE_CHARS = 500

# A secret name or ``secret_scope``: '/'-separated segments of letters, digits, '_', '.'
# and '-'. A segment of dots only ('.', '..') is refused: the stores treat names as paths,
# and a scope of '..' would climb out of the tenant's prefix in IAM policy terms.
_SECRET_SEGMENT = re.compile(r"[A-Za-z0-9_.\-]+")
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:]')


def secret_path_problem(text: str) -> str | None:
    """Why ``text`` is not a valid secret name or scope, or None if it is."""
    if not isinstance(text, str) or not text or len(text) > 200:
        return "must be 1 to 200 characters"
    for segment in text.split("/"):
        if not _SECRET_SEGMENT.fullmatch(segment):
            return (
                "must be letters, digits, '_', '.', '-' with single '/' separators "
                "(no leading, trailing or doubled '/')"
            )
        if set(segment) == {"."}:
            return "may not contain a '.' or '..' segment"
    return None


def depth_over(value: Any, limit: int) -> bool:
    """True if `value` nests lists and objects more than `limit` deep (iteratively)."""
    stack = [(value, 1)]
    while stack:
        current, depth = stack.pop()
        if isinstance(current, dict | list):
            if depth > limit:
                return True
            children = current.values() if isinstance(current, dict) else current
            stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def nested_too_deep(field: str | None) -> ValidationError:
    """The 422 for a value nested deeper than ``MAX_JSON_DEPTH``, naming its field."""
    what = field or "the body"
    return ValidationError(f"{what} is nested more than {MAX_JSON_DEPTH} levels deep", field=field)


def too_deep_error(raw: bytes | str) -> ValidationError:
    """The 422 for a body too deep for ``json.loads`` (RecursionError), naming its field.

    The body cannot be parsed, so its text is scanned: the top-level key whose value
    passes ``MAX_JSON_DEPTH`` is the field at fault.
    """
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    depth, key, last_string = 0, None, None
    for token in _JSON_TOKEN.finditer(text):
        value = token.group()
        if value.startswith('"'):
            last_string = value
        elif value == ":":
            if depth == 1 and last_string is not None:
                key = json.loads(last_string)
        elif value in "{[":
            depth += 1
            if depth > MAX_JSON_DEPTH + 1:
                return nested_too_deep(key if isinstance(key, str) else None)
        else:
            depth -= 1
    return nested_too_deep(None)
