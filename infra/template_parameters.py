"""The stack's parameters (what an operator may set at a deploy) and the conditions on them."""

from __future__ import annotations

from typing import Any

from chalicelib.settings import RUNNER_MAX_CONCURRENCY
from infra.alerts import alert_conditions, alert_parameters
from infra.stage import PROTECTED_STAGES
from infra.waf import waf_conditions, waf_parameters

__all__ = ["MAX_DUE_SHARDS", "stack_parameters", "stack_conditions"]


def stack_parameters(stage: str) -> dict:
    """Every parameter of the stack, in the template's order."""
    return {
        **_parameters_access(stage),
        **_parameters_throttles(),
        **_parameters_operations(),
        **_parameters_issue15(stage),
        **_parameters_shards(),
        **alert_parameters(),
        **waf_parameters(),
    }


def _parameters_access(stage: str) -> dict:
    # The root key, who is told of alarms, the URL webhooks are given.
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
    }


def _parameters_throttles() -> dict:
    # API Gateway's throttles: /v1, and the webhook ingress's bucket of its own.
    return {
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
    }


def _parameters_operations() -> dict:
    # What targets may reach, logs, tracing, an alarm's threshold, API Gateway's log role.
    return {
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


def stack_conditions() -> dict[str, Any]:
    """The template's conditions, on the parameters above."""
    return {
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
    }
