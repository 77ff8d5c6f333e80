"""The stack's own resources beside the functions: the KMS key, the fire and tick queues, the
payload bucket, and the log groups (``infra/template.py`` puts them together)."""

from __future__ import annotations

from typing import Any

from chalicelib.settings import queue_visibility_s
from infra.stage import StageConfig

__all__ = ["MAX_RECEIVE_COUNT", "TICK_RETENTION_S", "stack_resources", "log_group"]

MAX_RECEIVE_COUNT = 5  # receives before a message is dead-lettered
# A tick message is worth nothing after a tick period (the enqueuer drops it): SQS keeps
# it 5 minutes at most (its minimum is 60 s), so a backlog never outlives an outage.
TICK_RETENTION_S = 300


def stack_resources(
    stage: str, cfg: StageConfig, *, keep: str, replace: str, retention_days: int
) -> dict[str, Any]:
    """The key, the queues and the payload bucket, keyed by logical id."""
    # The switch (SwitchParameter) is a stack parameter naming an SSM parameter that
    # infra/deploy.py creates once: a deploy never turns firing back on.
    return {
        **_secrets_key(stage),
        **_queues(stage, cfg, keep=keep, replace=replace),
        "PayloadBucket": _payload_bucket(keep=keep, replace=replace, retention_days=retention_days),
        "PayloadBucketPolicy": _payload_bucket_policy(),
    }


def _secrets_key(stage: str) -> dict[str, Any]:
    """The stack's KMS key (webhook secrets, large payloads) and its alias."""
    return {
        "SecretsKey": {
            "Type": "AWS::KMS::Key",
            # A failed first create deletes it (no key left per attempt); kept after that.
            "DeletionPolicy": "RetainExceptOnCreate",
            "UpdateReplacePolicy": "Retain",
            "Properties": {
                "Description": f"cronhook {stage}: webhook secrets and large payloads",
                "EnableKeyRotation": True,
                "KeyPolicy": {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            # The account administers the key through IAM; the
                            # functions' roles grant only the operations they need.
                            "Sid": "AccountAdministersThroughIam",
                            "Effect": "Allow",
                            "Principal": {
                                "AWS": {
                                    "Fn::Sub": "arn:${AWS::Partition}:iam::${AWS::AccountId}:root"
                                }
                            },
                            "Action": "kms:*",
                            "Resource": "*",
                        }
                    ],
                },
            },
        },
        "SecretsKeyAlias": {
            "Type": "AWS::KMS::Alias",
            "Properties": {
                "AliasName": f"alias/cronhook-{stage}",
                "TargetKeyId": {"Ref": "SecretsKey"},
            },
        },
    }


def _queues(stage: str, cfg: StageConfig, *, keep: str, replace: str) -> dict[str, Any]:
    # The fire queue and its dead-letter queue; the tick queue of the heartbeat's fan-out.
    runner_timeout = cfg.timeouts["runner"]
    return {
        "DeadLetterQueue": {
            "Type": "AWS::SQS::Queue",
            "DeletionPolicy": keep,
            "UpdateReplacePolicy": replace,
            "Properties": {
                "QueueName": f"cronhook-{stage}-fires-dlq",
                "MessageRetentionPeriod": 1_209_600,
                "SqsManagedSseEnabled": True,
            },
        },
        "FiresQueue": {
            "Type": "AWS::SQS::Queue",
            "Properties": {
                "QueueName": f"cronhook-{stage}-fires",
                # One derivation with the claim's lease (chalicelib/settings.py).
                "VisibilityTimeout": queue_visibility_s(runner_timeout),
                "MessageRetentionPeriod": 345_600,
                "SqsManagedSseEnabled": True,
                "RedrivePolicy": {
                    "deadLetterTargetArn": {"Fn::GetAtt": ["DeadLetterQueue", "Arn"]},
                    "maxReceiveCount": MAX_RECEIVE_COUNT,
                },
            },
        },
        "TickQueue": {
            "Type": "AWS::SQS::Queue",
            "Properties": {
                "QueueName": f"cronhook-{stage}-ticks",
                # Above the enqueuer's timeout (AWS refuses a mapping otherwise); a
                # message seen again after it is older than a tick and is dropped.
                "VisibilityTimeout": queue_visibility_s(cfg.timeouts["enqueuer"]),
                "MessageRetentionPeriod": TICK_RETENTION_S,
                "SqsManagedSseEnabled": True,
            },
        },
    }


def _payload_bucket(*, keep: str, replace: str, retention_days: int) -> dict[str, Any]:
    return {
        "Type": "AWS::S3::Bucket",
        "DeletionPolicy": keep,
        "UpdateReplacePolicy": replace,
        "Properties": {
            "BucketEncryption": {
                "ServerSideEncryptionConfiguration": [
                    {
                        "ServerSideEncryptionByDefault": {
                            "SSEAlgorithm": "aws:kms",
                            "KMSMasterKeyID": {"Fn::GetAtt": ["SecretsKey", "Arn"]},
                        },
                        "BucketKeyEnabled": True,
                    }
                ]
            },
            "PublicAccessBlockConfiguration": {
                "BlockPublicAcls": True,
                "BlockPublicPolicy": True,
                "IgnorePublicAcls": True,
                "RestrictPublicBuckets": True,
            },
            "OwnershipControls": {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]},
            "LifecycleConfiguration": {
                "Rules": [
                    {
                        # Bodies live as long as their event item (TTL), plus a day.
                        "Id": "expire-event-bodies",
                        "Status": "Enabled",
                        "ExpirationInDays": retention_days + 1,
                        "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1},
                    }
                ]
            },
        },
    }


def _payload_bucket_policy() -> dict[str, Any]:
    return {
        "Type": "AWS::S3::BucketPolicy",
        "Properties": {
            "Bucket": {"Ref": "PayloadBucket"},
            "PolicyDocument": {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Sid": "TlsOnly",
                        "Effect": "Deny",
                        "Principal": "*",
                        "Action": "s3:*",
                        "Resource": [
                            {"Fn::GetAtt": ["PayloadBucket", "Arn"]},
                            {"Fn::Sub": "${PayloadBucket.Arn}/*"},
                        ],
                        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                    }
                ],
            },
        },
    }


def log_group(name: str) -> dict:
    return {
        "Type": "AWS::Logs::LogGroup",
        "DeletionPolicy": "Delete",
        "UpdateReplacePolicy": "Delete",
        "Properties": {"LogGroupName": name, "RetentionInDays": {"Ref": "LogRetentionDays"}},
    }
