"""Cookbook: a client approval as two workflows, split by a webhook trigger.

1. ``approval-request`` (any trigger: a cron, a manual fire) posts a draft to the client
   and creates, through ``fire.triggers``, a generic webhook trigger for
   ``approval-decision``. The draft carries that trigger's URL and signing secret, so the
   client's system can answer with a signed request. Nothing waits in between: no run is
   held open for days while the client reads.
2. The client's signed approval (``POST /hooks/{token}``, ``X-Signature-256``) runs
   ``approval-decision``, which records the decision and deletes its own trigger: the URL
   answers 401 afterwards, so a second answer (or a replay) does nothing.

Outside action: the draft is posted with the dedupe key ``approval/<fire_id>``, so a retried
fire sends the client one draft. (The retry does create a second, unused webhook trigger;
it expires with ``limits.expires_at``.)
"""

from __future__ import annotations

import json
import urllib.request
from datetime import timedelta

from chalicelib.workflows import Fire, Result, WorkflowFailed, workflow

ANSWER_WITHIN = timedelta(days=14)


def decision_trigger(draft_id: str, *, expires_at: str) -> dict:
    """The webhook trigger that waits for the client's answer to ``draft_id``."""
    return {
        "workflow": "approval-decision",
        "title": f"Approval of {draft_id}",
        "tags": ["approval"],
        "event": {"source": "webhook"},
        "state": {"draft_id": draft_id},
        "limits": {"expires_at": expires_at, "max_runs": 1},
    }


@workflow("approval-request")
def approval_request(fire: Fire) -> Result:
    """Posts a draft to the client with a signed answer URL of its own."""
    payload = fire.payload if isinstance(fire.payload, dict) else {}
    draft, client_url = payload.get("draft"), payload.get("client_url")
    if not isinstance(draft, dict) or not isinstance(client_url, str):
        raise WorkflowFailed("the payload needs 'draft' (an object) and 'client_url'")
    if fire.scheduled_for is None:
        raise WorkflowFailed("an approval request needs the fire's time")
    draft_id = f"draft-{fire.fire_id}"
    expires = (fire.scheduled_for + ANSWER_WITHIN).strftime("%Y-%m-%dT%H:%M:%SZ")
    created = fire.triggers.create(decision_trigger(draft_id, expires_at=expires))
    webhook = created["webhook"]
    body = {
        "draft_id": draft_id,
        "draft": draft,
        "answer_url": webhook["url"],
        # The client signs its answer with this (HMAC-SHA256 of the body, hex, in
        # X-Signature-256: sha256=...). It is sent to the client only, never returned.
        "answer_secret": webhook["secret"],
    }
    request = urllib.request.Request(
        client_url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json", "Idempotency-Key": f"approval/{fire.fire_id}"},
    )
    with urllib.request.urlopen(request, timeout=20):  # noqa: S310 (the client's URL)
        pass
    return Result(output={"draft_id": draft_id, "decision_trigger_id": created["id"]})


@workflow("approval-decision")
def approval_decision(fire: Fire) -> Result:
    """Records the client's decision on a draft, then deletes its own trigger."""
    answer = fire.payload if isinstance(fire.payload, dict) else {}
    draft_id = (fire.state or {}).get("draft_id")
    if answer.get("draft_id") != draft_id:
        raise WorkflowFailed(f"the answer is for {answer.get('draft_id')!r}, not {draft_id!r}")
    decision = "approved" if answer.get("approved") is True else "rejected"
    fire.triggers.delete(fire.trigger_id)  # carried out once this run has settled
    return Result(
        state={"draft_id": draft_id, "decision": decision},
        output={"draft_id": draft_id, "decision": decision, "comment": answer.get("comment")},
    )
