"""The stack's TriggerProvider: the function behind ``Custom::CronhookTrigger``, its
least-privilege role, the exported service token, and the worked SAM example.

The template is ``make package``'s (cfn-lint clean: ``test_package.py``); the role is read
back from the stack deployed into moto, and scenario step 8 drives the deployed function
with CloudFormation's requests (``test_iam.py`` checks each of its calls was allowed and
each statement needed).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from infra.iam import FUNCTIONS, role_logical_id
from infra.template import TRIGGER_PROVIDER_OUTPUT, trigger_provider_export
from tests.infra.harness import ACCOUNT, REGION, allows

PROJECT_DIR = Path(__file__).resolve().parents[2]
EXAMPLE = PROJECT_DIR / "docs" / "examples" / "sam-workflow-and-trigger.yaml"


def _table(name: str) -> str:
    return f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/cronhook-dev-{name}"


def test_the_template_carries_the_provider_with_a_role_of_its_own(packaged):
    resources = packaged.template["Resources"]
    logical = FUNCTIONS["trigger_provider"]
    function = resources[logical]
    assert function["Properties"]["Handler"] == "app.trigger_provider"
    assert function["Properties"]["Role"] == {
        "Fn::GetAtt": [role_logical_id("trigger_provider"), "Arn"]
    }
    assert function["Properties"]["Timeout"] == 60
    assert resources[role_logical_id("trigger_provider")]["Type"] == "AWS::IAM::Role"


def test_the_stack_exports_the_service_token(packaged):
    output = packaged.template["Outputs"][TRIGGER_PROVIDER_OUTPUT]
    assert output["Value"] == {"Fn::GetAtt": [FUNCTIONS["trigger_provider"], "Arn"]}
    assert output["Export"] == {"Name": "CronhookTriggerProvider-dev"}
    assert trigger_provider_export("prod") == "CronhookTriggerProvider"


@pytest.mark.parametrize(
    ("action", "resource", "allowed"),
    [
        ("dynamodb:PutItem", _table("triggers"), True),
        ("dynamodb:DeleteItem", _table("triggers"), True),
        ("dynamodb:PutItem", _table("states"), True),
        ("dynamodb:UpdateItem", _table("ledger"), True),
        ("dynamodb:PutItem", _table("audit"), True),
        # Never the keys, the runs, the events, the locks: it creates triggers, nothing else.
        ("dynamodb:GetItem", _table("keys"), False),
        ("dynamodb:PutItem", _table("runs"), False),
        ("dynamodb:PutItem", _table("events"), False),
        ("dynamodb:UpdateItem", _table("locks"), False),
        ("dynamodb:DeleteTable", _table("triggers"), False),
        ("ssm:GetParameter", f"arn:aws:ssm:{REGION}:{ACCOUNT}:parameter/cronhook/dev/root-key", False),
        ("lambda:InvokeFunction", f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:cronhook-dev-local-x", False),
        ("events:PutRule", f"arn:aws:events:{REGION}:{ACCOUNT}:rule/cronhook-dev-x", False),
        ("sqs:ReceiveMessage", f"arn:aws:sqs:{REGION}:{ACCOUNT}:cronhook-dev-fires", False),
    ],
)  # fmt: skip
def test_the_provider_role_reaches_only_what_a_trigger_write_needs(
    deployed, action, resource, allowed
):
    assert allows(deployed.policies["trigger_provider"], action, resource) is allowed


def test_the_provider_may_seal_a_webhook_secret_but_not_manage_the_key(deployed):
    key = deployed.arn_context.key_arns[deployed.physical["SecretsKey"]]
    policy = deployed.policies["trigger_provider"]
    assert allows(policy, "kms:Encrypt", key)
    for action in ("kms:ScheduleKeyDeletion", "kms:DisableKey", "kms:PutKeyPolicy"):
        assert not allows(policy, action, key)


def test_the_deployed_provider_answered_every_request_of_the_scenario(scenario):
    answers = scenario.cfn_answers
    assert [a["Status"] for a in answers] == ["SUCCESS"] * 5
    assert [a["PhysicalResourceId"] for a in answers] == [
        "cfn-every-minute",
        "cfn-hook",
        "cfn-every-minute",
        "cfn-every-minute",
        "cfn-hook",
    ]
    assert answers[1]["Data"]["WebhookUrl"].startswith("https://")


def test_the_worked_sam_example_is_cfn_lint_clean():
    env = {**os.environ, "AWS_DEFAULT_REGION": "us-east-1"}
    lint = Path(sys.executable).parent / "cfn-lint"
    answer = subprocess.run(
        [str(lint), "--format", "parseable", "--", str(EXAMPLE)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert answer.returncode == 0, answer.stdout + answer.stderr
    text = EXAMPLE.read_text()
    assert "Type: Custom::CronhookTrigger" in text and "AWS::Serverless::Function" in text
