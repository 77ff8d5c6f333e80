"""What people see of a target: an ``http:`` target's query values masked."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = ["MASK", "display_target", "mask_targets"]

MASK = "[masked]"


def display_target(workflow: str) -> str:
    """``workflow`` as views, audit and logs show it: an http target's query values masked.

    Users put tokens in query strings (``?token=...``); the path and the parameter names
    stay, so a reader can still tell targets apart.
    """
    if not isinstance(workflow, str) or not workflow.startswith("http:"):
        return workflow
    url = workflow[len("http:") :]
    try:
        parts = urlsplit(url)
    except ValueError:
        return "http:" + MASK
    if not parts.query and not parts.fragment:
        return workflow
    # Each value masked, names kept; a part with no "=" (a bare token: ?abc123) is all value.
    masked_query = "&".join(
        f"{part.split('=', 1)[0]}={MASK}" if "=" in part else MASK
        for part in parts.query.split("&")
        if part
    )
    return "http:" + urlunsplit(
        (parts.scheme, parts.netloc, parts.path, masked_query, MASK if parts.fragment else "")
    )


def mask_targets(value: Any) -> Any:
    """``value`` (an audit detail, a log field) with every http target in it masked."""
    if isinstance(value, str):
        return display_target(value)
    if isinstance(value, dict):
        return {k: mask_targets(v) for k, v in value.items()}
    if isinstance(value, list):
        return [mask_targets(v) for v in value]
    return value
