"""The alarms: each one's logical id is also its section in ``docs/runbook.md``.

Every alarm notifies the stack's SNS topic (``AlarmTopic``) when it fires and when it clears.
"""

from __future__ import annotations

from dataclasses import dataclass

from infra.monitoring_metrics import NAMESPACE, SERVICE

__all__ = ["Alarm", "ALARMS", "alarms"]


@dataclass(frozen=True)
class Alarm:
    """A CloudWatch alarm; its logical id is also its ``docs/runbook.md`` heading."""

    logical_id: str
    properties: dict


def _base(stage: str) -> list[dict]:
    return [{"Name": "service", "Value": SERVICE}, {"Name": "stage", "Value": stage}]


def alarms(stage: str, api_stage: str) -> list[Alarm]:
    """Every alarm of the stage, in the dashboard's order."""
    return [
        _dead_letters(stage),
        _heartbeat_errors(stage),
        _heartbeat_slow(stage),
        *_schedule_alarms(stage),
        *_api_and_run_alarms(stage, api_stage),
        _lambda_throttles(stage),
        *_fan_out_and_runner_alarms(stage),
    ]


def _alarm(stage: str, logical_id: str, description: str, **props) -> Alarm:
    topic = [{"Ref": "AlarmTopic"}]
    base = {
        "AlarmName": f"cronhook-{stage}-{logical_id}",
        "AlarmDescription": f"{description} Runbook: docs/runbook.md, '{logical_id}'.",
        "AlarmActions": topic,
        "OKActions": topic,
        "TreatMissingData": "notBreaching",
    }
    base.update(props)
    return Alarm(logical_id, base)


def _lambda_metric(name: str, function: str) -> dict:
    return {
        "Namespace": "AWS/Lambda",
        "MetricName": name,
        "Dimensions": [{"Name": "FunctionName", "Value": {"Ref": function}}],
    }


def _dead_letters(stage: str) -> Alarm:
    return _alarm(
        stage,
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
    )


def _heartbeat_errors(stage: str) -> Alarm:
    return _alarm(
        stage,
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
                    "Metric": _lambda_metric("Errors", "Heartbeat"),
                    "Period": 300,
                    "Stat": "Sum",
                },
            },
            {
                # A fanned-out tick's shard that failed as a whole (FanOutShards).
                "Id": "enqueuers",
                "ReturnData": False,
                "MetricStat": {
                    "Metric": _lambda_metric("Errors", "Enqueuer"),
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
    )


def _heartbeat_slow(stage: str) -> Alarm:
    return _alarm(
        stage,
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
                    "Metric": _lambda_metric("Duration", "Heartbeat"),
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
    )


def _schedule_alarms(stage: str) -> list[Alarm]:
    """The heartbeat stopped, scheduled runs late, triggers disabled for failures."""
    return [
        _alarm(
            stage,
            "HeartbeatStopped",
            "The heartbeat was not invoked for 10 minutes: nothing scheduled fires.",
            **_lambda_metric("Invocations", "Heartbeat"),
            Statistic="Sum",
            Period=300,
            EvaluationPeriods=2,
            Threshold=1,
            ComparisonOperator="LessThanThreshold",
            TreatMissingData="breaching",
        ),
        _alarm(
            stage,
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
        _alarm(
            stage,
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
    ]


def _api_and_run_alarms(stage: str, api_stage: str) -> list[Alarm]:
    """The API's 5xx, runs lost, the fire queue's oldest message."""
    return [
        _alarm(
            stage,
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
        _alarm(
            stage,
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
        _alarm(
            stage,
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
    ]


def _lambda_throttles(stage: str) -> Alarm:
    return _alarm(
        stage,
        "LambdaThrottles",
        "A cronhook function was throttled (account concurrency, or a reservation too "
        "small): ticks, runs or API calls were refused by Lambda.",
        Metrics=[
            *(
                {
                    "Id": f"throttles{i}",
                    "ReturnData": False,
                    "MetricStat": {
                        "Metric": _lambda_metric("Throttles", function),
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
    )


def _fan_out_and_runner_alarms(stage: str) -> list[Alarm]:
    """The tick queue's oldest message (FanOutShards), the runner's invocations failing."""
    return [
        _alarm(
            stage,
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
        _alarm(
            stage,
            "RunnerErrors",
            "A runner invocation failed as a whole (not a workflow failure): its messages are retried, then dead-lettered.",
            **_lambda_metric("Errors", "Runner"),
            Statistic="Sum",
            Period=300,
            EvaluationPeriods=1,
            Threshold=1,
            ComparisonOperator="GreaterThanOrEqualToThreshold",
        ),
    ]


ALARMS = [a.logical_id for a in alarms("dev", "api")]
