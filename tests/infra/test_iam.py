"""Least privilege: every call the code makes is allowed by its function's role, nothing more.

The roles are read back from moto's IAM as CloudFormation created them (intrinsics
resolved); the calls are those the scenario made through each function's handler.
"""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from tests.infra.conftest import _policy_document
from tests.infra.harness import ACCOUNT, REGION, allows, required_permissions

# Statements no scenario call needs, and why they are still right.
NOT_CALLED_BY_OUR_CODE = {
    "OwnLogs": "the Lambda runtime writes the function's logs with the role",
    "Tracing": "the X-Ray daemon in Lambda sends the segments with the role",
    "WorkflowSecrets": "moto has no Lambda target; checked against secret_paths below",
    "SendAlerts": "only a transition (or a heartbeat tick's sweep request) sends to it",
}
# Functions the scenario does not invoke, and where their calls are made instead.
NOT_INVOKED = {
    "alerts": "no alert policy in the scenario: tests/functional/test_alerts*.py make its "
    "calls (its queue, the bus, SES's outbox stand-in, SNS)",
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
        if function not in NOT_INVOKED
        for s in policy["Statement"]
        if s.get("Sid") not in used[function] and s.get("Sid") not in NOT_CALLED_BY_OUR_CODE
    }
    assert not unused, f"granted but never needed by the scenario: {sorted(unused)}"


def test_no_role_grants_wildcard_actions_or_resources_outside_the_stack(deployed):
    allowed_prefixes = (
        f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/cronhook-dev-",
        f"arn:aws:sqs:{REGION}:{ACCOUNT}:cronhook-dev-fires",
        f"arn:aws:sqs:{REGION}:{ACCOUNT}:cronhook-dev-ingest",
        f"arn:aws:sqs:{REGION}:{ACCOUNT}:cronhook-dev-ticks",
        f"arn:aws:sqs:{REGION}:{ACCOUNT}:cronhook-dev-alerts",
        f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/default",  # LifecycleBus
        f"arn:aws:sns:{REGION}:{ACCOUNT}:cronhook-no-alert-topic",  # AlertTopics empty
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
                # X-Ray's, SES receipt rules' and Logs Insights results' actions have no
                # resource-level permissions.
                assert (
                    set(actions) <= {"xray:PutTraceSegments", "xray:PutTelemetryRecords"}
                    or (
                        function == "api_handler"
                        and set(actions) <= {"ses:CreateReceiptRule", "ses:DeleteReceiptRule"}
                    )
                    or (
                        # A query id is its only argument; StartQuery is on two log groups.
                        function == "api_handler" and set(actions) == {"logs:GetQueryResults"}
                    )
                    or (
                        # ses:SendEmail is scoped by its condition: from the AlertSender only.
                        function == "alerts"
                        and set(actions) == {"ses:SendEmail"}
                        and "ses:FromAddress" in statement["Condition"]["StringEquals"]
                    )
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


def _target_role(deployed) -> dict:
    """The target-invoke role as moto's IAM holds it: trust policy and inline policy."""
    iam = deployed.client("iam")
    name = deployed.physical["TargetInvokeRole"]
    role = iam.get_role(RoleName=name)["Role"]
    (policy_name,) = iam.list_role_policies(RoleName=name)["PolicyNames"]
    policy = iam.get_role_policy(RoleName=name, PolicyName=policy_name)["PolicyDocument"]
    return {
        "arn": role["Arn"],
        "trust": _policy_document(role["AssumeRolePolicyDocument"]),
        "policy": _policy_document(policy),
    }


def _runner_role(deployed) -> tuple[str, list[dict]]:
    """The runner role's ARN and its attached (managed) policy documents."""
    iam = deployed.client("iam")
    name = deployed.functions.configs["runner"]["Role"].rsplit("/", 1)[-1]
    documents = []
    for attached in iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"]:
        policy = iam.get_policy(PolicyArn=attached["PolicyArn"])["Policy"]
        version = iam.get_policy_version(
            PolicyArn=attached["PolicyArn"], VersionId=policy["DefaultVersionId"]
        )["PolicyVersion"]
        documents.append(_policy_document(version["Document"]))
    return iam.get_role(RoleName=name)["Role"]["Arn"], documents


def _as_tenant(policy: dict, tenant: str) -> dict:
    """``policy`` as IAM evaluates it for a session tagged ``cronhook-tenant=<tenant>``."""
    text = json.dumps(policy).replace("${aws:PrincipalTag/cronhook-tenant}", tenant)
    return json.loads(text)


def test_the_runner_role_itself_may_invoke_no_function(deployed):
    _, attached = _runner_role(deployed)
    for name in ("cronhook-dev-acme-report", "cronhook-dev-local-x:live", "anything", "*"):
        for policy in (deployed.policies["runner"], *attached):
            assert not allows(policy, "lambda:InvokeFunction", _function(name)), name
    every_action = [
        a
        for policy in (deployed.policies["runner"], *attached)
        for statement in policy["Statement"]
        for a in (
            statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        )
    ]
    assert not [a for a in every_action if a.startswith("lambda:")]


def test_the_runner_may_assume_the_target_role_and_no_other(deployed):
    target = _target_role(deployed)
    _, attached = _runner_role(deployed)
    assert len(attached) == 1
    for action in ("sts:AssumeRole", "sts:TagSession"):
        assert allows(attached[0], action, target["arn"])
        assert not allows(attached[0], action, f"arn:aws:iam::{ACCOUNT}:role/cronhook-dev-admin")
    for function in ("api_handler", "heartbeat", "authorizer", "ingest"):
        assert not allows(deployed.policies[function], "sts:AssumeRole", target["arn"])


def test_the_target_role_trusts_only_the_runner_and_only_with_a_tenant_tag(deployed):
    runner_arn, _ = _runner_role(deployed)
    (statement,) = _target_role(deployed)["trust"]["Statement"]
    assert statement["Effect"] == "Allow"
    principals = statement["Principal"]["AWS"]
    assert (principals if isinstance(principals, list) else [principals]) == [runner_arn]
    assert sorted(statement["Action"]) == ["sts:AssumeRole", "sts:TagSession"]
    # The tag must be there and not empty, and it is the only tag a session may carry.
    assert statement["Condition"]["StringLike"] == {"aws:RequestTag/cronhook-tenant": "?*"}
    assert statement["Condition"]["ForAllValues:StringEquals"] == {
        "aws:TagKeys": ["cronhook-tenant"]
    }


def _statement(policy: dict, sid: str) -> dict:
    (found,) = [s for s in policy["Statement"] if s.get("Sid") == sid]
    return found


def test_the_target_role_invokes_only_the_tagged_tenants_functions(deployed):
    policy = _target_role(deployed)["policy"]
    statement = _statement(policy, "TenantFunctions")
    assert statement["Action"] == ["lambda:InvokeFunction"]
    assert statement["Resource"] == (
        f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:cronhook-dev-"
        "${aws:PrincipalTag/cronhook-tenant}-*"
    )
    for tenant, other in (("acme", "local"), ("local", "acme"), ("team_7", "acme")):
        own, foreign = _as_tenant(policy, tenant), _as_tenant(policy, other)
        for name in (f"cronhook-dev-{tenant}-report", f"cronhook-dev-{tenant}-report:live"):
            assert allows(own, "lambda:InvokeFunction", _function(name))
            assert not allows(foreign, "lambda:InvokeFunction", _function(name))
        for name in (
            f"cronhook-prod-{tenant}-report",  # another stage
            f"cronhook-workflow-{tenant}",  # the old shared prefix
            "cronhook-dev-runner",  # cronhook's own
            f"cronhook-dev-{tenant}",
        ):
            assert not allows(own, "lambda:InvokeFunction", _function(name)), name
    # Another account's function with the tenant's name: not this account's ARN.
    other_account = f"arn:aws:lambda:{REGION}:999999999999:function:cronhook-dev-acme-report"
    assert not allows(_as_tenant(policy, "acme"), "lambda:InvokeFunction", other_account)


def test_every_name_the_code_accepts_is_one_the_tenants_session_may_invoke(deployed, monkeypatch):
    from chalicelib.settings import reset_settings
    from chalicelib.workflows.remote import check_lambda_target, lambda_prefix

    policy = _target_role(deployed)["policy"]
    monkeypatch.setenv("CRONHOOK_STAGE", "dev")
    reset_settings()
    try:
        for tenant in ("local", "acme", "team_7"):
            name = lambda_prefix(tenant) + "weekly-report"
            arn = _function(name)
            for form, resource in ((name, _function(name)), (arn + ":live", arn + ":live")):
                assert check_lambda_target(form, tenant=tenant) is None
                assert allows(_as_tenant(policy, tenant), "lambda:InvokeFunction", resource)
            # What the code refuses for another tenant, that tenant's session cannot reach.
            for other in ("local", "acme", "team_7"):
                if other != tenant:
                    assert check_lambda_target(name, tenant=other) is not None
                    assert not allows(
                        _as_tenant(policy, other), "lambda:InvokeFunction", _function(name)
                    )
    finally:
        reset_settings()


def _denies(policy: dict, action: str, resource: str) -> bool:
    deny = [s for s in policy["Statement"] if s["Effect"] == "Deny"]
    return allows({"Statement": [{**s, "Effect": "Allow"} for s in deny]}, action, resource)


def _may(policy: dict, action: str, resource: str) -> bool:
    return allows(policy, action, resource) and not _denies(policy, action, resource)


def test_the_target_role_reaches_only_the_tagged_tenants_queues_topics_machines_and_buses(
    deployed,
):
    from infra.iam import TARGET_ACTIONS

    policy = _target_role(deployed)["policy"]
    # The stack was deployed with no TargetArns: no TargetArnsPolicy (tested below).
    assert "TargetArnsPolicy" not in deployed.physical
    assert [s.get("Sid") for s in policy["Statement"]] == [
        "TenantFunctions",
        "TenantTargets",
        "NotCronhooksOwn",
    ]
    assert sorted(_statement(policy, "TenantTargets")["Action"]) == sorted(TARGET_ACTIONS)
    base = f"{REGION}:{ACCOUNT}"
    for tenant, other in (("acme", "local"), ("local", "acme")):
        own, foreign = _as_tenant(policy, tenant), _as_tenant(policy, other)
        for action, resource in (
            ("sqs:SendMessage", f"arn:aws:sqs:{base}:cronhook-dev-{tenant}-jobs"),
            ("sqs:GetQueueUrl", f"arn:aws:sqs:{base}:cronhook-dev-{tenant}-jobs.fifo"),
            ("sns:Publish", f"arn:aws:sns:{base}:cronhook-dev-{tenant}-news"),
            (
                "states:StartExecution",
                f"arn:aws:states:{base}:stateMachine:cronhook-dev-{tenant}-f",
            ),
            ("events:PutEvents", f"arn:aws:events:{base}:event-bus/cronhook-dev-{tenant}-bus"),
        ):
            assert _may(own, action, resource), (action, resource)
            assert not _may(foreign, action, resource), (action, resource)
        for resource in (
            f"arn:aws:sqs:{base}:cronhook-prod-{tenant}-jobs",  # another stage
            f"arn:aws:sqs:{base}:orders",  # not cronhook's
            f"arn:aws:events:{base}:event-bus/default",
            f"arn:aws:sqs:{REGION}:999999999999:cronhook-dev-{tenant}-jobs",  # another account
        ):
            assert not _may(own, "sqs:SendMessage", resource), resource
            assert not _may(own, "events:PutEvents", resource), resource
    # A tenant named like cronhook's own queues still cannot reach them.
    for queue in ("fires", "fires-dlq", "ticks", "ingest", "ingest-dlq"):
        tenant = queue.split("-")[0]
        resource = f"arn:aws:sqs:{base}:cronhook-dev-{queue}"
        assert _denies(_as_tenant(policy, tenant), "sqs:SendMessage", resource)
    for topic in ("mail", "alarms"):
        assert _denies(policy, "sns:Publish", f"arn:aws:sns:{base}:cronhook-dev-{topic}")


def test_target_arns_add_a_statement_and_the_code_knows_the_same_own_resources():
    from chalicelib.workflows.remote.aws_targets import OWN_RESOURCES
    from infra.iam import OWN_QUEUES, OWN_TOPICS, target_invoke_resources

    assert set(OWN_RESOURCES) == set(OWN_QUEUES) | set(OWN_TOPICS)
    listed = target_invoke_resources(stage="dev")["TargetArnsPolicy"]
    assert listed["Condition"] == "HasTargetArns"
    assert listed["Properties"]["Roles"] == [{"Ref": "TargetInvokeRole"}]
    (statement,) = listed["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Resource"] == {"Fn::Split": [",", {"Ref": "TargetArns"}]}
