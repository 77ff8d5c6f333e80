"""What the command line accepts: durations, instants, JSON and URLs, as click types."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import click

__all__ = [
    "EVERY",
    "INSTANT",
    "JSON",
    "JSON_OBJECT",
    "check_url",
    "parse_every",
    "parse_instant",
]

_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_EVERY_RE = re.compile(r"(?:\d+[smhd])+")
_EVERY_PART_RE = re.compile(r"(\d+)([smhd])")


def parse_every(text: str) -> int:
    """Turn ``90s``, ``15m``, ``1h``, ``2d`` or a sum such as ``1h30m`` into seconds."""
    compact = text.strip().lower()
    if not _EVERY_RE.fullmatch(compact):
        raise ValueError(f"{text!r} is not a duration like 90s, 15m, 1h, 2d or 1h30m")
    seconds = sum(int(n) * _UNIT_S[unit] for n, unit in _EVERY_PART_RE.findall(compact))
    if seconds <= 0:
        raise ValueError(f"{text!r} is not a positive duration")
    return seconds


def parse_instant(text: str) -> str:
    """Normalise an ISO-8601 instant with an offset or ``Z`` to the contract's UTC ``...Z``."""
    try:
        instant = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO-8601 instant") from None
    # A naive time is ambiguous (whose local time?), so ask rather than guess.
    if instant.tzinfo is None or instant.utcoffset() is None:
        raise ValueError(f"{text!r} needs a UTC offset or Z, e.g. 2030-01-01T08:00:00Z")
    return instant.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _parse_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ValueError(f"not valid JSON: {exc}") from None


def _parse_json_object(text: str) -> dict:
    parsed = _parse_json(text)
    if not isinstance(parsed, dict):
        raise ValueError("must be a JSON object, e.g. '{\"cursor\": null}'")
    return parsed


class _Parsed(click.ParamType):
    """A text option turned into its wire form by ``parse``; a ValueError is a usage error."""

    def __init__(self, name: str, parse: Callable[[str], Any]):
        self.name = name
        self._parse = parse

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if not isinstance(value, str):
            return value  # already converted (a default, or a value given in Python)
        try:
            return self._parse(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


EVERY = _Parsed("DURATION", parse_every)
INSTANT = _Parsed("ISO", parse_instant)
JSON = _Parsed("JSON", _parse_json)
JSON_OBJECT = _Parsed("JSON", _parse_json_object)


def check_url(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """An ``--url`` callback: an http(s) URL with a host, without its trailing slash."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise click.BadParameter(f"{value!r} is not an http(s) URL", ctx, param)
    return value.rstrip("/")
