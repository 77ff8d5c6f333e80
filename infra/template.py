"""The merge template for ``chalice package --merge-template``: everything Chalice does not make.

Chalice generates the functions, the API and the event sources from ``app.py``; this
module adds the tables (from the models), the queue and its DLQ, the payload bucket,
the KMS key, the on/off switch, one IAM role per function, log groups, monitoring, and
overrides the generated resources where Chalice has no knob:

- the runner's SQS mapping points at the queue made here, with
  ``FunctionResponseTypes: [ReportBatchItemFailures]`` (Chalice never sets it) and the
  job ceiling as ``ScalingConfig.MaximumConcurrency``; the runner's reserved
  concurrency is at least that ceiling (reserved concurrency alone lets Lambda's poller
  throttle messages into the DLQ);
- every function gets its role, its environment (queue, bucket, key, parameters) and
  its log group;
- the API gets a name, throttling, access logs, X-Ray, and gateway responses in the
  contract's error shape (``chalicelib/gateway.py``: an unknown route is a 404, a bad key
  a 401 with ``{"error": {"code", "message"}}``).

``python -m infra.template --stage dev`` prints it.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chalicelib.gateway import GATEWAY_RESPONSES
from chalicelib.settings import (
    ENQUEUER_MAX_CONCURRENCY,
    RUNNER_MAX_CONCURRENCY,
    Settings,
    queue_visibility_s,
)
from infra.alerts import (
    alert_conditions,
    alert_environment,
    alert_parameters,
    alert_resources,
    alerts_event_source,
)
from infra.iam import (
    ACCESS,
    FUNCTIONS,
    TARGET_ROLE,
    role_logical_id,
    role_resources,
    target_invoke_resources,
)
from infra.monitoring import monitoring_resources
from infra.sources import source_environment, source_outputs, source_resources
from infra.tables import table_resources
from infra.waf import waf_conditions, waf_parameters, waf_resources

__all__ = [
    "StageConfig",
    "merge_template",
    "MAX_RECEIVE_COUNT",
    "LAMBDA_RUNTIME",
    "LAMBDA_ARCHITECTURE",
    "PROTECTED_STAGES",
    "FIRE_PATH_FUNCTIONS",
    "TRIGGER_PROVIDER_OUTPUT",
    "trigger_provider_export",
]

PROJECT_DIR = Path(__file__).resolve().parent.parent
# The Lambda runtime and architecture, whoever builds (python3.12 or later; arm64 is 20%
# cheaper per GB-s). infra/package.py builds the dependencies for exactly these.
LAMBDA_RUNTIME = "python3.12"
LAMBDA_ARCHITECTURE = "arm64"
# Functions on the path of every scheduled fire: traced only when sampled upstream.
FIRE_PATH_FUNCTIONS = ("heartbeat", "runner", "enqueuer")
MAX_RECEIVE_COUNT = 5  # receives before a message is dead-lettered
PROTECTED_STAGES = ("prod",)
# Function logical ids whose name we set: chalice deploy's naming, so the console matches.
FUNCTION_SUFFIX = {
    "api_handler": "api",
    "authorizer": "authorizer",
    "heartbeat": "heartbeat",
    "runner": "runner",
    "enqueuer": "enqueuer",
    "ingest": "ingest",
    "trigger_provider": "trigger_provider",
    "alerts": "alerts",
}
# A tick message is worth nothing after a tick period (the enqueuer drops it): SQS keeps
# it 5 minutes at most (its minimum is 60 s), so a backlog never outlives an outage.
TICK_RETENTION_S = 300


@dataclass(frozen=True)
class StageConfig:
    """What the template needs from ``.chalice/config.json`` for one stage."""

    stage: str
    app_name: str
    api_stage: str
    table_prefix: str
    timeouts: dict[str, int]
    memory: dict[str, int]

    @classmethod
    def load(cls, stage: str, project_dir: Path = PROJECT_DIR) -> StageConfig:
        from chalice.config import Config

        raw = json.loads((project_dir / ".chalice" / "config.json").read_text())
        if stage not in raw.get("stages", {}):
            raise SystemExit(f"stage {stage!r} is not in .chalice/config.json")
        config = Config(
            chalice_stage=stage,
            config_from_disk=raw,
            user_provided_params={"project_dir": str(project_dir)},
            default_params={},
        )
        timeouts, memory = {}, {}
        for function in FUNCTIONS:
            scoped = config.scope(stage, function)
            timeouts[function] = int(scoped.lambda_timeout or 60)
            memory[function] = int(scoped.lambda_memory_size or 128)
        env = config.scope(stage, "api_handler").environment_variables
        return cls(
            stage=stage,
            app_name=raw["app_name"],
            api_stage=config.api_gateway_stage or "api",
            table_prefix=env.get("CRONHOOK_TABLE_PREFIX", f"cronhook-{stage}-"),
            timeouts=timeouts,
            memory=memory,
        )

    def function_name(self, function: str) -> str:
        return f"{self.app_name}-{self.stage}-{FUNCTION_SUFFIX[function]}"


TRIGGER_PROVIDER_OUTPUT = "CronhookTriggerProvider"


def trigger_provider_export(stage: str) -> str:
    """The export name of the service token: ``CronhookTriggerProvider`` for prod, with the
    stage appended for any other (an export name is unique in a region of an account, and
    dev and prod often share one)."""
    return TRIGGER_PROVIDER_OUTPUT if stage == "prod" else f"{TRIGGER_PROVIDER_OUTPUT}-{stage}"


def _parameters(stage: str) -> dict:
    return {
        "RootKeyParameterName": {
            "Type": "String",
            "Default": f"/cronhook/{stage}/root-key",
            "AllowedPattern": "^/[A-Za-z0-9_.\\-/]+$",
            "Description": (
                "SSM SecureString holding the root API key. CloudFormation cannot create a "
                "SecureString: create it first (docs/deploy.md)."
            ),
        },
        "AlarmEmail": {
            "Type": "String",
            "Default": "",
            "Description": "Email address subscribed to the alarm topic (empty: no subscription).",
        },
        "PublicUrl": {
            "Type": "String",
            "Default": "",
            "Description": "Base URL of the API for webhook URLs (custom domain); empty: the execute-api URL.",
        },
        "ApiThrottleRateLimit": {
            "Type": "Number",
            "Default": 50,
            "MinValue": 1,
            "Description": "Steady requests per second for /v1 (every route but the webhook ingress).",
        },
        "ApiThrottleBurstLimit": {
            "Type": "Number",
            "Default": 100,
            "MinValue": 1,
            "Description": "Burst of requests for /v1 (every route but the webhook ingress).",
        },
        "HooksThrottleRateLimit": {
            "Type": "Number",
            "Default": 50,
            "MinValue": 1,
            "Description": "Steady requests per second for POST /hooks/{token}, a bucket of its own.",
        },
        "HooksThrottleBurstLimit": {
            "Type": "Number",
            "Default": 100,
            "MinValue": 1,
            "Description": "Burst of requests for POST /hooks/{token}, a bucket of its own.",
        },
        "TargetArns": {
            "Type": "String",
            "Default": "",
            "AllowedPattern": "^[^\\s]*$",
            "Description": (
                "More resources sqs:/sns:/states:/events: targets may reach, beyond each "
                "tenant's own cronhook-<stage>-<tenant>-*: ARNs separated by commas (no "
                "spaces), * allowed (CRONHOOK_TARGET_ARNS). cronhook's own queues and topics "
                "are never reachable."
            ),
        },
        "LogRetentionDays": {
            "Type": "Number",
            "Default": 30,
            "AllowedValues": [1, 3, 5, 7, 14, 30, 60, 90, 180, 365, 731, 1827, 3653],
            "Description": "How long function and access logs are kept.",
        },
        "FirePathTracing": {
            "Type": "String",
            "Default": "PassThrough",
            "AllowedValues": ["PassThrough", "Active"],
            "Description": (
                "X-Ray mode of the heartbeat and the runner. PassThrough: a fire is traced "
                "only when what sent it was (an API call API Gateway sampled), so the "
                "scheduled fires record no trace ($5 per million traces: more than the rest "
                "of a sparse fire). Active: every invocation, for an investigation."
            ),
        },
        "DisablesByFailuresThreshold": {
            "Type": "Number",
            "Default": 3,
            "MinValue": 1,
            "Description": "Alarm when this many triggers are disabled for failures within an hour.",
        },
        "ConfigureApiGatewayAccount": {
            "Type": "String",
            "Default": "false",
            "AllowedValues": ["true", "false"],
            "Description": (
                "'true': this stack sets the region's API Gateway CloudWatch role (one per "
                "account and region, needed for access logs) and owns it: deleting this stage "
                "breaks every other stage's access logs. infra/deploy.py turns it on only when "
                "the account has no role yet (docs/deploy.md)."
            ),
        },
        **_parameters_issue15(stage),
        **_parameters_shards(),
        **alert_parameters(),
        **waf_parameters(),
    }


# The most due shards a stack may name: as far as the shard registry probes for old rows
# the first time it runs (chalicelib.store.shard_registry.PROBE_SHARDS).
MAX_DUE_SHARDS = 32


def _parameters_shards() -> dict:
    return {
        "FanOutShards": {
            "Type": "Number",
            "Default": 0,
            "MinValue": 0,
            "MaxValue": MAX_DUE_SHARDS,
            "Description": (
                "Heartbeat fan-out (CRONHOOK_FANOUT_SHARDS). 0: the heartbeat reads every due "
                "shard itself, one invocation a minute (cheapest for small stacks). N: when a "
                "tick reads at least N shards, it sends one message per shard to the tick "
                "queue and an enqueuer function reads each shard with its own CPU and "
                "deadline (docs/deploy.md, docs/architecture.md 'Fan-out')."
            ),
        },
        "DueShards": {
            "Type": "Number",
            "Default": 4,
            "MinValue": 1,
            "MaxValue": MAX_DUE_SHARDS,
            "Description": (
                "Shards of the due index (CRONHOOK_DUE_SHARDS). Raise or lower it at any "
                "update: the heartbeat keeps reading a former count's shards until their "
                "rows have fired and been re-keyed (chalicelib/store/shard_registry.py)."
            ),
        },
    }


def _parameters_issue15(stage: str) -> dict:
    # Reserved concurrency, the switch's name, detailed API metrics, table protection.
    return {
        "HeartbeatReservedConcurrency": {
            "Type": "Number",
            "Default": 1,
            "MinValue": 0,
            "Description": (
                "Concurrency reserved for the heartbeat (1: ticks never overlap). 0: no "
                "reservation (accounts whose Lambda concurrency quota is 10 cannot reserve any)."
            ),
        },
        "RunnerReservedConcurrency": {
            "Type": "Number",
            "Default": RUNNER_MAX_CONCURRENCY,
            "MinValue": 0,
            "Description": (
                "Concurrency reserved for the runner: 0 (none) or at least the job ceiling "
                f"({RUNNER_MAX_CONCURRENCY}, the SQS mapping's MaximumConcurrency)."
            ),
        },
        "SwitchParameter": {
            "Type": "String",
            "Default": f"/cronhook/{stage}/triggers-enabled",
            "AllowedPattern": "^/[A-Za-z0-9_.\\-/]+$",
            "Description": (
                "SSM parameter of the on/off switch. infra/deploy.py creates it ('on') if "
                "missing and never writes it again: its value belongs to operators."
            ),
        },
        "ApiDetailedMetrics": {
            "Type": "String",
            "Default": "false",
            "AllowedValues": ["true", "false"],
            "Description": (
                "Per-route API Gateway metrics: about $35-50 a month per stage in custom "
                "metrics. The stage-wide metrics (and the Api5xx alarm) work without them."
            ),
        },
        "TableDeletionProtection": {
            "Type": "String",
            "Default": "true" if stage in PROTECTED_STAGES else "false",
            "AllowedValues": ["true", "false"],
            "Description": (
                "DynamoDB deletion protection. infra/deploy.py creates a protected stage "
                "without it and turns it on once the stack exists, so a failed first create "
                "can roll back."
            ),
        },
    }


def _log_group(name: str) -> dict:
    return {
        "Type": "AWS::Logs::LogGroup",
        "DeletionPolicy": "Delete",
        "UpdateReplacePolicy": "Delete",
        "Properties": {"LogGroupName": name, "RetentionInDays": {"Ref": "LogRetentionDays"}},
    }


def _access_log_format() -> str:
    # $context.resourcePath, never $context.path: the webhook path carries the trigger's token.
    fields = {
        "requestId": "$context.requestId",
        "ip": "$context.identity.sourceIp",
        "requestTime": "$context.requestTime",
        "httpMethod": "$context.httpMethod",
        "resourcePath": "$context.resourcePath",
        "status": "$context.status",
        "responseLength": "$context.responseLength",
        "latencyMs": "$context.responseLatency",
        "integrationLatencyMs": "$context.integrationLatency",
        "integrationError": "$context.integrationErrorMessage",
        "xrayTraceId": "$context.xrayTraceId",
    }
    return json.dumps(fields, separators=(",", ":"))


def gateway_responses() -> dict[str, dict]:
    """API Gateway's own answers (unknown route, bad key, throttled...) in the contract's shape."""
    out: dict[str, dict] = {}
    for response_type, answer in GATEWAY_RESPONSES.items():
        entry: dict[str, Any] = {"responseTemplates": {"application/json": answer.template()}}
        if answer.status is not None:
            entry["statusCode"] = str(answer.status)
        out[response_type] = entry
    return out


def merge_template(stage: str, *, project_dir: Path = PROJECT_DIR) -> dict[str, Any]:
    """The merge template for ``stage``."""
    cfg = StageConfig.load(stage, project_dir)
    settings = Settings()  # the code's defaults: retention and shard counts
    protect = stage in PROTECTED_STAGES
    # RetainExceptOnCreate: kept when the stack is deleted, but a failed first create
    # removes it, so the retry does not fail with "already exists".
    keep = "RetainExceptOnCreate" if protect else "Delete"
    replace = "Retain" if protect else "Delete"  # UpdateReplacePolicy has no ExceptOnCreate
    ceiling = RUNNER_MAX_CONCURRENCY
    runner_timeout = cfg.timeouts["runner"]

    log_groups = {f: f"{FUNCTIONS[f]}LogGroup" for f in FUNCTIONS}
    resources: dict[str, Any] = {}
    resources.update(table_resources(table_prefix=cfg.table_prefix, protect=protect))
    resources.update(
        {
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
            "PayloadBucket": {
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
                                "ExpirationInDays": settings.event_retention_days + 1,
                                "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1},
                            }
                        ]
                    },
                },
            },
            "PayloadBucketPolicy": {
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
            },
            # The switch (SwitchParameter) is a stack parameter naming an SSM parameter that
            # infra/deploy.py creates once: a deploy never turns firing back on.
            "ApiAccessLogGroup": _log_group(f"/aws/apigateway/cronhook-{stage}-access"),
            "ApiGatewayCloudWatchRole": {
                "Type": "AWS::IAM::Role",
                "Condition": "ConfigureApiGatewayAccount",
                "Properties": {
                    "AssumeRolePolicyDocument": {
                        "Version": "2012-10-17",
                        "Statement": [
                            {
                                "Effect": "Allow",
                                "Principal": {"Service": "apigateway.amazonaws.com"},
                                "Action": "sts:AssumeRole",
                            }
                        ],
                    },
                    "ManagedPolicyArns": [
                        {
                            "Fn::Sub": "arn:${AWS::Partition}:iam::aws:policy/service-role/"
                            "AmazonAPIGatewayPushToCloudWatchLogs"
                        }
                    ],
                },
            },
            "ApiGatewayAccount": {
                "Type": "AWS::ApiGateway::Account",
                "Condition": "ConfigureApiGatewayAccount",
                "Properties": {
                    "CloudWatchRoleArn": {"Fn::GetAtt": ["ApiGatewayCloudWatchRole", "Arn"]}
                },
            },
        }
    )
    resources.update(
        source_resources(stage, keep=keep, retention_days=settings.event_retention_days)
    )
    resources.update(alert_resources(stage, keep=keep))
    for function, logical in log_groups.items():
        resources[logical] = _log_group(f"/aws/lambda/{cfg.function_name(function)}")
    resources.update(role_resources(log_groups, stage=stage))
    resources.update(target_invoke_resources(stage=stage))
    resources.update(waf_resources(stage))  # only with HooksPerIpLimit > 0
    resources.update(monitoring_resources(stage, api_stage=cfg.api_stage))

    public_url = {
        "Fn::If": [
            "HasPublicUrl",
            {"Ref": "PublicUrl"},
            {
                "Fn::Sub": "https://${RestAPI}.execute-api.${AWS::Region}.${AWS::URLSuffix}/"
                + cfg.api_stage
            },
        ]
    }
    environment = {
        "CRONHOOK_QUEUE_URL": {"Ref": "FiresQueue"},
        "CRONHOOK_BUCKET": {"Ref": "PayloadBucket"},
        "CRONHOOK_KMS_KEY_ID": {"Fn::GetAtt": ["SecretsKey", "Arn"]},
        "CRONHOOK_ROOT_KEY_PARAM": {"Ref": "RootKeyParameterName"},
        "CRONHOOK_SWITCH_PARAM": {"Ref": "SwitchParameter"},
        "CRONHOOK_PUBLIC_URL": public_url,
        "CRONHOOK_MAX_CONCURRENCY": str(ceiling),
        "CRONHOOK_RUNNER_TIMEOUT_S": str(runner_timeout),
        "CRONHOOK_DUE_SHARDS": {"Fn::Sub": "${DueShards}"},  # a string, as every variable
        "CRONHOOK_FANOUT_SHARDS": {"Fn::Sub": "${FanOutShards}"},
        "CRONHOOK_TICK_QUEUE_URL": {"Ref": "TickQueue"},
        "CRONHOOK_TARGET_ARNS": {"Ref": "TargetArns"},
        "POWERTOOLS_LOG_LEVEL": "INFO",
        # Never record handler results in traces: a create answer carries a secret once.
        "POWERTOOLS_TRACER_CAPTURE_RESPONSE": "false",
        **source_environment(stage),
        **alert_environment(),
    }
    for function in ACCESS:
        logical = FUNCTIONS[function]
        properties: dict[str, Any] = {
            "FunctionName": cfg.function_name(function),
            "Role": {"Fn::GetAtt": [role_logical_id(function), "Arn"]},
            "Environment": {"Variables": environment},
            "LoggingConfig": {"LogGroup": {"Ref": log_groups[function]}, "LogFormat": "Text"},
            # Pinned, whoever builds: infra/package.py builds the dependencies for them.
            "Runtime": LAMBDA_RUNTIME,
            "Architectures": [LAMBDA_ARCHITECTURE],
        }
        if function in FIRE_PATH_FUNCTIONS:  # the API, authorizer and ingest stay Active
            properties["Tracing"] = {"Ref": "FirePathTracing"}
        if function == "heartbeat":
            properties["ReservedConcurrentExecutions"] = {
                "Fn::If": [
                    "HasHeartbeatReservation",
                    {"Ref": "HeartbeatReservedConcurrency"},
                    {"Ref": "AWS::NoValue"},
                ]
            }
            # A tick that failed or was throttled is not worth retrying later: the next
            # minute's tick does the same work with a fresh clock.
            properties["EventInvokeConfig"] = {
                "MaximumEventAgeInSeconds": 60,
                "MaximumRetryAttempts": 0,
            }
        if function == "runner":
            properties["ReservedConcurrentExecutions"] = {
                "Fn::If": [
                    "HasRunnerReservation",
                    {"Ref": "RunnerReservedConcurrency"},
                    {"Ref": "AWS::NoValue"},
                ]
            }
            # lambda: targets are invoked under this role, one tenant per session.
            properties["Environment"] = {
                "Variables": {
                    **environment,
                    "CRONHOOK_TARGET_ROLE_ARN": {"Fn::GetAtt": [TARGET_ROLE, "Arn"]},
                }
            }
            properties["Events"] = {
                "RunnerSqsEventSource": {
                    "Properties": {
                        # Same key as Chalice's ``Fn::Sub``, so the deep merge replaces it.
                        "Queue": {"Fn::Sub": "${FiresQueue.Arn}"},
                        "FunctionResponseTypes": ["ReportBatchItemFailures"],
                        "ScalingConfig": {"MaximumConcurrency": ceiling},
                    }
                }
            }
        if function == "enqueuer":
            properties["Events"] = {
                "EnqueuerSqsEventSource": {
                    "Properties": {
                        "Queue": {"Fn::Sub": "${TickQueue.Arn}"},
                        "BatchSize": 1,  # one shard per invocation: its own deadline
                        "ScalingConfig": {"MaximumConcurrency": ENQUEUER_MAX_CONCURRENCY},
                    }
                }
            }
        if function == "alerts":
            properties["Events"] = alerts_event_source()
        if function == "ingest":
            properties["Events"] = {
                "IngestSqsEventSource": {
                    "Properties": {
                        "Queue": {"Fn::Sub": "${IngestQueue.Arn}"},
                        "FunctionResponseTypes": ["ReportBatchItemFailures"],
                    }
                }
            }
        resources[logical] = {"Properties": properties}

    resources["RestAPI"] = {
        "DependsOn": ["ApiGatewayAccountReady"],
        "Properties": {
            # Merged into Chalice's swagger: part of the API definition, so every deployment
            # of the stage carries them (a separate GatewayResponse resource needs a redeploy).
            "DefinitionBody": {"x-amazon-apigateway-gateway-responses": gateway_responses()},
            "Name": f"cronhook-{stage}",
            # Any OpenApiVersion stops SAM adding a second stage named "Stage" (no throttling,
            # logs or alarms, webhook reachable); "2.0" leaves Chalice's swagger as it is.
            "OpenApiVersion": "2.0",
            "TracingEnabled": True,
            "MethodSettings": [
                {
                    "ResourcePath": "/*",
                    "HttpMethod": "*",
                    "ThrottlingRateLimit": {"Ref": "ApiThrottleRateLimit"},
                    "ThrottlingBurstLimit": {"Ref": "ApiThrottleBurstLimit"},
                    "MetricsEnabled": {"Fn::If": ["ApiDetailedMetrics", True, False]},
                    "DataTraceEnabled": False,
                },
                # The webhook ingress has a bucket of its own: a flood of unauthenticated
                # deliveries cannot spend /v1's, nor /v1 clients the providers'. (The path
                # is written with "/" as "~1", as API Gateway's method settings want it.)
                {
                    "ResourcePath": "/~1hooks~1{token}",
                    "HttpMethod": "POST",
                    "ThrottlingRateLimit": {"Ref": "HooksThrottleRateLimit"},
                    "ThrottlingBurstLimit": {"Ref": "HooksThrottleBurstLimit"},
                    "MetricsEnabled": {"Fn::If": ["ApiDetailedMetrics", True, False]},
                    "DataTraceEnabled": False,
                },
            ],
            "AccessLogSetting": {
                "DestinationArn": {"Fn::GetAtt": ["ApiAccessLogGroup", "Arn"]},
                "Format": _access_log_format(),
            },
        },
    }
    # CloudFormation cannot DependsOn a resource whose condition is false; this handle
    # carries the dependency on the (optional) API Gateway account setting instead.
    resources["ApiGatewayAccountReady"] = {
        "Type": "AWS::CloudFormation::WaitConditionHandle",
        "Metadata": {
            "ApiGatewayAccount": {
                "Fn::If": ["ConfigureApiGatewayAccount", {"Ref": "ApiGatewayAccount"}, ""]
            }
        },
    }

    outputs = {
        "DashboardURL": {
            "Value": {
                "Fn::Sub": "https://${AWS::Region}.console.aws.amazon.com/cloudwatch/home"
                "?region=${AWS::Region}#dashboards:name=${Dashboard}"
            }
        },
        "AlarmTopicArn": {"Value": {"Ref": "AlarmTopic"}},
        "FiresQueueUrl": {"Value": {"Ref": "FiresQueue"}},
        "DeadLetterQueueUrl": {"Value": {"Ref": "DeadLetterQueue"}},
        "TickQueueUrl": {"Value": {"Ref": "TickQueue"}},
        "AlertsQueueUrl": {"Value": {"Ref": "AlertsQueue"}},
        "PayloadBucketName": {"Value": {"Ref": "PayloadBucket"}},
        "SecretsKeyArn": {"Value": {"Fn::GetAtt": ["SecretsKey", "Arn"]}},
        "SwitchParameterName": {"Value": {"Ref": "SwitchParameter"}},
        "AlarmEmailSubscribed": {
            "Value": {
                "Fn::If": [
                    "HasAlarmEmail",
                    {"Ref": "AlarmEmail"},
                    "NOBODY: alarms go to an SNS topic with no subscriber (docs/deploy.md)",
                ]
            }
        },
        "RootKeyParameterName": {"Value": {"Ref": "RootKeyParameterName"}},
        "TablePrefix": {"Value": cfg.table_prefix},
        "WebhookBaseUrl": {"Value": public_url},
        # The service token of Custom::CronhookTrigger in any stack of the account
        # (docs/cloudformation.md): ``ServiceToken: !ImportValue CronhookTriggerProvider``.
        TRIGGER_PROVIDER_OUTPUT: {
            "Value": {"Fn::GetAtt": [FUNCTIONS["trigger_provider"], "Arn"]},
            "Export": {"Name": trigger_provider_export(stage)},
        },
        **source_outputs(stage),
    }
    return {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Description": f"cronhook ({stage}): workflow triggers. Generated by infra/template.py.",
        "Parameters": _parameters(stage),
        "Conditions": {
            "HasAlarmEmail": {"Fn::Not": [{"Fn::Equals": [{"Ref": "AlarmEmail"}, ""]}]},
            "HasPublicUrl": {"Fn::Not": [{"Fn::Equals": [{"Ref": "PublicUrl"}, ""]}]},
            "HasTargetArns": {"Fn::Not": [{"Fn::Equals": [{"Ref": "TargetArns"}, ""]}]},
            "ConfigureApiGatewayAccount": {
                "Fn::Equals": [{"Ref": "ConfigureApiGatewayAccount"}, "true"]
            },
            "HasHeartbeatReservation": {
                "Fn::Not": [{"Fn::Equals": [{"Ref": "HeartbeatReservedConcurrency"}, 0]}]
            },
            "HasRunnerReservation": {
                "Fn::Not": [{"Fn::Equals": [{"Ref": "RunnerReservedConcurrency"}, 0]}]
            },
            "ApiDetailedMetrics": {"Fn::Equals": [{"Ref": "ApiDetailedMetrics"}, "true"]},
            "TableDeletionProtection": {"Fn::Equals": [{"Ref": "TableDeletionProtection"}, "true"]},
            **waf_conditions(),
            **alert_conditions(),
        },
        "Resources": resources,
        "Outputs": outputs,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stage", default="dev")
    args = parser.parse_args(argv)
    json.dump(merge_template(args.stage), sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
