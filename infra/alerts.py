"""Template pieces of alerts (chalicelib/services/alerts): queue, parameters, IAM.

- ``AlertsQueue`` (+ its DLQ): transitions the fire path queues, digest flushes, test
  sends; the ``alerts`` function consumes it (partial batch failures).
- Parameters: ``AlertSender`` (the SES-verified address alert email comes from; empty:
  email channels are refused at create), ``AlertTopics`` (the SNS topics a channel may
  publish to; empty: none), ``LifecycleBus`` (the EventBridge bus lifecycle events go
  to; ``default`` unless told otherwise).
- IAM: the functions that detect transitions may send to the queue; the ``alerts``
  function may consume it, ``events:PutEvents`` on the bus, ``ses:SendEmail`` from the
  sender only (``ses:FromAddress``), ``sns:Publish`` on the listed topics only.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ALERTS_TIMEOUT_S",
    "alert_parameters",
    "alert_conditions",
    "alert_resources",
    "alert_environment",
    "alert_statements",
    "alerts_event_source",
]

# The alerts function's timeout (config.json): a digest on a few channels, each tried
# three times with a 30 s connect/read timeout, fits; the queue's visibility is above it.
ALERTS_TIMEOUT_S = 300
ALERTS_VISIBILITY_S = ALERTS_TIMEOUT_S + 30


def alert_parameters() -> dict[str, dict]:
    return {
        "AlertSender": {
            "Type": "String",
            "Default": "",
            "Description": "The SES-verified address alert email is sent from (empty: email "
            "channels are refused)",
        },
        "AlertTopics": {
            "Type": "CommaDelimitedList",
            "Default": "",
            "Description": "SNS topic ARNs alert policies may publish to (empty: none)",
        },
        "LifecycleBus": {
            "Type": "String",
            "Default": "default",
            "Description": "The EventBridge bus trigger lifecycle events go to (source cronhook)",
        },
    }


def alert_conditions() -> dict[str, Any]:
    return {
        "HasAlertSender": {"Fn::Not": [{"Fn::Equals": [{"Ref": "AlertSender"}, ""]}]},
        "HasAlertTopics": {
            "Fn::Not": [{"Fn::Equals": [{"Fn::Join": ["", {"Ref": "AlertTopics"}]}, ""]}]
        },
    }


def alert_resources(stage: str, *, keep: str) -> dict[str, dict]:
    return {
        "AlertsDeadLetterQueue": {
            "Type": "AWS::SQS::Queue",
            "DeletionPolicy": keep,
            "UpdateReplacePolicy": "Retain" if keep != "Delete" else "Delete",
            "Properties": {
                "QueueName": f"cronhook-{stage}-alerts-dlq",
                "MessageRetentionPeriod": 1_209_600,
                "SqsManagedSseEnabled": True,
            },
        },
        "AlertsQueue": {
            "Type": "AWS::SQS::Queue",
            "Properties": {
                "QueueName": f"cronhook-{stage}-alerts",
                "VisibilityTimeout": ALERTS_VISIBILITY_S,
                "MessageRetentionPeriod": 345_600,
                "SqsManagedSseEnabled": True,
                "RedrivePolicy": {
                    "deadLetterTargetArn": {"Fn::GetAtt": ["AlertsDeadLetterQueue", "Arn"]},
                    # A flush that comes early is handed back: enough receives for that.
                    "maxReceiveCount": 10,
                },
            },
        },
    }


def alert_environment() -> dict[str, Any]:
    return {
        "CRONHOOK_ALERTS_QUEUE_URL": {"Ref": "AlertsQueue"},
        "CRONHOOK_LIFECYCLE_BUS": {"Ref": "LifecycleBus"},
        "CRONHOOK_ALERT_SENDER": {"Ref": "AlertSender"},
        "CRONHOOK_ALERT_TOPIC_ARNS": {"Fn::Join": [",", {"Ref": "AlertTopics"}]},
    }


def alerts_event_source() -> dict:
    return {
        "AlertsSqsEventSource": {
            "Properties": {
                "Queue": {"Fn::Sub": "${AlertsQueue.Arn}"},
                "FunctionResponseTypes": ["ReportBatchItemFailures"],
            }
        }
    }


def _bus_arn() -> dict:
    return {
        "Fn::Sub": "arn:${AWS::Partition}:events:${AWS::Region}:${AWS::AccountId}"
        ":event-bus/${LifecycleBus}"
    }


def alert_statements(*, send: bool, consume: bool) -> list[dict]:
    """The statements of a function that queues transitions (``send``) or is the worker."""
    statements: list[dict] = []
    if send:
        statements.append(
            {
                "Sid": "SendAlerts",
                "Effect": "Allow",
                "Action": ["sqs:SendMessage"],
                "Resource": {"Fn::GetAtt": ["AlertsQueue", "Arn"]},
            }
        )
    if not consume:
        return statements
    statements.extend(_worker_statements())
    return statements


def _worker_statements() -> list[dict]:
    """The alerts worker's: its queue, the lifecycle bus, email from the sender, the topics."""
    return [
        {
            "Sid": "ConsumeAlerts",
            "Effect": "Allow",
            "Action": [
                "sqs:ReceiveMessage",
                "sqs:DeleteMessage",
                "sqs:GetQueueAttributes",
                "sqs:ChangeMessageVisibility",
            ],
            "Resource": {"Fn::GetAtt": ["AlertsQueue", "Arn"]},
        },
        {
            "Sid": "LifecycleEvents",
            "Effect": "Allow",
            "Action": ["events:PutEvents"],
            "Resource": _bus_arn(),
        },
        {
            # From the stack's sender only: a policy cannot make the stack send as
            # anyone else. With no sender there is nothing to allow.
            "Sid": "AlertEmail",
            "Effect": "Allow",
            "Action": ["ses:SendEmail"],
            "Resource": "*",
            "Condition": {
                "StringEquals": {
                    "ses:FromAddress": {
                        "Fn::If": ["HasAlertSender", {"Ref": "AlertSender"}, "nobody@invalid"]
                    }
                }
            },
        },
        {
            "Sid": "AlertTopics",
            "Effect": "Allow",
            "Action": ["sns:Publish"],
            "Resource": {
                "Fn::If": [
                    "HasAlertTopics",
                    {"Ref": "AlertTopics"},
                    {
                        "Fn::Sub": "arn:${AWS::Partition}:sns:${AWS::Region}"
                        ":${AWS::AccountId}:cronhook-no-alert-topic"
                    },
                ]
            },
        },
    ]
