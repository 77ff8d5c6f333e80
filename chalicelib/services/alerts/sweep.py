"""The alert sweep: ``late`` slots and ``no_event`` triggers, per policy.

Each heartbeat tick asks for it (``detect.request_sweep``: one message on the alerts
queue); the alerts function runs it (``sweep_findings``), so its reads cost the tick no
time and the heartbeat's role no table.

Both need a threshold, and the threshold is a policy's (``late_after_s``,
``no_event_for_s``), so the sweep looks only at the triggers a policy watches for them:

1. The policies that name ``late`` or ``no_event`` (one query of their own partition).
2. Each is looked at every ``sweep_every_min`` minutes (every minute for a 5-minute
   threshold, every 5 for a day's): the tenant's triggers it covers (the tenant index,
   then one BatchGetItem per 100).
3. ``late``: an active schedule whose next slot is ``late_after_s`` past and still not
   claimed (the claim moves the slot: runners stopped, a backlog, a lost message).
   ``no_event``: an active event trigger whose newest event (or its creation) is
   ``no_event_for_s`` old (one keys-only query per event trigger).
4. A finding is queued once (``store.first_sighting``, keyed by the slot or by the last
   event: the same lateness seen by the next tick is not news) for the worker.

A finding's identity is its slot (``late``) or its last event (``no_event``), never the
tick that saw it: the same lateness seen again is the same transition.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from chalicelib.domain.alerts import Transition, matches
from chalicelib.domain.epoch_ms import ms
from chalicelib.domain.trigger_spec import TriggerSpec
from chalicelib.observability import logger
from chalicelib.services.alerts.detect import queue_transitions
from chalicelib.services.runs import iso_ms
from chalicelib.store import alerts as store
from chalicelib.store import payloads, trigger_reads
from chalicelib.store import triggers as triggers_store

__all__ = ["sweep_findings", "sweep_every_min", "findings", "spec_with_about"]


def spec_with_about(item: Any, about: dict) -> TriggerSpec:
    """A trigger's spec with its title and tags (kept apart from the hot item)."""
    return TriggerSpec.from_dict({**json.loads(item.spec or "{}"), **about})


def sweep_every_min(threshold_s: int) -> int:
    """How often a policy is looked at: a fifth of its threshold, 1 to 5 minutes."""
    return max(1, min(5, threshold_s // 300))


def sweep_findings(*, now: datetime, report: Any = None) -> int:
    """One pass; the findings queued."""
    queued = 0
    for tenant, policy_id in store.swept_policies():
        try:
            policy = store.get_policy(tenant, policy_id)
            if policy is None:
                continue
            found = findings(tenant, policy, now=now)
            fresh = [t for t in found if _first(policy_id, t, now=now)]
            queue_transitions(fresh)
            queued += len(fresh)
        except Exception:
            if report is not None:
                report.errors += 1
            logger.exception("alert sweep failed for a policy", extra={"alert_id": policy_id})
    return queued


def _first(policy_id: str, transition: Transition, *, now: datetime) -> bool:
    return store.first_sighting(policy_id, transition.id, expires=ms(now) // 1000 + 30 * 86400)


def _due(policy: dict, kind: str, *, now: datetime) -> bool:
    if kind not in (policy.get("on") or []):
        return False
    threshold = int(policy.get("late_after_s" if kind == "late" else "no_event_for_s") or 300)
    return (ms(now) // 60_000) % sweep_every_min(threshold) == 0


def findings(tenant: str, policy: dict, *, now: datetime) -> list[Transition]:
    """The ``late`` and ``no_event`` transitions of the triggers ``policy`` covers, now."""
    kinds = [k for k in ("late", "no_event") if _due(policy, k, now=now)]
    if not kinds:
        return []
    match = policy.get("match") or {}
    ids = match.get("trigger_ids") or trigger_reads.tenant_trigger_ids(tenant)
    out: list[Transition] = []
    for start in range(0, len(ids), 100):
        items = trigger_reads.get_triggers(ids[start : start + 100])
        abouts = payloads.load_abouts(items)
        for item in items:
            spec = spec_with_about(item, abouts.get(item.id, {}))
            covered = matches(match, trigger_id=item.id, workflow=item.workflow, tags=spec.tags)
            if item.tenant != tenant or item.status != "active" or not covered:
                continue
            if "late" in kinds and item.kind != "event":
                out.extend(_late(item, policy, now=now))
            if "no_event" in kinds and item.kind == "event":
                out.extend(_quiet(item, policy, now=now))
    return out


def _late(item: Any, policy: dict, *, now: datetime) -> list[Transition]:
    slot = triggers_store.next_slot_of(item)
    threshold_ms = int(policy.get("late_after_s") or 300) * 1000
    if slot is None or ms(now) - slot < threshold_ms:
        return []
    late_s = (ms(now) - slot) // 1000
    return [
        Transition(
            kind="late",
            tenant=item.tenant,
            trigger_id=item.id,
            at_ms=ms(now),
            slot_ms=slot,
            policy_id=policy["id"],
            reason=f"its slot at {iso_ms(slot)} has not started ({late_s} s after its second)",
        )
    ]


def _quiet(item: Any, policy: dict, *, now: datetime) -> list[Transition]:
    last = store.last_event_ms(item.id) or int(item.created_ms or 0)
    threshold_ms = int(policy.get("no_event_for_s") or 86400) * 1000
    if ms(now) - last < threshold_ms:
        return []
    return [
        Transition(
            kind="no_event",
            tenant=item.tenant,
            trigger_id=item.id,
            at_ms=ms(now),
            last_event_ms=last,
            policy_id=policy["id"],
            reason=f"no event for {(ms(now) - last) // 1000} s "
            f"(the policy expects one every {threshold_ms // 1000} s)",
        )
    ]
