"""Every metric the code emits, and the dashboard widget it is drawn in.

``METRICS`` lists every metric the code emits (namespace ``cronhook``; dimensions
``service`` and ``stage`` always, plus the ones named here) and the dashboard widget it
belongs to. ``tests/infra`` scans the code's ``record_metric`` calls and fails if one is
missing here, so the dashboard cannot silently lose a metric. Trigger, run and event ids
are never dimensions: they would make one metric per trigger, and CloudWatch bills per
metric (they ride along as EMF properties instead).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "NAMESPACE",
    "SERVICE",
    "BASE_DIMENSIONS",
    "FORBIDDEN_DIMENSIONS",
    "Metric",
    "METRICS",
]

NAMESPACE = "cronhook"
# record_metric puts these on every metric; an alarm must name all of a metric's dimensions.
BASE_DIMENSIONS = ("service", "stage")
SERVICE = "cronhook"
# Ids that must never be a dimension (one metric per trigger, billed per metric).
FORBIDDEN_DIMENSIONS = frozenset({"trigger_id", "run_id", "event_id", "key_id", "token", "tenant"})


@dataclass(frozen=True)
class Metric:
    """One metric: the widget it is drawn in, its extra dimension sets, statistic, label."""

    widget: str
    label: str
    dims: tuple[tuple[str, ...], ...] = ((),)
    stat: str = "Sum"


_FIRES = "Fires and runs"
_WEBHOOKS = "Webhooks by answer (202 accepted or ignored, 200 duplicate, 401/413, 410)"
_RECOVERY = "Races and recovery"
_EVENTS = "Event runs"
_GUARDS = "Guardrails: budgets, serialization, the switch, state contracts"
_CHANGES = "Changes through the API"
_FANOUT = "Heartbeat fan-out (FanOutShards): tick messages and enqueuers"
_ALERTS = "Lifecycle alerts: transitions, notifications, alert messages"

METRICS: dict[str, Metric] = {
    "Fires": Metric(_FIRES, "fires enqueued", dims=(("surface",),)),
    "Runs": Metric(_FIRES, "runs", dims=(("status",), ("status", "surface"))),
    "Lateness": Metric("Lateness of scheduled runs (ms)", "lateness", stat="p99"),
    "Disables": Metric("Triggers disabled, by reason", "disabled", dims=(("reason",),)),
    "WebhooksAccepted": Metric(_WEBHOOKS, "accepted", dims=(("source",),)),
    "WebhooksIgnored": Metric(_WEBHOOKS, "ignored by filter", dims=(("source",),)),
    "WebhooksDuplicate": Metric(_WEBHOOKS, "duplicate", dims=(("source",),)),
    "WebhooksRejected": Metric(_WEBHOOKS, "rejected", dims=(("reason",),)),
    "WebhooksRefused": Metric(_WEBHOOKS, "refused (gone)", dims=(("reason",),)),
    "HeartbeatDuration": Metric("Heartbeat", "tick duration (ms)", stat="Maximum"),
    "DueCount": Metric("Heartbeat", "due per tick", stat="Maximum"),
    "HeartbeatErrors": Metric("Heartbeat", "AWS calls failed in ticks"),
    "DueShardsRetired": Metric("Heartbeat", "due shards retired (a lowered count)"),
    "TicksFannedOut": Metric(_FANOUT, "shards sent to the enqueuers"),
    "TickSendFailed": Metric(_FANOUT, "tick messages not sent (read inline)"),
    "TicksDropped": Metric(_FANOUT, "tick messages dropped", dims=(("reason",),)),
    "EnqueuerDuration": Metric(_FANOUT, "enqueuer shard duration (ms)", stat="Maximum"),
    "ClaimsLost": Metric(_RECOVERY, "claims lost to races"),
    "LeasesReaped": Metric(_RECOVERY, "leases reaped (runs lost)"),
    "SettleFencedOut": Metric(_RECOVERY, "settles fenced out"),
    "FiresResent": Metric(_RECOVERY, "overdue fires sent again"),
    "FinishHookFailed": Metric(_RECOVERY, "finish hooks failed", dims=(("surface",),)),
    "RunsDropped": Metric(_RECOVERY, "dropped at the start fence", dims=(("surface",),)),
    "DeferSendFailed": Metric(_RECOVERY, "deferred re-send failed", dims=(("surface",),)),
    "RunsHandedBack": Metric(
        _RECOVERY, "handed back un-started (invocation out of time)", dims=(("surface",),)
    ),
    "EventsQueued": Metric(_EVENTS, "queued behind a run"),
    "EventPullFailed": Metric(_EVENTS, "pull of the next event failed"),
    "DeliveriesNotRecorded": Metric(
        _WEBHOOKS, "deliveries not recorded (hourly cap)", dims=(("outcome",),)
    ),
    "EventsSwept": Metric(_EVENTS, "dispatched by the sweep"),
    "EventDispatchFailed": Metric(_EVENTS, "dispatch failed"),
    "EventAttempts": Metric(_EVENTS, "attempts", dims=(("outcome",),)),
    "EventsSkipped": Metric(_EVENTS, "skipped"),
    "IngestDropped": Metric(_EVENTS, "ingest messages dropped", dims=(("reason",),)),
    "BudgetRefusals": Metric(_GUARDS, "budget refusals"),
    "SerializeWaits": Metric(_GUARDS, "serialize waits", dims=(("surface",),)),
    "SerializeHandoffs": Metric(_GUARDS, "serialize hand-offs"),
    "RunsDeferred": Metric(_GUARDS, "runs deferred", dims=(("surface",),)),
    "RunsBuffered": Metric(_GUARDS, "slots buffered behind a run (buffer_one, allow)"),
    "SlotsTakenOver": Metric(
        _RECOVERY, "standing pointers due on another slot, run by a later slot's message"
    ),
    "SwitchedOffRuns": Metric(_GUARDS, "runs while switched off", dims=(("surface",),)),
    "StateSchemaMismatch": Metric(_GUARDS, "state schema mismatches", dims=(("workflow",),)),
    "TriggersCreated": Metric(_CHANGES, "triggers created", dims=(("kind",),)),
    "TriggersUpdated": Metric(_CHANGES, "triggers updated", dims=(("kind",),)),
    "TriggersDeleted": Metric(_CHANGES, "triggers deleted"),
    "TriggersEnabled": Metric(_CHANGES, "triggers resumed (bulk)"),
    "TriggersDisabled": Metric(_CHANGES, "triggers paused (bulk)"),
    "BackfillSlots": Metric(_CHANGES, "backfill slots started"),
    "KeysCreated": Metric(_CHANGES, "API keys created", dims=(("role",),)),
    "QuotaRefusals": Metric(_CHANGES, "refused by a tenant quota (429)", dims=(("quota",),)),
    "EventsThrottled": Metric(_EVENTS, "throttled by the trigger's rate limit"),
    "WindowRuns": Metric(_EVENTS, "window runs", dims=(("kind",),)),
    "SlotsPassed": Metric(_RECOVERY, "slots passed over at the claim", dims=(("status",),)),
    "FiresPostponed": Metric(_GUARDS, "fires postponed", dims=(("surface",),)),
    "RunsQueuedWaiting": Metric(_GUARDS, "queued manual runs waiting for their trigger"),
    "Transitions": Metric(_ALERTS, "lifecycle transitions queued"),
    "AlertsNotQueued": Metric(_ALERTS, "lifecycle transitions not queued"),
    "AlertsDropped": Metric(_ALERTS, "alert messages dropped"),
    "Notifications": Metric(_ALERTS, "notifications", dims=(("outcome",),)),
    "LifecycleEvents": Metric(_ALERTS, "lifecycle events published", dims=(("kind",),)),
    "AlertMessages": Metric(_ALERTS, "alert messages", dims=(("outcome",),)),
}
