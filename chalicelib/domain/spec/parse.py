"""A request body checked against a model; the first problem becomes a 422 naming its field."""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from chalicelib.domain.errors import PayloadTooLarge, ValidationError
from chalicelib.domain.limits import MAX_JSON_DEPTH, MAX_STATE_BYTES, depth_over, nested_too_deep

__all__ = ["parse_model", "problem_text"]

M = TypeVar("M", bound=BaseModel)


def _field_path(loc: tuple) -> str:
    # A union's branch is named in the location ("constrained-str", "list[...]"): it is
    # not a field, so it is left out (a field's name is an identifier).
    parts = [p for p in loc if not isinstance(p, str) or p.isidentifier()]
    return ".".join("from" if p == "from_" else str(p) for p in parts)


_TYPE_WORDS = {
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "int_from_float": "must be an integer",
    "int_parsing": "must be an integer",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "list_type": "must be a list",
    "missing": "is required",
    "finite_number": "must be a finite number",
    "datetime_type": "must be an ISO-8601 instant such as 2027-01-01T09:00:00Z",
    "datetime_parsing": "must be an ISO-8601 instant such as 2027-01-01T09:00:00Z",
    "datetime_from_date_parsing": "must be an ISO-8601 instant such as 2027-01-01T09:00:00Z",
    "json_invalid": "is not valid JSON",
}
_BOUNDS = {
    "greater_than_equal": ("at least", "ge"),
    "greater_than": ("more than", "gt"),
    "less_than_equal": ("at most", "le"),
    "less_than": ("less than", "lt"),
}


def _size_text(kind: str, ctx: dict) -> str | None:
    """The words for a too-short or too-long string or list, else None."""
    if kind == "string_too_short":
        least = int(ctx.get("min_length", 1))
        return "must not be empty" if least <= 1 else f"must be at least {least} characters"
    if kind == "string_too_long":
        return f"must be at most {ctx.get('max_length')} characters"
    if kind == "too_short":
        return f"must have at least {ctx.get('min_length')} items"
    if kind == "too_long":
        return f"must have at most {ctx.get('max_length')} items"
    return None


def problem_text(error: Any) -> str:
    """One pydantic error in cronhook's words (pydantic's own phrasing never reaches a client)."""
    kind = error.get("type", "")
    ctx = error.get("ctx") or {}
    if kind in _TYPE_WORDS:
        return _TYPE_WORDS[kind]
    sized = _size_text(kind, ctx)
    if sized is not None:
        return sized
    if kind in _BOUNDS:
        words, key = _BOUNDS[kind]
        return f"must be {words} {ctx.get(key)}"
    if kind in ("literal_error", "enum"):
        options = re.findall(r"'([^']*)'", str(ctx.get("expected", "")))
        if options:
            return "must be one of " + ", ".join(options)
    if kind == "string_pattern_mismatch":
        return f"must match {ctx.get('pattern')}"
    if kind == "value_error":
        return str(ctx.get("error") or error.get("msg", "is not valid"))
    text = str(error.get("msg") or "is not valid")
    return text[:1].lower() + text[1:]


def _validation_error(exc: PydanticValidationError) -> ValidationError:
    first = exc.errors()[0]
    path = _field_path(tuple(first.get("loc", ())))
    if first.get("type", "") == "extra_forbidden":
        message = f"unknown field {path!r}"
    else:
        message = f"{path}: {problem_text(first)}" if path else problem_text(first)
    return ValidationError(message, field=path or None)


def _not_unicode(value: Any, path: tuple) -> tuple | None:
    """The path of the first key or string holding a lone surrogate, else None."""
    if isinstance(value, str):
        return None if _is_text(value) else path
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and not _is_text(key):
                return (*path, key.encode("utf-8", "backslashreplace").decode())
            found = _not_unicode(item, (*path, key))
            if found is not None:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _not_unicode(item, (*path, index))
            if found is not None:
                return found
    return None


def _is_text(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def parse_model(model: type[M], body: Any) -> M:
    """Validate ``body`` against ``model``; the first problem becomes a 422 naming its field.

    ``body`` is parsed JSON (a dict). It is validated in pydantic's JSON mode, strictly:
    JSON's own types decide (``true`` is not ``1``, ``"5"`` is not ``5``), while an ISO-8601
    string is still an instant and an integer still a float. (Python-mode strict would
    refuse every datetime string, and lax mode takes ``true`` for ``1``.)
    """
    if not isinstance(body, dict):
        raise ValidationError("the body must be a JSON object", field=None)
    for name, value in body.items():
        if depth_over(value, MAX_JSON_DEPTH):
            raise nested_too_deep(str(name))
    broken = _not_unicode(body, ())
    if broken is not None:
        # JSON may escape half a surrogate pair (\ud800); text cannot hold it, and the
        # validator's parser answered "is not valid JSON" naming nothing.
        where = ".".join(str(p) for p in broken)
        raise ValidationError(
            f"{where}: must be valid Unicode text (half a surrogate pair is not)",
            field=where or None,
        )
    try:
        raw = json.dumps(body)
    except (TypeError, ValueError):
        raise ValidationError("the body must be a JSON object", field=None) from None
    try:
        parsed = model.model_validate_json(raw, strict=True)
    except PydanticValidationError as exc:
        raise _validation_error(exc) from None
    state = getattr(parsed, "state", None)
    if state is not None and len(json.dumps(state)) > MAX_STATE_BYTES:
        raise PayloadTooLarge(f"state is larger than {MAX_STATE_BYTES} bytes", field="state")
    payload = getattr(parsed, "payload", None)
    if payload is not None and len(json.dumps(payload)) > MAX_STATE_BYTES:
        raise PayloadTooLarge(f"payload is larger than {MAX_STATE_BYTES} bytes", field="payload")
    return parsed
