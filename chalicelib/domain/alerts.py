"""Alerts, the pure part: which lifecycle transitions a run makes, which policy hears of
them, when a notification is held back, and the words of a message.

A *transition* is a change in a trigger's life that someone may need to hear about:

- ``failed``: a run failed (its failure counted; the streak is ``consecutive_failures``);
- ``recovered``: a run succeeded after a failing streak (``failures_before`` > 0);
- ``disabled``: the trigger was disabled, with the reason;
- ``late``: a slot not started ``late_after_s`` after its second;
- ``no_event``: an event trigger that received nothing for ``no_event_for_s``;
- ``budget``: the period's spend crossed a tenth of ``max_usd`` (``percent_before`` to
  ``percent_after``).

Every transition goes on the stack's EventBridge bus (``DETAIL_TYPES``); a policy turns
some of them into notifications: one ``failed`` per streak (the run that makes the streak
``failures_in_a_row`` long), one ``recovered`` when such a streak ends, ``quiet_s`` per
trigger and kind, and one message per channel per minute (a digest when several).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = [
    "KINDS",
    "DETAIL_TYPES",
    "DIGEST_SHOWN",
    "BUDGET_STEP_PERCENT",
    "Transition",
    "run_transitions",
    "budget_crossed",
    "matches",
    "notifies",
    "quiet_until_ms",
    "minute_of",
    "flush_at_ms",
    "notification_id",
    "summary_line",
    "message_subject",
    "message_text",
]

KINDS = ("failed", "disabled", "recovered", "late", "no_event", "budget")

# The ``detail-type`` of each transition on the bus (``source: "cronhook"``).
DETAIL_TYPES = {
    "failed": "Run Failed",
    "recovered": "Run Succeeded After Failure",
    "disabled": "Trigger Disabled",
    "late": "Slot Late",
    "no_event": "No Event",
    "budget": "Budget Threshold",
}

# A digest names this many triggers, then "and N more".
DIGEST_SHOWN = 5

# The fire path reports a budget's spend each time it crosses a multiple of this percent
# (so at most ten reports a period); a policy's ``budget_percent`` is matched against the
# range a crossing covers.
BUDGET_STEP_PERCENT = 10

_WORDS = {
    "failed": "failed",
    "recovered": "recovered",
    "disabled": "was disabled",
    "late": "is late",
    "no_event": "heard no event",
    "budget": "crossed its budget threshold",
    "test": "test notification",
}


@dataclass(frozen=True)
class Transition:
    """One lifecycle transition of one trigger (the message the detectors queue)."""

    kind: str
    tenant: str
    trigger_id: str
    at_ms: int
    run_id: str | None = None
    reason: str | None = None
    error: str | None = None
    consecutive_failures: int = 0
    failures_before: int = 0
    slot_ms: int | None = None
    last_event_ms: int | None = None
    percent_before: float | None = None
    percent_after: float | None = None
    # late and no_event are found per policy (the threshold is the policy's).
    policy_id: str | None = None
    extra: dict = field(default_factory=dict)

    @property
    def id(self) -> str:
        """Stable for the same transition detected twice (a redelivered message)."""
        mark = self.run_id or str(self.slot_ms or self.last_event_ms or self.at_ms)
        return f"{self.trigger_id}:{self.kind}:{mark}"

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v not in (None, {}, 0) or k == "at_ms"}

    @classmethod
    def from_dict(cls, raw: dict) -> Transition:
        known = {f for f in cls.__dataclass_fields__}
        fields = {k: v for k, v in raw.items() if k in known}
        if fields.get("kind") not in KINDS:
            raise ValueError("not a transition")
        return cls(**fields)


def run_transitions(
    *,
    succeeded: bool | None,
    failure_counts: bool,
    failures_before: int,
    disabled_reason: str | None,
) -> list[str]:
    """The transitions one settled run makes (empty for most runs: no call is made then).

    ``failures_before`` is the streak as the run's claim found it. A run that neither
    succeeded nor failed (skipped, refused) makes none, unless it disabled the trigger.
    """
    kinds = []
    if succeeded is False and failure_counts:
        kinds.append("failed")
    if succeeded is True and failures_before > 0:
        kinds.append("recovered")
    if disabled_reason:
        kinds.append("disabled")
    return kinds


def budget_crossed(spent_before: float, spent_after: float, max_usd: float) -> bool:
    """Whether a run's cost moved the spend across a multiple of ``BUDGET_STEP_PERCENT``."""
    if max_usd <= 0 or spent_after <= spent_before:
        return False
    step = max_usd * BUDGET_STEP_PERCENT / 100
    return int(spent_after // step) > int(spent_before // step)


def matches(match: dict, *, trigger_id: str, workflow: str, tags: Sequence[str]) -> bool:
    """Whether a policy's ``match`` covers a trigger: each non-empty list must hold one of
    its values (tags: any tag in common); an empty ``match`` covers the whole tenant."""
    wanted_tags = match.get("tags") or []
    if wanted_tags and not set(wanted_tags) & set(tags):
        return False
    workflows = match.get("workflows") or []
    if workflows and workflow not in workflows:
        return False
    ids = match.get("trigger_ids") or []
    return not (ids and trigger_id not in ids)


def notifies(policy: dict, transition: Transition) -> bool:
    """Whether ``policy`` (a stored policy body) sends a notification for ``transition``.

    ``failed`` is the run that makes the streak exactly ``failures_in_a_row`` long (one a
    streak); ``recovered`` ends a streak that was at least that long (one that alerted).
    """
    kind = transition.kind
    if kind not in (policy.get("on") or []):
        return False
    if transition.policy_id is not None and transition.policy_id != policy.get("id"):
        return False
    in_a_row = int(policy.get("failures_in_a_row") or 1)
    if kind == "failed":
        return transition.consecutive_failures == in_a_row
    if kind == "recovered":
        return transition.failures_before >= in_a_row
    if kind == "budget":
        wanted = float(policy.get("budget_percent") or 80)
        before = float(transition.percent_before or 0)
        return before < wanted <= float(transition.percent_after or 0)
    return True


def quiet_until_ms(last_sent_ms: int | None, quiet_s: int) -> int | None:
    """Until when a trigger's next notification of a kind is held back, or None."""
    if last_sent_ms is None or quiet_s <= 0:
        return None
    return last_sent_ms + quiet_s * 1000


def minute_of(at_ms: int) -> int:
    """The digest bucket of an instant: its epoch minute."""
    return at_ms // 60_000


# A bucket is flushed this long after its minute ends: a notification written in the
# minute's last instant is in the store by then.
FLUSH_MARGIN_MS = 5_000


def flush_at_ms(minute: int) -> int:
    """When the bucket of ``minute`` is sent."""
    return (minute + 1) * 60_000 + FLUSH_MARGIN_MS


def notification_id(transition_id: str, policy_id: str, channel: str) -> str:
    """One notification per transition, policy and channel: the same ids on a redelivery."""
    digest = hashlib.sha256(f"{transition_id}|{policy_id}|{channel}".encode()).hexdigest()
    return "ntf_" + digest[:20]


def summary_line(item: dict) -> str:
    """One line about one notification: the trigger, what happened, why."""
    name = item.get("title") or item.get("trigger_id") or "?"
    words = _WORDS.get(str(item.get("kind")), str(item.get("kind")))
    line = f"{name} {words}"
    if item.get("trigger_id") and item.get("title"):
        line += f" ({item['trigger_id']})"
    detail = item.get("reason") or item.get("error")
    if detail:
        line += f": {str(detail)[:200]}"
    return line


def message_subject(policy_name: str, items: Sequence[dict]) -> str:
    """A message's subject: the one line, or the count of a digest."""
    if len(items) == 1:
        return f"[cronhook] {summary_line(items[0])}"[:200]
    kinds = sorted({str(i.get("kind")) for i in items})
    return f"[cronhook] {policy_name}: {len(items)} notifications ({', '.join(kinds)})"[:200]


def message_text(policy_name: str, items: Sequence[dict], *, console_url: str) -> str:
    """A message's plain text: each notification (the first ``DIGEST_SHOWN`` of a digest)
    with its reason, last error and a link to the run in the console."""
    lines: list[str] = []
    if len(items) > 1:
        lines.append(f"{_digest_count(items)} (alert policy {policy_name!r}).")
        lines.append("")
    for item in items[:DIGEST_SHOWN]:
        lines.append(f"- {summary_line(item)}")
        lines.extend(_detail_lines(item, console_url=console_url))
    if len(items) > DIGEST_SHOWN:
        lines.append(f"... and {len(items) - DIGEST_SHOWN} more.")
    lines.append("")
    lines.append(f"Alert policy: {policy_name}. Console: {console_url}/")
    return "\n".join(lines)


def _digest_count(items: Sequence[dict]) -> str:
    """A digest's headline: distinct triggers, then notifications (one trigger may have
    several in a minute: ``failed`` then ``disabled``)."""
    triggers = len({str(i["trigger_id"]) for i in items if i.get("trigger_id")})
    notes = f"{len(items)} notifications"
    if not triggers:
        return notes
    needs = "trigger needs" if triggers == 1 else "triggers need"
    return f"{triggers} {needs} attention: {notes}"


def _detail_lines(item: dict, *, console_url: str) -> list[str]:
    out = []
    if item.get("error") and item.get("reason"):
        out.append(f"  last error: {str(item['error'])[:300]}")
    if item.get("run_id"):
        out.append(f"  run: {console_url}/#/runs/{item['run_id']}")
    elif item.get("trigger_id"):
        out.append(f"  trigger: {console_url}/#/triggers/{item['trigger_id']}")
    return out


def describe(item: dict) -> dict[str, Any]:
    """The fields of a notification every channel's payload carries."""
    keys = ("kind", "trigger_id", "title", "run_id", "reason", "error", "at")
    return {k: item.get(k) for k in keys if item.get(k) is not None}
