"""Template resources of the delivered event sources (chalicelib/sources): ingest, mail, inbox.

- ``IngestQueue`` (+ its DLQ): where EventBridge rules (``eventbridge`` and ``s3``
  triggers, made by the API as ``cronhook-<stage>-<trigger id>``) and the mail topic
  deliver; the ``ingest`` function consumes it. Its policy lets EventBridge send only
  from this stage's rules and SNS only from the mail topic.
- ``MailBucket``, ``MailTopic``, ``ReceiptRuleSet``: SES stores inbound mail in the
  bucket (``inbound/<trigger id>/``, expired after the event retention) and notifies the
  topic, which feeds the ingest queue. SES allows one active rule set per region:
  activating this one is a deliberate step (docs/providers/email.md).
- ``InboxBucket``: a bucket the stack owns with its events sent to EventBridge, ready for
  ``s3`` triggers; a bucket outside the stack needs that one setting (docs/providers/s3.md).
"""

from __future__ import annotations

from typing import Any

__all__ = ["source_resources", "source_environment", "source_outputs", "rule_arns"]


def rule_arns(stage: str) -> list[dict]:
    """This stage's EventBridge rules, on the default bus and on any named bus."""
    base = "arn:${AWS::Partition}:events:${AWS::Region}:${AWS::AccountId}:rule/"
    return [
        {"Fn::Sub": base + f"cronhook-{stage}-*"},
        {"Fn::Sub": base + f"*/cronhook-{stage}-*"},
    ]


def source_resources(stage: str, *, keep: str, retention_days: int) -> dict[str, Any]:
    """The resources, keyed by logical id."""
    return {
        **_ingest_resources(stage, keep=keep),
        **_mail_bucket_resources(keep=keep, retention_days=retention_days),
        **_mail_topic_resources(stage),
        "InboxBucket": _inbox_bucket(keep=keep),
    }


def _ingest_resources(stage: str, *, keep: str) -> dict[str, Any]:
    """The ingest queue, its DLQ, and who may send to it."""
    return {
        "IngestDeadLetterQueue": {
            "Type": "AWS::SQS::Queue",
            "DeletionPolicy": keep,
            "UpdateReplacePolicy": keep,
            "Properties": {
                "QueueName": f"cronhook-{stage}-ingest-dlq",
                "MessageRetentionPeriod": 1_209_600,
                "SqsManagedSseEnabled": True,
            },
        },
        "IngestQueue": {
            "Type": "AWS::SQS::Queue",
            "Properties": {
                "QueueName": f"cronhook-{stage}-ingest",
                "VisibilityTimeout": 360,
                "MessageRetentionPeriod": 345_600,
                # Not SSE-KMS: EventBridge and SNS could not encrypt without a key grant.
                "SqsManagedSseEnabled": True,
                "RedrivePolicy": {
                    "deadLetterTargetArn": {"Fn::GetAtt": ["IngestDeadLetterQueue", "Arn"]},
                    "maxReceiveCount": 5,
                },
            },
        },
        "IngestQueuePolicy": {
            "Type": "AWS::SQS::QueuePolicy",
            "Properties": {
                "Queues": [{"Ref": "IngestQueue"}],
                "PolicyDocument": {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Sid": "StageRules",
                            "Effect": "Allow",
                            "Principal": {"Service": "events.amazonaws.com"},
                            "Action": "sqs:SendMessage",
                            "Resource": {"Fn::GetAtt": ["IngestQueue", "Arn"]},
                            "Condition": {"ArnLike": {"aws:SourceArn": rule_arns(stage)}},
                        },
                        {
                            "Sid": "MailTopic",
                            "Effect": "Allow",
                            "Principal": {"Service": "sns.amazonaws.com"},
                            "Action": "sqs:SendMessage",
                            "Resource": {"Fn::GetAtt": ["IngestQueue", "Arn"]},
                            "Condition": {"ArnEquals": {"aws:SourceArn": {"Ref": "MailTopic"}}},
                        },
                    ],
                },
            },
        },
    }


def _mail_bucket_resources(*, keep: str, retention_days: int) -> dict[str, Any]:
    """The bucket SES stores inbound mail in."""
    return {
        "MailBucket": {
            "Type": "AWS::S3::Bucket",
            "DeletionPolicy": keep,
            "UpdateReplacePolicy": keep,
            "Properties": {
                "BucketEncryption": _encrypted(),
                "PublicAccessBlockConfiguration": _private(),
                "OwnershipControls": {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]},
                "LifecycleConfiguration": {
                    "Rules": [
                        {
                            "Id": "inbound-mail-retention",
                            "Status": "Enabled",
                            "Prefix": "inbound/",
                            "ExpirationInDays": retention_days,
                        }
                    ]
                },
            },
        },
        "MailBucketPolicy": {
            "Type": "AWS::S3::BucketPolicy",
            "Properties": {
                "Bucket": {"Ref": "MailBucket"},
                "PolicyDocument": {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Sid": "SesStoresInboundMail",
                            "Effect": "Allow",
                            "Principal": {"Service": "ses.amazonaws.com"},
                            "Action": "s3:PutObject",
                            "Resource": {"Fn::Sub": "${MailBucket.Arn}/inbound/*"},
                            "Condition": {
                                "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
                            },
                        }
                    ],
                },
            },
        },
    }


def _mail_topic_resources(stage: str) -> dict[str, Any]:
    """The topic SES notifies, feeding the ingest queue, and the receipt rule set."""
    return {
        "MailTopic": {
            "Type": "AWS::SNS::Topic",
            "Properties": {"TopicName": f"cronhook-{stage}-mail"},
        },
        "MailTopicPolicy": {
            "Type": "AWS::SNS::TopicPolicy",
            "Properties": {
                "Topics": [{"Ref": "MailTopic"}],
                "PolicyDocument": {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Sid": "SesNotifies",
                            "Effect": "Allow",
                            "Principal": {"Service": "ses.amazonaws.com"},
                            "Action": "sns:Publish",
                            "Resource": {"Ref": "MailTopic"},
                            "Condition": {
                                "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
                            },
                        }
                    ],
                },
            },
        },
        "MailTopicToIngest": {
            "Type": "AWS::SNS::Subscription",
            "Properties": {
                "TopicArn": {"Ref": "MailTopic"},
                "Protocol": "sqs",
                "Endpoint": {"Fn::GetAtt": ["IngestQueue", "Arn"]},
            },
        },
        "ReceiptRuleSet": {
            "Type": "AWS::SES::ReceiptRuleSet",
            "Properties": {"RuleSetName": f"cronhook-{stage}"},
        },
    }


def _inbox_bucket(*, keep: str) -> dict[str, Any]:
    """A bucket the stack owns, its events sent to EventBridge (``s3`` triggers)."""
    return {
        "Type": "AWS::S3::Bucket",
        "DeletionPolicy": keep,
        "UpdateReplacePolicy": keep,
        "Properties": {
            "BucketEncryption": _encrypted(),
            "PublicAccessBlockConfiguration": _private(),
            "OwnershipControls": {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]},
            "NotificationConfiguration": {"EventBridgeConfiguration": {"EventBridgeEnabled": True}},
        },
    }


def _private() -> dict[str, bool]:
    return {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }


def _encrypted() -> dict[str, Any]:
    return {
        "ServerSideEncryptionConfiguration": [
            {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
        ]
    }


def source_environment(stage: str) -> dict[str, Any]:
    """What the functions read (chalicelib/settings.py)."""
    return {
        "CRONHOOK_INGEST_QUEUE_ARN": {"Fn::GetAtt": ["IngestQueue", "Arn"]},
        "CRONHOOK_INGEST_QUEUE_URL": {"Ref": "IngestQueue"},
        "CRONHOOK_MAIL_BUCKET": {"Ref": "MailBucket"},
        "CRONHOOK_MAIL_TOPIC_ARN": {"Ref": "MailTopic"},
        "CRONHOOK_SES_RULE_SET": f"cronhook-{stage}",
    }


def source_outputs(stage: str) -> dict[str, Any]:
    return {
        "IngestQueueUrl": {"Value": {"Ref": "IngestQueue"}},
        "MailBucketName": {"Value": {"Ref": "MailBucket"}},
        "MailTopicArn": {"Value": {"Ref": "MailTopic"}},
        "ReceiptRuleSetName": {"Value": f"cronhook-{stage}"},  # its name; activate it once
        "InboxBucketName": {"Value": {"Ref": "InboxBucket"}},
    }
