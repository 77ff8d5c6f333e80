"""Least privilege: every call the code makes is allowed by its function's role, nothing more.

The roles are read back from moto's IAM as CloudFormation created them (intrinsics
resolved); the calls are those the scenario made through each function's handler.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from tests.infra.harness import ACCOUNT, REGION, allows, required_permissions

# Statements no scenario call needs, and why they are still right.
NOT_CALLED_BY_OUR_CODE = {
    "OwnLogs": "the Lambda runtime writes the function's logs with the role",
    "Tracing": "the X-Ray daemon in Lambda sends the segments with the role",
    "WorkflowSecrets": "moto has no Lambda target; checked against secret_paths below",
    "WorkflowFunctions": "moto cannot run Lambda code; checked against the prefix below",
}


def _table(name: str, stage: str = "dev") -> str:
    return f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/cronhook-{stage}-{name}"


def _param(name: str) -> str:
    return f"arn:aws:ssm:{REGION}:{ACCOUNT}:parameter/{name.lstrip('/')}"


def _function(name: str) -> str:
    return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}"


def _grants(deployed, scenario):
    """(function, action, resource, allowed, statement ids that allowed it) per call."""
    out = []
    for call in deployed.recorder.calls:
        for action, resource in required_permissions(call, deployed.arn_context):
            policy = deployed.policies[call.function]
            sids = [
                s.get("Sid")
                for s in policy["Statement"]
                if allows({"Statement": [s]}, action, resource)
            ]
            out.append((call.function, action, resource, bool(sids), sids))
    return out


def test_every_call_the_functions_made_is_allowed_by_their_deployed_role(deployed, scenario):
    grants = _grants(deployed, scenario)
    denied = sorted({(f, a, r) for f, a, r, ok, _ in grants if not ok})
    assert not denied, "\n".join(f"{f}: {a} on {r}" for f, a, r in denied)
    seen = defaultdict(set)
    for function, action, *_ in grants:
        seen[function].add(action)
    # The scenario really went through every kind of access each function has.
    assert {
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:Query",
        "sqs:SendMessage",
        "kms:Encrypt",
        "kms:Decrypt",
        "s3:PutObject",
        "kms:GenerateDataKey",
        "ssm:GetParameter",
    } <= seen["api_handler"]
    assert {"dynamodb:Query", "dynamodb:UpdateItem", "sqs:SendMessage", "ssm:GetParameter"} <= seen[
        "heartbeat"
    ]
    # The authorizer: a key by id, and the root key's parameter.
    assert seen["authorizer"] == {"dynamodb:GetItem", "ssm:GetParameter"}
    assert {
        "sqs:ReceiveMessage",
        "sqs:DeleteMessage",
        "dynamodb:GetItem",
        "dynamodb:UpdateItem",
        "s3:GetObject",
        "kms:Decrypt",
    } <= seen["runner"]


def test_every_statement_of_every_role_is_needed(deployed, scenario):
    used = defaultdict(set)
    for function, _, _, _, sids in _grants(deployed, scenario):
        used[function].update(sids)
    unused = {
        (function, s.get("Sid"))
        for function, policy in deployed.policies.items()
        for s in policy["Statement"]
        if s.get("Sid") not in used[function] and s.get("Sid") not in NOT_CALLED_BY_OUR_CODE
    }
    assert not unused, f"granted but never needed by the scenario: {sorted(unused)}"


def test_no_role_grants_wildcard_actions_or_resources_outside_the_stack(deployed):
    allowed_prefixes = (
        f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/cronhook-dev-",
        f"arn:aws:sqs:{REGION}:{ACCOUNT}:cronhook-dev-fires",
        f"arn:aws:sqs:{REGION}:{ACCOUNT}:cronhook-dev-ingest",
        f"arn:aws:s3:::{deployed.physical['PayloadBucket']}/",
        f"arn:aws:s3:::{deployed.physical['MailBucket']}/inbound/",
        f"arn:aws:events:{REGION}:{ACCOUNT}:rule/cronhook-dev-",
        f"arn:aws:events:{REGION}:{ACCOUNT}:rule/*/cronhook-dev-",
        deployed.arn_context.key_arns[deployed.physical["SecretsKey"]],
        f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/aws/lambda/cronhook-dev-",
        f"arn:aws:ssm:{REGION}:{ACCOUNT}:parameter/cronhook/dev/",
        f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:cronhook/dev/",
        f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:cronhook-dev-",
    )
    for function, policy in deployed.policies.items():
        for statement in policy["Statement"]:
            actions = statement["Action"]
            actions = actions if isinstance(actions, list) else [actions]
            resources = statement["Resource"]
            resources = resources if isinstance(resources, list) else [resources]
            assert statement["Effect"] == "Allow"
            for action in actions:
                assert "*" not in action, (function, action)
            if resources == ["*"]:
                # X-Ray's and SES receipt rules' actions have no resource-level permissions.
                assert set(actions) <= {"xray:PutTraceSegments", "xray:PutTelemetryRecords"} or (
                    function == "api_handler"
                    and set(actions) <= {"ses:CreateReceiptRule", "ses:DeleteReceiptRule"}
                )
                continue
            for resource in resources:
                assert resource.startswith(allowed_prefixes), (function, resource)


@pytest.mark.parametrize(
    ("function", "action", "resource"),
    [
        ("heartbeat", "dynamodb:GetItem", _table("keys")),
        ("heartbeat", "dynamodb:GetItem", _table("states")),
        ("heartbeat", "dynamodb:UpdateItem", _table("locks")),
        ("heartbeat", "dynamodb:PutItem", _table("audit")),
        ("heartbeat", "ssm:GetParameter", _param("/cronhook/dev/root-key")),
        ("heartbeat", "sqs:ReceiveMessage", f"arn:aws:sqs:{REGION}:{ACCOUNT}:cronhook-dev-fires"),
        ("api_handler", "dynamodb:PutItem", _table("locks")),
        # Keys are checked by the authorizer: the API function never reads the root key.
        ("api_handler", "ssm:GetParameter", _param("/cronhook/dev/root-key")),
        ("authorizer", "dynamodb:PutItem", _table("keys")),
        ("authorizer", "dynamodb:UpdateItem", _table("keys")),
        ("authorizer", "dynamodb:GetItem", _table("triggers")),
        ("authorizer", "ssm:GetParameter", _param("/cronhook/dev/triggers-enabled")),
        ("authorizer", "kms:Decrypt", "arn:aws:kms:us-east-1:123456789012:key/any"),
        ("authorizer", "sqs:SendMessage", f"arn:aws:sqs:{REGION}:{ACCOUNT}:cronhook-dev-fires"),
        ("api_handler", "dynamodb:UpdateItem", _table("locks")),
        ("api_handler", "sqs:ReceiveMessage", f"arn:aws:sqs:{REGION}:{ACCOUNT}:cronhook-dev-fires"),
        ("api_handler", "lambda:InvokeFunction", _function("cronhook-dev-acme-report")),
        ("runner", "dynamodb:PutItem", _table("keys")),
        ("runner", "dynamodb:DeleteItem", _table("keys")),
        # The workflow-secrets grant is two levels below the stage: never the root key.
        ("runner", "ssm:GetParameter", _param("/cronhook/dev/root-key")),
        ("runner", "ssm:GetParameter", _param("/cronhook/prod/local/API_TOKEN")),
        ("runner", "lambda:InvokeFunction", _function("cronhook-dev-api")),
        ("runner", "lambda:InvokeFunction", _function("billing-export")),
        # Not the old shared prefix, not another stage's tenants, not cronhook's own.
        ("runner", "lambda:InvokeFunction", _function("cronhook-workflow-report")),
        ("runner", "lambda:InvokeFunction", _function("cronhook-prod-acme-report")),
        ("runner", "lambda:InvokeFunction", _function("cronhook-dev")),
        ("runner", "lambda:InvokeFunction", _function("cronhook-dev-runner")),
        ("runner", "lambda:InvokeFunction", _function("cronhook-dev-heartbeat")),
        ("runner", "lambda:InvokeFunction", _function("cronhook-dev-authorizer")),
        ("runner", "dynamodb:GetItem", _table("triggers", stage="prod")),
        *[
            (function, action, _table("triggers"))
            for function in ("api_handler", "heartbeat", "runner")
            for action in (
                "dynamodb:Scan",
                "dynamodb:DeleteTable",
                "dynamodb:UpdateTable",
                "dynamodb:CreateBackup",
            )
        ],
        *[
            (function, "sqs:PurgeQueue", f"arn:aws:sqs:{REGION}:{ACCOUNT}:cronhook-dev-fires")
            for function in ("api_handler", "heartbeat", "runner")
        ],
    ],
)
def test_a_function_cannot_reach_what_it_does_not_use(deployed, function, action, resource):
    assert not allows(deployed.policies[function], action, resource)


def test_only_the_runner_may_hand_a_fire_message_back_to_the_queue(deployed):
    # A message the runner has no time left to start is made visible again at once
    # (wiring.handle_sqs_batch): ChangeMessageVisibility on the fire queue, nothing else.
    fires = f"arn:aws:sqs:{REGION}:{ACCOUNT}:cronhook-dev-fires"
    dead = f"arn:aws:sqs:{REGION}:{ACCOUNT}:cronhook-dev-fires-dlq"
    for function, policy in deployed.policies.items():
        assert allows(policy, "sqs:ChangeMessageVisibility", fires) is (function == "runner")
        assert not allows(policy, "sqs:ChangeMessageVisibility", dead)


def test_only_the_api_stores_large_bodies_and_only_the_runner_reads_them(deployed):
    body = f"arn:aws:s3:::{deployed.physical['PayloadBucket']}/events/evt_x"
    policies = deployed.policies
    assert allows(policies["api_handler"], "s3:PutObject", body)
    assert not allows(policies["api_handler"], "s3:GetObject", body)
    assert allows(policies["runner"], "s3:GetObject", body)
    assert not allows(policies["runner"], "s3:PutObject", body)
    assert not any(allows(policies["heartbeat"], a, body) for a in ("s3:GetObject", "s3:PutObject"))
    bucket = f"arn:aws:s3:::{deployed.physical['PayloadBucket']}"
    for policy in policies.values():
        assert not allows(policy, "s3:ListBucket", bucket)
        assert not allows(policy, "s3:DeleteBucket", bucket)


@pytest.mark.parametrize("function", ["api_handler", "heartbeat", "runner"])
def test_only_the_api_can_seal_secrets_and_nobody_can_manage_the_key(deployed, function):
    key = deployed.arn_context.key_arns[deployed.physical["SecretsKey"]]
    policy = deployed.policies[function]
    assert allows(policy, "kms:Encrypt", key) is (function == "api_handler")
    for action in ("kms:ScheduleKeyDeletion", "kms:DisableKey", "kms:PutKeyPolicy"):
        assert not allows(policy, action, key)


def test_runner_may_read_the_workflow_secrets_the_code_looks_up(deployed, monkeypatch):
    from chalicelib.services.secrets import secret_paths
    from chalicelib.settings import reset_settings

    monkeypatch.setenv("CRONHOOK_STAGE", "dev")
    reset_settings()
    try:
        paths = secret_paths("API_TOKEN", tenant="local", scope="client-7")
    finally:
        reset_settings()
    assert len(paths) == 2
    for path in paths:
        parameter = _param("/" + path)
        secret = f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:{path}-AbCdEf"
        assert allows(deployed.policies["runner"], "ssm:GetParameter", parameter)
        assert allows(deployed.policies["runner"], "secretsmanager:GetSecretValue", secret)
        for other in ("api_handler", "heartbeat"):
            assert not allows(deployed.policies[other], "ssm:GetParameter", parameter)
            assert not allows(deployed.policies[other], "secretsmanager:GetSecretValue", secret)


def test_runner_may_invoke_the_lambda_targets_the_code_accepts_and_no_other(deployed, monkeypatch):
    from chalicelib.settings import reset_settings
    from chalicelib.workflows.remote import check_lambda_target, lambda_prefix

    monkeypatch.setenv("CRONHOOK_STAGE", "dev")
    reset_settings()
    try:
        for tenant in ("local", "acme", "team_7"):
            name = lambda_prefix(tenant) + "weekly-report"
            assert check_lambda_target(name, tenant=tenant) is None
            for form in (name, name + ":live"):
                assert allows(deployed.policies["runner"], "lambda:InvokeFunction", _function(form))
        # A name the code refuses for a tenant is one IAM also refuses, where it can tell
        # (the stage); another tenant's name in the same stage is refused by the code.
        assert check_lambda_target("cronhook-dev-acme-report", tenant="local") is not None
        assert check_lambda_target("cronhook-workflow-report", tenant="local") is not None
    finally:
        reset_settings()
    # cronhook's own functions, whatever Chalice names them: never a target.
    for function in ("cronhook-dev", *(f"cronhook-dev-{f}" for f in deployed.policies)):
        if "-" not in function.removeprefix("cronhook-dev-"):
            assert not allows(
                deployed.policies["runner"], "lambda:InvokeFunction", _function(function)
            )
