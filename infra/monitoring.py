"""The console view: a CloudWatch dashboard, alarms and their SNS topic.

``METRICS`` lists every metric the code emits (namespace ``cronhook``; dimensions
``service`` and ``stage`` always, plus the ones named here) and the dashboard widget it
belongs to. ``tests/infra`` scans the code's ``record_metric`` calls and fails if one is
missing here, so the dashboard cannot silently lose a metric. Trigger, run and event ids
are never dimensions: they would make one metric per trigger, and CloudWatch bills per
metric (they ride along as EMF properties instead).

Every alarm has a section of the same name in ``docs/runbook.md``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

__all__ = [
    "METRICS",
    "ALARMS",
    "BASE_DIMENSIONS",
    "FORBIDDEN_DIMENSIONS",
    "Metric",
    "monitoring_resources",
    "dashboard_body",
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


@dataclass(frozen=True)
class Alarm:
    """A CloudWatch alarm; its logical id is also its ``docs/runbook.md`` heading."""

    logical_id: str
    properties: dict


def _base(stage: str) -> list[dict]:
    return [{"Name": "service", "Value": SERVICE}, {"Name": "stage", "Value": stage}]


def _alarms(stage: str, api_stage: str) -> list[Alarm]:
    topic = [{"Ref": "AlarmTopic"}]

    def alarm(logical_id: str, description: str, **props) -> Alarm:
        base = {
            "AlarmName": f"cronhook-{stage}-{logical_id}",
            "AlarmDescription": f"{description} Runbook: docs/runbook.md, '{logical_id}'.",
            "AlarmActions": topic,
            "OKActions": topic,
            "TreatMissingData": "notBreaching",
        }
        base.update(props)
        return Alarm(logical_id, base)

    def lambda_metric(name: str, function: str) -> dict:
        return {
            "Namespace": "AWS/Lambda",
            "MetricName": name,
            "Dimensions": [{"Name": "FunctionName", "Value": {"Ref": function}}],
        }

    return [
        alarm(
            "DeadLetterQueueNotEmpty",
            "Fire messages reached the dead-letter queue: their runs did not happen.",
            Namespace="AWS/SQS",
            MetricName="ApproximateNumberOfMessagesVisible",
            Dimensions=[
                {"Name": "QueueName", "Value": {"Fn::GetAtt": ["DeadLetterQueue", "QueueName"]}}
            ],
            Statistic="Maximum",
            Period=300,
            EvaluationPeriods=1,
            Threshold=0,
            ComparisonOperator="GreaterThanThreshold",
        ),
        alarm(
            "HeartbeatErrors",
            "The heartbeat failed, or AWS calls inside its ticks failed, in 2 of the last 3 "
            "five-minute windows: schedules may not be firing.",
            # A tick that fails as a whole is a Lambda error; a tick that skips the rows
            # whose AWS calls failed counts them in HeartbeatErrors. Either one counts.
            Metrics=[
                {
                    "Id": "crashed",
                    "ReturnData": False,
                    "MetricStat": {
                        "Metric": lambda_metric("Errors", "Heartbeat"),
                        "Period": 300,
                        "Stat": "Sum",
                    },
                },
                {
                    # A fanned-out tick's shard that failed as a whole (FanOutShards).
                    "Id": "enqueuers",
                    "ReturnData": False,
                    "MetricStat": {
                        "Metric": lambda_metric("Errors", "Enqueuer"),
                        "Period": 300,
                        "Stat": "Sum",
                    },
                },
                {
                    "Id": "rows",
                    "ReturnData": False,
                    "MetricStat": {
                        "Metric": {
                            "Namespace": NAMESPACE,
                            "MetricName": "HeartbeatErrors",
                            "Dimensions": _base(stage),
                        },
                        "Period": 300,
                        "Stat": "Sum",
                    },
                },
                {
                    "Id": "errors",
                    "Label": "heartbeat errors",
                    "Expression": "FILL(crashed, 0) + FILL(enqueuers, 0) + FILL(rows, 0)",
                    "ReturnData": True,
                },
            ],
            EvaluationPeriods=3,
            DatapointsToAlarm=2,
            Threshold=1,
            ComparisonOperator="GreaterThanOrEqualToThreshold",
        ),
        alarm(
            "HeartbeatSlow",
            "A heartbeat tick took more than 50 s of its 60 s budget, or never finished (killed "
            "at its timeout: Lambda still reports its duration).",
            # The app's HeartbeatDuration is written at the end of a tick, so a tick killed
            # at its timeout never writes it; Lambda's Duration is reported for every
            # invocation, a timed-out one too (= the timeout). The larger of the two counts.
            Metrics=[
                {
                    "Id": "lambda",
                    "ReturnData": False,
                    "MetricStat": {
                        "Metric": lambda_metric("Duration", "Heartbeat"),
                        "Period": 300,
                        "Stat": "Maximum",
                    },
                },
                {
                    "Id": "tick",
                    "ReturnData": False,
                    "MetricStat": {
                        "Metric": {
                            "Namespace": NAMESPACE,
                            "MetricName": "HeartbeatDuration",
                            "Dimensions": _base(stage),
                        },
                        "Period": 300,
                        "Stat": "Maximum",
                    },
                },
                {
                    "Id": "slowest",
                    "Label": "slowest tick (ms)",
                    "Expression": "MAX([FILL(lambda, 0), FILL(tick, 0)])",
                    "ReturnData": True,
                },
            ],
            EvaluationPeriods=1,
            Threshold=50_000,
            ComparisonOperator="GreaterThanThreshold",
        ),
        alarm(
            "HeartbeatStopped",
            "The heartbeat was not invoked for 10 minutes: nothing scheduled fires.",
            **lambda_metric("Invocations", "Heartbeat"),
            Statistic="Sum",
            Period=300,
            EvaluationPeriods=2,
            Threshold=1,
            ComparisonOperator="LessThanThreshold",
            TreatMissingData="breaching",
        ),
        alarm(
            "LatenessHigh",
            "The p99 lateness of scheduled runs was above 10 s in 2 of the last 3 five-minute windows.",
            Namespace=NAMESPACE,
            MetricName="Lateness",
            Dimensions=_base(stage),
            ExtendedStatistic="p99",
            Period=300,
            EvaluationPeriods=3,
            DatapointsToAlarm=2,
            Threshold=10_000,
            ComparisonOperator="GreaterThanThreshold",
        ),
        alarm(
            "DisablesByFailures",
            "Triggers are being disabled for consecutive failures: at least the threshold within an hour.",
            Namespace=NAMESPACE,
            MetricName="Disables",
            Dimensions=[*_base(stage), {"Name": "reason", "Value": "failures"}],
            Statistic="Sum",
            Period=3600,
            EvaluationPeriods=1,
            Threshold={"Ref": "DisablesByFailuresThreshold"},
            ComparisonOperator="GreaterThanOrEqualToThreshold",
        ),
        alarm(
            "Api5xx",
            "The API answered 5xx: a bug or a failing AWS dependency (clients never cause a 5xx).",
            Namespace="AWS/ApiGateway",
            MetricName="5XXError",
            Dimensions=[
                {"Name": "ApiName", "Value": f"cronhook-{stage}"},
                {"Name": "Stage", "Value": api_stage},
            ],
            Statistic="Sum",
            Period=300,
            EvaluationPeriods=1,
            Threshold=1,
            ComparisonOperator="GreaterThanOrEqualToThreshold",
        ),
        alarm(
            "RunsLost",
            "Runs were lost: a claim's lease ran out before its run settled (runner crashed, "
            "timed out, or its message was dead-lettered); each counts as a failure.",
            Namespace=NAMESPACE,
            MetricName="LeasesReaped",
            Dimensions=_base(stage),
            Statistic="Sum",
            Period=300,
            EvaluationPeriods=1,
            Threshold=1,
            ComparisonOperator="GreaterThanOrEqualToThreshold",
        ),
        alarm(
            "FiresQueueAgeHigh",
            "The oldest fire message waited over 10 minutes in 2 consecutive five-minute "
            "windows: runners are not keeping up or not polling.",
            Namespace="AWS/SQS",
            MetricName="ApproximateAgeOfOldestMessage",
            Dimensions=[
                {"Name": "QueueName", "Value": {"Fn::GetAtt": ["FiresQueue", "QueueName"]}}
            ],
            Statistic="Maximum",
            Period=300,
            EvaluationPeriods=2,
            DatapointsToAlarm=2,
            Threshold=600,
            ComparisonOperator="GreaterThanThreshold",
        ),
        alarm(
            "LambdaThrottles",
            "A cronhook function was throttled (account concurrency, or a reservation too "
            "small): ticks, runs or API calls were refused by Lambda.",
            Metrics=[
                *(
                    {
                        "Id": f"throttles{i}",
                        "ReturnData": False,
                        "MetricStat": {
                            "Metric": lambda_metric("Throttles", function),
                            "Period": 300,
                            "Stat": "Sum",
                        },
                    }
                    for i, function in enumerate(
                        (
                            "APIHandler",
                            "Authorizer",
                            "Heartbeat",
                            "Runner",
                            "Ingest",
                            "Enqueuer",
                            "TriggerProvider",
                            "Alerts",
                        )
                    )
                ),
                {
                    "Id": "throttles",
                    "Label": "throttles, all functions",
                    "Expression": "SUM([FILL(throttles0, 0), FILL(throttles1, 0), "
                    "FILL(throttles2, 0), FILL(throttles3, 0), FILL(throttles4, 0), "
                    "FILL(throttles5, 0), FILL(throttles6, 0), FILL(throttles7, 0)])",
                    "ReturnData": True,
                },
            ],
            EvaluationPeriods=1,
            Threshold=1,
            ComparisonOperator="GreaterThanOrEqualToThreshold",
        ),
        alarm(
            "TickQueueAgeHigh",
            "A tick message waited over a minute for an enqueuer (FanOutShards on): the "
            "enqueuers are throttled or failing, their shards' fires go out late.",
            Namespace="AWS/SQS",
            MetricName="ApproximateAgeOfOldestMessage",
            Dimensions=[{"Name": "QueueName", "Value": {"Fn::GetAtt": ["TickQueue", "QueueName"]}}],
            Statistic="Maximum",
            Period=300,
            EvaluationPeriods=1,
            Threshold=60,
            ComparisonOperator="GreaterThanThreshold",
        ),
        alarm(
            "RunnerErrors",
            "A runner invocation failed as a whole (not a workflow failure): its messages are retried, then dead-lettered.",
            **lambda_metric("Errors", "Runner"),
            Statistic="Sum",
            Period=300,
            EvaluationPeriods=1,
            Threshold=1,
            ComparisonOperator="GreaterThanOrEqualToThreshold",
        ),
    ]


ALARMS = [a.logical_id for a in _alarms("dev", "api")]


def _searches(name: str, stage: str) -> list[list[dict]]:
    """One SEARCH per dimension set: a schema matches only metrics with exactly its dims."""
    spec = METRICS[name]
    out = []
    for i, dims in enumerate(spec.dims):
        schema = ",".join((NAMESPACE, *BASE_DIMENSIONS, *dims))
        query = f'{{{schema}}} MetricName="{name}" stage="{stage}"'
        # CloudWatch's metrics array holds arrays only: an expression is [{...}].
        out.append(
            [
                {
                    "expression": f"SEARCH('{query}', '{spec.stat}', 300)",
                    "id": f"{name[0].lower()}{name[1:]}{i}",
                    "label": spec.label,
                }
            ]
        )
    return out


def _own(name: str, stage: str, **options: object) -> list:
    return [NAMESPACE, name, "service", SERVICE, "stage", stage, options]


def _widget(title: str, metrics: list, *, stat: str = "Sum", **extra: object) -> dict:
    properties = {
        "title": title,
        "region": "${AWS::Region}",
        "view": "timeSeries",
        "stacked": False,
        "period": 300,
        "stat": stat,
        "metrics": metrics,
    }
    properties.update(extra)
    return {"type": "metric", "width": 8, "height": 6, "properties": properties}


def dashboard_body(stage: str, *, api_stage: str) -> dict:
    """The dashboard's JSON (``${...}`` placeholders are filled by ``Fn::Sub``)."""
    widgets: list[dict] = [
        {
            "type": "text",
            "width": 24,
            "height": 2,
            "properties": {
                "markdown": (
                    f"# cronhook `{stage}`\n"
                    "Fires, runs and lateness from the app's EMF metrics (namespace `cronhook`); "
                    "queues, functions and the API from AWS metrics. When an alarm fires: "
                    "`docs/runbook.md`. Logs: Logs Insights on "
                    f"`/aws/lambda/cronhook-{stage}-*`, filter on `trigger_id` or `run_id`."
                )
            },
        },
        {
            "type": "alarm",
            "width": 24,
            "height": 3,
            "properties": {
                "title": "Alarms",
                # ARNs built from the alarms' names: no dependency on the alarm resources.
                "alarms": [
                    "arn:${AWS::Partition}:cloudwatch:${AWS::Region}:${AWS::AccountId}:alarm:"
                    + a.properties["AlarmName"]
                    for a in _alarms(stage, api_stage)
                ],
            },
        },
        _widget(
            "Lateness of scheduled runs (ms)",
            [
                _own("Lateness", stage, stat="p50", label="p50"),
                _own("Lateness", stage, stat="p90", label="p90"),
                _own("Lateness", stage, stat="p99", label="p99"),
            ],
            annotations={"horizontal": [{"label": "alarm: p99 10 s", "value": 10_000}]},
        ),
        _widget(
            "Heartbeat",
            [
                _own("HeartbeatDuration", stage, stat="Maximum", label="tick duration max (ms)"),
                _own("DueCount", stage, stat="Maximum", label="due per tick", yAxis="right"),
                _own("HeartbeatErrors", stage, stat="Sum", label="AWS calls failed", yAxis="right"),
            ],
            annotations={"horizontal": [{"label": "alarm: 50 s", "value": 50_000}]},
        ),
    ]
    drawn = {"Lateness", "HeartbeatDuration", "DueCount", "HeartbeatErrors"}
    groups: dict[str, list[str]] = {}
    for name, spec in METRICS.items():
        if name not in drawn:
            groups.setdefault(spec.widget, []).append(name)
    for title, names in groups.items():
        widgets.append(_widget(title, [s for n in names for s in _searches(n, stage)]))

    def sqs(metric: str, queue: str, label: str, **options: object) -> list:
        return [
            "AWS/SQS",
            metric,
            "QueueName",
            "${" + queue + ".QueueName}",
            {"label": label, "stat": "Maximum", **options},
        ]

    functions = [
        ("api", "APIHandler"),
        ("authorizer", "Authorizer"),
        ("heartbeat", "Heartbeat"),
        ("runner", "Runner"),
        ("enqueuer", "Enqueuer"),
    ]
    api = ["ApiName", f"cronhook-{stage}", "Stage", api_stage]
    widgets += [
        _widget(
            "Fire queue and dead-letter queue",
            [
                sqs("ApproximateNumberOfMessagesVisible", "FiresQueue", "queued"),
                sqs("ApproximateNumberOfMessagesNotVisible", "FiresQueue", "in flight"),
                sqs("ApproximateNumberOfMessagesDelayed", "FiresQueue", "delayed"),
                sqs(
                    "ApproximateNumberOfMessagesVisible",
                    "DeadLetterQueue",
                    "DLQ depth",
                    color="#d62728",
                ),
                sqs("ApproximateAgeOfOldestMessage", "FiresQueue", "oldest (s)", yAxis="right"),
            ],
            stat="Maximum",
        ),
        _widget(
            "Lambda errors and throttles",
            [
                [
                    "AWS/Lambda",
                    m,
                    "FunctionName",
                    "${" + ref + "}",
                    {"label": f"{label} {m.lower()}"},
                ]
                for label, ref in functions
                for m in ("Errors", "Throttles")
            ],
        ),
        _widget(
            "Lambda duration p99 (ms) and runner concurrency",
            [
                [
                    "AWS/Lambda",
                    "Duration",
                    "FunctionName",
                    "${" + ref + "}",
                    {"stat": "p99", "label": label},
                ]
                for label, ref in functions
            ]
            + [
                [
                    "AWS/Lambda",
                    "ConcurrentExecutions",
                    "FunctionName",
                    "${Runner}",
                    {"stat": "Maximum", "label": "runner concurrency", "yAxis": "right"},
                ]
            ],
        ),
        _widget(
            "API requests, errors and latency",
            [
                ["AWS/ApiGateway", "Count", *api, {"label": "requests"}],
                ["AWS/ApiGateway", "4XXError", *api, {"label": "4xx"}],
                ["AWS/ApiGateway", "5XXError", *api, {"label": "5xx", "color": "#d62728"}],
                [
                    "AWS/ApiGateway",
                    "Latency",
                    *api,
                    {"stat": "p99", "label": "latency p99 (ms)", "yAxis": "right"},
                ],
            ],
        ),
        _widget(
            "DynamoDB: write units and throttles (all cronhook tables)",
            [
                [
                    {
                        "expression": 'SEARCH(\'{AWS/DynamoDB,TableName} MetricName="ConsumedWriteCapacityUnits" '
                        f"cronhook-{stage}-', 'Sum', 300)",
                        "id": "wcu",
                        "label": "",
                    }
                ],
                [
                    {
                        "expression": 'SEARCH(\'{AWS/DynamoDB,TableName,Operation} MetricName="ThrottledRequests" '
                        f"cronhook-{stage}-', 'Sum', 300)",
                        "id": "throttled",
                        "label": "",
                    }
                ],
            ],
        ),
    ]
    # Lay the widgets out: full-width rows first, then three per row.
    x = y = 0
    for widget in widgets:
        if x + widget["width"] > 24:
            x, y = 0, y + 6
        widget["x"], widget["y"] = x, y
        x += widget["width"]
        if x >= 24:
            x, y = 0, y + widget["height"]
    return {"start": "-PT6H", "periodOverride": "inherit", "widgets": widgets}


def monitoring_resources(stage: str, *, api_stage: str) -> dict[str, dict]:
    """The SNS topic (+ optional email subscription), the alarms and the dashboard."""
    resources: dict[str, dict] = {
        "AlarmTopic": {
            "Type": "AWS::SNS::Topic",
            "Properties": {
                "TopicName": f"cronhook-{stage}-alarms",
                "DisplayName": f"cronhook {stage} alarms",
            },
        },
        "AlarmEmailSubscription": {
            "Type": "AWS::SNS::Subscription",
            "Condition": "HasAlarmEmail",
            "Properties": {
                "TopicArn": {"Ref": "AlarmTopic"},
                "Protocol": "email",
                "Endpoint": {"Ref": "AlarmEmail"},
            },
        },
        "Dashboard": {
            "Type": "AWS::CloudWatch::Dashboard",
            "Properties": {
                "DashboardName": f"cronhook-{stage}",
                "DashboardBody": {
                    "Fn::Sub": json.dumps(dashboard_body(stage, api_stage=api_stage))
                },
            },
        },
    }
    for alarm in _alarms(stage, api_stage):
        resources[alarm.logical_id] = {
            "Type": "AWS::CloudWatch::Alarm",
            "Properties": alarm.properties,
        }
    return resources
