"""The CloudWatch dashboard: the alarms, the app's metrics (``METRICS``, one widget per
group), then the queues, the functions, the API and the tables from AWS's own metrics."""

from __future__ import annotations

from infra.monitoring_alarms import alarms
from infra.monitoring_metrics import BASE_DIMENSIONS, METRICS, NAMESPACE, SERVICE

__all__ = ["dashboard_body"]


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
    widgets = _top_widgets(stage, api_stage)
    widgets += _metric_widgets(stage)
    widgets += [
        _queue_widget(),
        *_lambda_widgets(),
        _api_widget(stage, api_stage),
        _dynamodb_widget(stage),
    ]
    _lay_out(widgets)
    return {"start": "-PT6H", "periodOverride": "inherit", "widgets": widgets}


def _top_widgets(stage: str, api_stage: str) -> list[dict]:
    """A title, the alarms, the lateness and the heartbeat."""
    return [
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
                    for a in alarms(stage, api_stage)
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


def _metric_widgets(stage: str) -> list[dict]:
    """One widget per group of ``METRICS`` the top widgets do not draw."""
    widgets: list[dict] = []
    drawn = {"Lateness", "HeartbeatDuration", "DueCount", "HeartbeatErrors"}
    groups: dict[str, list[str]] = {}
    for name, spec in METRICS.items():
        if name not in drawn:
            groups.setdefault(spec.widget, []).append(name)
    for title, names in groups.items():
        widgets.append(_widget(title, [s for n in names for s in _searches(n, stage)]))
    return widgets


def _sqs(metric: str, queue: str, label: str, **options: object) -> list:
    return [
        "AWS/SQS",
        metric,
        "QueueName",
        "${" + queue + ".QueueName}",
        {"label": label, "stat": "Maximum", **options},
    ]


def _queue_widget() -> dict:
    return _widget(
        "Fire queue and dead-letter queue",
        [
            _sqs("ApproximateNumberOfMessagesVisible", "FiresQueue", "queued"),
            _sqs("ApproximateNumberOfMessagesNotVisible", "FiresQueue", "in flight"),
            _sqs("ApproximateNumberOfMessagesDelayed", "FiresQueue", "delayed"),
            _sqs(
                "ApproximateNumberOfMessagesVisible",
                "DeadLetterQueue",
                "DLQ depth",
                color="#d62728",
            ),
            _sqs("ApproximateAgeOfOldestMessage", "FiresQueue", "oldest (s)", yAxis="right"),
        ],
        stat="Maximum",
    )


def _lambda_widgets() -> list[dict]:
    """Errors and throttles; duration, and the runner's concurrency."""
    functions = [
        ("api", "APIHandler"),
        ("authorizer", "Authorizer"),
        ("heartbeat", "Heartbeat"),
        ("runner", "Runner"),
        ("enqueuer", "Enqueuer"),
    ]
    return [
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
    ]


def _api_widget(stage: str, api_stage: str) -> dict:
    api = ["ApiName", f"cronhook-{stage}", "Stage", api_stage]
    return _widget(
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
    )


def _dynamodb_widget(stage: str) -> dict:
    return _widget(
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
    )


def _lay_out(widgets: list[dict]) -> None:
    # Lay the widgets out: full-width rows first, then three per row.
    x = y = 0
    for widget in widgets:
        if x + widget["width"] > 24:
            x, y = 0, y + 6
        widget["x"], widget["y"] = x, y
        x += widget["width"]
        if x >= 24:
            x, y = 0, y + widget["height"]
