"""Request bodies read strictly: one body, one meaning, whoever reads it.

``json.loads`` reads two things that give a body a meaning other readers do not share:

- a key given twice in one object (``"workflow": "echo", "workflow": "fail"``): Python
  keeps the last, while a proxy or a WAF in front may judge the first, and so sees
  another request than the one that runs. Refused: 400 naming the key's path.
- a number too large for a float (``1e400``): Python makes it ``inf``, which the store
  then writes as ``Infinity`` (invalid JSON: every later read of it fails) or a payload
  as ``null``. Refused: 422 naming the field. (``NaN`` and ``Infinity`` as literals are
  not JSON at all: 400, as any malformed body.)

The API reads every JSON body through ``loads`` (``wiring.json_body``).
"""

from __future__ import annotations

import json
import math
from typing import Any

from chalicelib.domain.errors import BadRequest, ValidationError

__all__ = ["loads"]


class _Repeated(dict):
    """An object in which a key came twice (``repeated`` names the first such key)."""

    repeated: str = ""


def _object(pairs: list[tuple[str, Any]]) -> dict:
    built = dict(pairs)
    if len(built) == len(pairs):
        return built
    found = _Repeated(pairs)
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            found.repeated = key
            break
        seen.add(key)
    return found


def _reject_constant(value: str) -> Any:
    raise ValueError(f"{value} is not valid JSON")


def _path(parts: tuple[Any, ...]) -> str | None:
    return ".".join(str(p) for p in parts) or None


def _check(document: Any) -> None:
    """Raise for the first repeated key or non-finite number (depth first, iteratively:
    a body may be as deep as ``json.loads`` allows)."""
    stack: list[tuple[tuple[Any, ...], Any]] = [((), document)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, _Repeated):
            where = _path((*path, node.repeated))
            raise BadRequest(f"the key {node.repeated!r} is given twice in one object", field=where)
        if isinstance(node, float) and not math.isfinite(node):
            raise ValidationError(
                "must be a finite number (this one is beyond the range of a double)",
                field=_path(path),
            )
        if isinstance(node, dict):
            stack.extend(((*path, k), v) for k, v in reversed(node.items()))
        elif isinstance(node, list):
            stack.extend(((*path, i), v) for i, v in reversed(list(enumerate(node))))


def loads(raw: bytes | str) -> Any:
    """``raw`` parsed as JSON; BadRequest if malformed or a key repeats, ValidationError
    for a number beyond a double's range. RecursionError passes (the caller names it)."""
    try:
        document = json.loads(raw, parse_constant=_reject_constant, object_pairs_hook=_object)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(f"malformed JSON: {exc}") from None
    _check(document)
    return document
