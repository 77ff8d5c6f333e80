"""The functions' part of the merge template: what Chalice generates, overridden.

Every function gets its name, its role (``infra/iam.py``), its environment (queues, bucket,
key, parameters), its log group and the pinned runtime; the fire path's functions trace as
``FirePathTracing`` says; the heartbeat and the runner get their reserved concurrency; the
SQS mappings point at the queues the template makes (the runner's with
``ReportBatchItemFailures`` and the job ceiling as ``MaximumConcurrency``).
"""

from __future__ import annotations

from typing import Any

from chalicelib.settings import ENQUEUER_MAX_CONCURRENCY, RUNNER_MAX_CONCURRENCY
from infra.alerts import alert_environment, alerts_event_source
from infra.iam import ACCESS, FUNCTIONS, TARGET_ROLE, role_logical_id
from infra.sources import source_environment
from infra.stage import StageConfig

__all__ = [
    "LAMBDA_RUNTIME",
    "LAMBDA_ARCHITECTURE",
    "FIRE_PATH_FUNCTIONS",
    "function_environment",
    "function_resources",
]

# The Lambda runtime and architecture, whoever builds (python3.12 or later; arm64 is 20%
# cheaper per GB-s). infra/package.py builds the dependencies for exactly these.
LAMBDA_RUNTIME = "python3.12"
LAMBDA_ARCHITECTURE = "arm64"
# Functions on the path of every scheduled fire: traced only when sampled upstream.
FIRE_PATH_FUNCTIONS = ("heartbeat", "runner", "enqueuer")


def function_environment(stage: str, cfg: StageConfig, *, public_url: dict) -> dict[str, Any]:
    """The variables every function gets (chalicelib/settings.py reads them)."""
    ceiling = RUNNER_MAX_CONCURRENCY
    runner_timeout = cfg.timeouts["runner"]
    return {
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


def function_resources(
    cfg: StageConfig, log_groups: dict[str, str], environment: dict[str, Any]
) -> dict[str, dict]:
    """Each function's overrides, keyed by its logical id."""
    resources: dict[str, dict] = {}
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
        properties.update(_own_properties(function, environment))
        resources[logical] = {"Properties": properties}
    return resources


def _own_properties(function: str, environment: dict[str, Any]) -> dict[str, Any]:
    """What one function has that the others do not (an update keeps a key's place)."""
    if function == "heartbeat":
        return _heartbeat()
    if function == "runner":
        return _runner(environment)
    if function == "enqueuer":
        return {"Events": _enqueuer_events()}
    if function == "alerts":
        return {"Events": alerts_event_source()}
    if function == "ingest":
        return {"Events": _ingest_events()}
    return {}


def _heartbeat() -> dict[str, Any]:
    return {
        "ReservedConcurrentExecutions": {
            "Fn::If": [
                "HasHeartbeatReservation",
                {"Ref": "HeartbeatReservedConcurrency"},
                {"Ref": "AWS::NoValue"},
            ]
        },
        # A tick that failed or was throttled is not worth retrying later: the next
        # minute's tick does the same work with a fresh clock.
        "EventInvokeConfig": {
            "MaximumEventAgeInSeconds": 60,
            "MaximumRetryAttempts": 0,
        },
    }


def _runner(environment: dict[str, Any]) -> dict[str, Any]:
    ceiling = RUNNER_MAX_CONCURRENCY
    return {
        "ReservedConcurrentExecutions": {
            "Fn::If": [
                "HasRunnerReservation",
                {"Ref": "RunnerReservedConcurrency"},
                {"Ref": "AWS::NoValue"},
            ]
        },
        # lambda: targets are invoked under this role, one tenant per session.
        "Environment": {
            "Variables": {
                **environment,
                "CRONHOOK_TARGET_ROLE_ARN": {"Fn::GetAtt": [TARGET_ROLE, "Arn"]},
            }
        },
        "Events": {
            "RunnerSqsEventSource": {
                "Properties": {
                    # Same key as Chalice's ``Fn::Sub``, so the deep merge replaces it.
                    "Queue": {"Fn::Sub": "${FiresQueue.Arn}"},
                    "FunctionResponseTypes": ["ReportBatchItemFailures"],
                    "ScalingConfig": {"MaximumConcurrency": ceiling},
                }
            }
        },
    }


def _enqueuer_events() -> dict[str, Any]:
    return {
        "EnqueuerSqsEventSource": {
            "Properties": {
                "Queue": {"Fn::Sub": "${TickQueue.Arn}"},
                "BatchSize": 1,  # one shard per invocation: its own deadline
                "ScalingConfig": {"MaximumConcurrency": ENQUEUER_MAX_CONCURRENCY},
            }
        }
    }


def _ingest_events() -> dict[str, Any]:
    return {
        "IngestSqsEventSource": {
            "Properties": {
                "Queue": {"Fn::Sub": "${IngestQueue.Arn}"},
                "FunctionResponseTypes": ["ReportBatchItemFailures"],
            }
        }
    }
