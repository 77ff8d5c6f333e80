"""Rotated webhook secrets: which previous secrets still verify, and for how long. Pure.

A rotation keeps the secret it replaces verifying for ``grace_s``; each previous secret
keeps its own grace, so a second rotation inside the first one's grace does not cut it
short. ``grace_s`` 0 is "it leaked": every older secret stops at once. Instants are
epoch milliseconds; secrets are opaque (sealed) strings here.
"""

from __future__ import annotations

import json

__all__ = ["MAX_PREVIOUS_SECRETS", "previous_in_grace", "previous_after_rotation"]

# Secrets verifying at once besides the current one (rotations inside each other's grace).
MAX_PREVIOUS_SECRETS = 3


def previous_in_grace(
    *, prev_sealed: str | None, prev_until: int | None, older: str | None, now_ms: int
) -> list[tuple[str, int]]:
    """The previous secrets still in their grace at ``now_ms``, newest first.

    ``prev_sealed``/``prev_until`` is the newest; ``older`` the JSON ``[[sealed, until],
    ...]`` of the ones before it (anything unreadable there is ignored).
    """
    found: list[tuple[str, int]] = []
    if prev_sealed and int(prev_until or 0) > now_ms:
        found.append((prev_sealed, int(prev_until or 0)))
    try:
        entries = json.loads(older or "[]")
    except ValueError:
        entries = []
    for entry in entries if isinstance(entries, list) else []:
        if (
            isinstance(entry, list)
            and len(entry) == 2
            and isinstance(entry[0], str)
            and int(entry[1]) > now_ms
        ):
            found.append((entry[0], int(entry[1])))
    return found


def previous_after_rotation(
    *, current: str | None, previous: list[tuple[str, int]], grace_s: int, now_ms: int
) -> list[tuple[str, int]]:
    """The previous secrets once ``current`` is replaced, newest first, at most
    ``MAX_PREVIOUS_SECRETS``: ``current`` verifies ``grace_s`` longer; ``grace_s`` 0 ends all."""
    if grace_s <= 0:
        return []
    kept = list(previous)
    if current:
        kept = [(current, now_ms + grace_s * 1000), *kept]
    return kept[:MAX_PREVIOUS_SECRETS]
