"""Cookbook: an RSS repurposer that keeps its place item by item.

The trigger's state holds a cursor: the ``guid`` of the newest item already posted. Each run
reads the feed, takes the items newer than the cursor oldest first, posts them one at a
time and advances the cursor after each post. When a post fails mid-feed the workflow
raises ``WorkflowFailed(..., state=...)`` with the cursor it reached: the run is ``failed``
and the state still moves forward, so the next run starts after the last item that was
posted, not at the top of the feed again. (A plain exception would keep the old state, and
the next run would post the first items a second time.)

Outside action: each post carries the dedupe key ``rss/<fire_id>/<guid>``. A retry of the
same fire presents the same keys, so a post that landed just before a crash is not
repeated by the receiver.
"""

from __future__ import annotations

import json
import urllib.request
import xml.etree.ElementTree as ET

from chalicelib.workflows import Fire, Result, WorkflowFailed, workflow

STATE_SCHEMA = {
    "type": "object",
    "properties": {
        "feed_url": {"type": "string"},
        "post_url": {"type": "string"},
        "cursor": {"type": ["string", "null"]},
        "posted": {"type": "integer", "minimum": 0},
    },
    "required": ["feed_url", "post_url"],
}


def parse_items(xml_text: str) -> list[dict]:
    """The feed's items as ``{guid, title, link}``, oldest first (feeds list newest first)."""
    root = ET.fromstring(xml_text)  # noqa: S314 (a feed the trigger's owner configured)
    items = []
    for item in root.iter("item"):
        guid = (item.findtext("guid") or item.findtext("link") or "").strip()
        if guid:
            items.append(
                {
                    "guid": guid,
                    "title": (item.findtext("title") or "").strip(),
                    "link": (item.findtext("link") or "").strip(),
                }
            )
    return list(reversed(items))


def items_after(items: list[dict], cursor: str | None) -> list[dict]:
    """The items newer than ``cursor`` (all of them when the cursor is unknown or unset)."""
    guids = [item["guid"] for item in items]
    if cursor in guids:
        return items[guids.index(cursor) + 1 :]
    return items


def dedupe_key(fire: Fire, guid: str) -> str:
    """One post per item per fire, however often the fire is retried."""
    return f"rss/{fire.fire_id}/{guid}"


@workflow("rss-repurposer", state_schema=STATE_SCHEMA)
def rss_repurposer(fire: Fire) -> Result:
    """Posts each new feed item once, advancing the cursor after every post."""
    state = dict(fire.state)
    with urllib.request.urlopen(state["feed_url"], timeout=20) as answer:  # noqa: S310
        items = items_after(parse_items(answer.read().decode()), state.get("cursor"))
    posted = []
    for item in items:
        request = urllib.request.Request(
            state["post_url"],
            data=json.dumps({"title": item["title"], "link": item["link"]}).encode(),
            method="POST",
            headers={
                "Content-Type": "application/json",
                "Idempotency-Key": dedupe_key(fire, item["guid"]),
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=20):  # noqa: S310
                pass
        except OSError as exc:  # urllib's HTTPError and URLError are OSErrors
            # Keep the partial progress: the items before this one are posted.
            raise WorkflowFailed(
                f"posting {item['guid']!r} failed ({exc}); {len(posted)} posted before it",
                state=state,
            ) from None
        state["cursor"] = item["guid"]
        state["posted"] = int(state.get("posted") or 0) + 1
        posted.append(item["guid"])
    return Result(state=state, output={"posted": posted})
