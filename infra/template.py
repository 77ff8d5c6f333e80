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

The pieces: ``infra/template_parameters.py`` (the parameters and conditions),
``infra/template_resources.py`` (the key, the queues, the payload bucket, the log groups),
``infra/template_functions.py`` (the functions), ``infra/template_api.py`` (the API); the
tables, roles, sources, alerts, WAF and monitoring come from their own modules.

``python -m infra.template --stage dev`` prints it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from chalicelib.settings import Settings
from infra.alerts import alert_resources
from infra.iam import FUNCTIONS, role_resources, target_invoke_resources
from infra.monitoring import monitoring_resources
from infra.sources import source_outputs, source_resources
from infra.stage import FUNCTION_SUFFIX as FUNCTION_SUFFIX
from infra.stage import PROJECT_DIR as PROJECT_DIR
from infra.stage import PROTECTED_STAGES, StageConfig
from infra.tables import table_resources
from infra.template_api import api_account_resources, public_url, rest_api_resources
from infra.template_api import gateway_responses as gateway_responses
from infra.template_functions import (
    FIRE_PATH_FUNCTIONS,
    LAMBDA_ARCHITECTURE,
    LAMBDA_RUNTIME,
    function_environment,
    function_resources,
)
from infra.template_parameters import MAX_DUE_SHARDS as MAX_DUE_SHARDS
from infra.template_parameters import stack_conditions, stack_parameters
from infra.template_resources import MAX_RECEIVE_COUNT, log_group, stack_resources
from infra.template_resources import TICK_RETENTION_S as TICK_RETENTION_S
from infra.waf import waf_resources

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

TRIGGER_PROVIDER_OUTPUT = "CronhookTriggerProvider"


def trigger_provider_export(stage: str) -> str:
    """The export name of the service token: ``CronhookTriggerProvider`` for prod, with the
    stage appended for any other (an export name is unique in a region of an account, and
    dev and prod often share one)."""
    return TRIGGER_PROVIDER_OUTPUT if stage == "prod" else f"{TRIGGER_PROVIDER_OUTPUT}-{stage}"


def merge_template(stage: str, *, project_dir: Path = PROJECT_DIR) -> dict[str, Any]:
    """The merge template for ``stage``."""
    cfg = StageConfig.load(stage, project_dir)
    settings = Settings()  # the code's defaults: retention and shard counts
    protect = stage in PROTECTED_STAGES
    # RetainExceptOnCreate: kept when the stack is deleted, but a failed first create
    # removes it, so the retry does not fail with "already exists".
    keep = "RetainExceptOnCreate" if protect else "Delete"
    replace = "Retain" if protect else "Delete"  # UpdateReplacePolicy has no ExceptOnCreate
    retention_days = settings.event_retention_days

    log_groups = {f: f"{FUNCTIONS[f]}LogGroup" for f in FUNCTIONS}
    resources: dict[str, Any] = {}
    resources.update(table_resources(table_prefix=cfg.table_prefix, protect=protect))
    resources.update(
        stack_resources(stage, cfg, keep=keep, replace=replace, retention_days=retention_days)
    )
    resources.update(api_account_resources(stage))
    resources.update(source_resources(stage, keep=keep, retention_days=retention_days))
    resources.update(alert_resources(stage, keep=keep))
    for function, logical in log_groups.items():
        resources[logical] = log_group(f"/aws/lambda/{cfg.function_name(function)}")
    resources.update(role_resources(log_groups, stage=stage))
    resources.update(target_invoke_resources(stage=stage))
    resources.update(waf_resources(stage))  # only with HooksPerIpLimit > 0
    resources.update(monitoring_resources(stage, api_stage=cfg.api_stage))

    url = public_url(cfg)
    environment = function_environment(stage, cfg, public_url=url)
    resources.update(function_resources(cfg, log_groups, environment))
    resources.update(rest_api_resources(stage))
    return {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Description": f"cronhook ({stage}): workflow triggers. Generated by infra/template.py.",
        "Parameters": stack_parameters(stage),
        "Conditions": stack_conditions(),
        "Resources": resources,
        "Outputs": _outputs(stage, cfg, public_url=url),
    }


def _outputs(stage: str, cfg: StageConfig, *, public_url: dict) -> dict[str, Any]:
    return {
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stage", default="dev")
    args = parser.parse_args(argv)
    json.dump(merge_template(args.stage), sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
