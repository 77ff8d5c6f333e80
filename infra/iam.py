"""One least-privilege IAM role per Lambda function.

``ACCESS`` says what each function touches; ``role_resources`` turns it into roles with
exact resources (tables and their named indexes, the queue, the bucket, the key, the
parameters). No statement grants ``*`` actions, and ``Resource: "*"`` appears only for
X-Ray, SES receipt rules and ``logs:GetQueryResults``, whose actions have no resource-level
permissions (the API's receipt rules are only ever made in this stage's rule set, by name;
the only Logs Insights queries the API can start are on the runner's and its own log
groups, ``GET /v1/runs/{id}/logs``).

``lambda:`` targets are invoked under a role of their own (``target_invoke_resources``):
the runner's role may invoke no function at all, only assume that role with the session
tag ``cronhook-tenant``, and that role may invoke only the tagged tenant's functions
(ABAC: ``cronhook-<stage>-${aws:PrincipalTag/cronhook-tenant}-*``). The ``sqs:``, ``sns:``,
``states:`` and ``events:`` targets go through the same role, on the tenant's queues, topics,
state machines and buses named the same way, plus the ARNs the stack parameter
``TargetArns`` lists, and never cronhook's own queues and topics (an explicit Deny).

``tests/infra/test_iam.py`` records every AWS call a scenario makes per function and
checks it against these roles as deployed (into moto); a new call the role does not
allow fails there, so add it here, to the function that makes it, and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass

from chalicelib.store.tables import ALL_MODELS, base_name
from infra.tables import table_logical_id

__all__ = [
    "Access",
    "ACCESS",
    "FUNCTIONS",
    "role_logical_id",
    "role_resources",
    "target_invoke_resources",
    "TARGET_ROLE",
    "TARGET_ROLE_ASSUME",
    "TENANT_TAG",
    "TARGET_ACTIONS",
]

READ = (
    "dynamodb:GetItem",
    "dynamodb:BatchGetItem",
    "dynamodb:Query",
    "dynamodb:ConditionCheckItem",
)
WRITE = (
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:BatchWriteItem",
)


@dataclass(frozen=True)
class Access:
    """What one function may touch."""

    read: tuple[str, ...] = ()  # table base names: read (and query every index)
    write: tuple[str, ...] = ()  # table base names: read and write
    send: bool = False  # sqs:SendMessage on the fire queue
    consume: bool = False  # the runner's event source mapping polls the queue (+ hand-backs)
    payloads: tuple[str, ...] = ()  # s3 actions on the payload bucket's objects
    kms: tuple[str, ...] = ()  # kms actions on the stack's key
    params: tuple[str, ...] = ()  # "switch", "root_key", "secrets"
    secrets_manager: bool = False
    invoke_workflows: bool = False  # lambda: targets, through the target-invoke role (below)
    queue_depths: bool = False  # sqs:GetQueueAttributes on the fire queue and its DLQ (health)
    source_rules: bool = False  # this stage's EventBridge rules and SES receipt rules
    ingest: bool = False  # consume the ingest queue, read inbound mail
    send_ticks: bool = False  # sqs:SendMessage on the tick queue (the heartbeat's fan-out)
    consume_ticks: bool = False  # the enqueuer's event source mapping polls the tick queue
    send_alerts: bool = False  # sqs:SendMessage on the alerts queue (transitions detected)
    alerts: bool = False  # the alerts worker: its queue, the bus, SES from the sender, SNS
    run_logs: bool = False  # Logs Insights on the runner's and the API's log groups


# Chalice's function names (config.json's lambda_functions keys) -> CloudFormation ids.
FUNCTIONS = {
    "api_handler": "APIHandler",
    "authorizer": "Authorizer",
    "heartbeat": "Heartbeat",
    "runner": "Runner",
    "enqueuer": "Enqueuer",
    "ingest": "Ingest",
    "trigger_provider": "TriggerProvider",
    "alerts": "Alerts",
}

ACCESS: dict[str, Access] = {
    # The REST API and the webhook ingress: everything a user can change, sealing/unsealing
    # webhook secrets, large bodies to S3, eager dispatch to the queue. Not the root key:
    # the authorizer checks keys.
    # Tenants' quota usage is an item in the ledger table (services/quotas.py).
    "api_handler": Access(
        read=("heartbeats",),  # health (a trigger view's budget reads the ledger, written below)
        write=(
            "triggers",
            "states",
            "runs",
            "events",
            "audit",
            "keys",
            "deliveries",
            "ledger",
            "alerts",
        ),
        send=True,
        send_alerts=True,  # a person's pause; a policy's test
        queue_depths=True,
        payloads=("s3:PutObject", "s3:DeleteObject"),  # a duplicate's body is deleted
        kms=("kms:Encrypt", "kms:Decrypt"),
        params=("switch",),
        source_rules=True,  # eventbridge/s3/email triggers: their rule, made on create
        run_logs=True,  # GET /v1/runs/{id}/logs: a Logs Insights query on the run's id
    ),
    # The API's custom authorizer: look a key up by id (its hash), or compare the root key.
    "authorizer": Access(read=("keys",), params=("root_key",)),
    # Find due, claim, enqueue, reap, sweep pending events. A reaped run's budget hold is
    # charged (ledger); never states, keys or the audit log.
    "heartbeat": Access(
        write=("triggers", "runs", "events", "ledger", "heartbeats"),
        send=True,
        send_alerts=True,  # a lost run; each tick's request for the alert sweep
        params=("switch",),
        send_ticks=True,
    ),
    # A fanned-out tick's shard: what the heartbeat does for one shard (find due, enqueue,
    # move the shard's cursor, reap); no sweep, no tick record (heartbeats).
    "enqueuer": Access(
        write=("triggers", "runs", "events", "ledger"),
        send=True,
        send_alerts=True,  # a lost run
        params=("switch",),
        consume_ticks=True,
    ),
    # Start, run, settle; budgets, locks, secrets for workflows, Lambda targets.
    "runner": Access(
        read=("keys",),
        write=("triggers", "states", "runs", "events", "ledger", "audit", "locks"),
        send=True,
        send_alerts=True,  # a run's transitions (failed, recovered, disabled, budget)
        consume=True,
        payloads=("s3:GetObject",),
        kms=("kms:Decrypt",),
        params=("switch", "secrets"),
        secrets_manager=True,
        invoke_workflows=True,
    ),
    # Custom::CronhookTrigger (services/trigger_resource.py): create, update and delete a
    # trigger through the API's code. The trigger and its key reservation, the first state,
    # the quota (ledger), the audit; sealing and reading a webhook secret; a first slot
    # inside a window the heartbeat already sent is enqueued. Not the delivered sources'
    # rules nor large payloads (S3): those are declared through the API or apply.
    "trigger_provider": Access(
        write=("triggers", "states", "audit", "ledger"),
        send=True,
        kms=("kms:Encrypt", "kms:Decrypt"),
    ),
    # Delivered events (EventBridge rules, SES mail): store, dedupe, dispatch, like ingress.
    "ingest": Access(
        write=("triggers", "events"),
        send=True,
        payloads=("s3:PutObject", "s3:DeleteObject"),  # a large event body, a duplicate's
        params=("switch",),
        ingest=True,
        send_alerts=True,  # an expired trigger, a source gone
    ),
    # Alerts, off the fire path: notifications, digests, the lifecycle bus.
    "alerts": Access(
        read=("triggers", "states", "events"),
        write=("alerts",),
        kms=("kms:Decrypt",),  # Slack URLs and webhook signing secrets
        alerts=True,
        send_alerts=True,  # a digest's flush, delayed to its minute's end
    ),
}

_INDEXES = {
    base_name(m): sorted(m._get_schema()["global_secondary_indexes"], key=lambda i: i["index_name"])
    for m in ALL_MODELS
}


def role_logical_id(function: str) -> str:
    """``runner`` -> ``RunnerRole``."""
    return FUNCTIONS[function] + "Role"


def _table_arns(tables: tuple[str, ...]) -> list:
    arns: list = []
    for name in tables:
        logical = table_logical_id(name)
        arns.append({"Fn::GetAtt": [logical, "Arn"]})
        for index in _INDEXES[name]:
            arns.append({"Fn::Sub": "${" + logical + ".Arn}/index/" + index["index_name"]})
    return arns


def _statements(function: str, access: Access, log_group: str, stage: str) -> list[dict]:
    statements: list[dict] = [
        {
            "Sid": "OwnLogs",
            "Effect": "Allow",
            "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
            "Resource": [
                {"Fn::GetAtt": [log_group, "Arn"]},
                {"Fn::Sub": "${" + log_group + ".Arn}:log-stream:*"},
            ],
        },
        {
            # X-Ray has no resource-level permissions: this is AWS's own minimal policy.
            "Sid": "Tracing",
            "Effect": "Allow",
            "Action": ["xray:PutTraceSegments", "xray:PutTelemetryRecords"],
            "Resource": "*",
        },
    ]
    read_only = tuple(t for t in access.read if t not in access.write)
    if read_only:
        statements.append(
            {
                "Sid": "ReadTables",
                "Effect": "Allow",
                "Action": list(READ),
                "Resource": _table_arns(read_only),
            }
        )
    if access.write:
        statements.append(
            {
                "Sid": "WriteTables",
                "Effect": "Allow",
                "Action": list(READ + WRITE),
                "Resource": _table_arns(access.write),
            }
        )
    if access.send:
        statements.append(
            {
                "Sid": "SendFires",
                "Effect": "Allow",
                "Action": ["sqs:SendMessage"],
                "Resource": {"Fn::GetAtt": ["FiresQueue", "Arn"]},
            }
        )
    if access.consume:
        statements.append(
            {
                # What Lambda's SQS poller needs (it polls with the function's role), and
                # ChangeMessageVisibility: the runner hands a message it has no time left to
                # start back to the queue at once (wiring.handle_sqs_batch).
                "Sid": "ConsumeFires",
                "Effect": "Allow",
                "Action": [
                    "sqs:ReceiveMessage",
                    "sqs:DeleteMessage",
                    "sqs:GetQueueAttributes",
                    "sqs:ChangeMessageVisibility",
                ],
                "Resource": {"Fn::GetAtt": ["FiresQueue", "Arn"]},
            }
        )
    if access.send_ticks:
        statements.append(
            {
                "Sid": "SendTicks",
                "Effect": "Allow",
                "Action": ["sqs:SendMessage"],
                "Resource": {"Fn::GetAtt": ["TickQueue", "Arn"]},
            }
        )
    if access.consume_ticks:
        statements.append(
            {
                # What Lambda's SQS poller needs; it polls with the function's role.
                "Sid": "ConsumeTicks",
                "Effect": "Allow",
                "Action": ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"],
                "Resource": {"Fn::GetAtt": ["TickQueue", "Arn"]},
            }
        )
    if access.queue_depths:
        statements.append(
            {
                "Sid": "QueueDepths",
                "Effect": "Allow",
                "Action": ["sqs:GetQueueAttributes"],
                "Resource": [
                    {"Fn::GetAtt": ["FiresQueue", "Arn"]},
                    {"Fn::GetAtt": ["DeadLetterQueue", "Arn"]},
                ],
            }
        )
    if access.payloads:
        statements.append(
            {
                "Sid": "Payloads",
                "Effect": "Allow",
                "Action": list(access.payloads),
                "Resource": {"Fn::Sub": "${PayloadBucket.Arn}/*"},
            }
        )
    kms = set(access.kms)
    if access.payloads:
        # SSE-KMS: S3 asks KMS with the caller's permissions.
        if "s3:PutObject" in access.payloads:
            kms.add("kms:GenerateDataKey")
        if "s3:GetObject" in access.payloads:
            kms.add("kms:Decrypt")
    if kms:
        statements.append(
            {
                "Sid": "SecretsKey",
                "Effect": "Allow",
                "Action": sorted(kms),
                "Resource": {"Fn::GetAtt": ["SecretsKey", "Arn"]},
            }
        )
    param_arns = []
    for param in access.params:
        if param == "switch":
            param_arns.append(
                {
                    "Fn::Sub": "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}"
                    ":parameter${SwitchParameter}"
                }
            )
        elif param == "root_key":
            param_arns.append(
                {
                    "Fn::Sub": "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}"
                    ":parameter${RootKeyParameterName}"
                }
            )
        elif param == "secrets":
            # Workflow secrets are /cronhook/<stage>/<tenant>/[<scope>/]<name>: at least two
            # levels below the stage, so this never matches the root key or the switch
            # (/cronhook/<stage>/<name>, one level).
            param_arns.append(
                {
                    "Fn::Sub": "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}"
                    f":parameter/cronhook/{stage}/*/*"
                }
            )
        else:
            raise ValueError(f"{function}: unknown parameter {param!r}")
    if param_arns:
        statements.append(
            {
                "Sid": "Parameters",
                "Effect": "Allow",
                "Action": ["ssm:GetParameter"],
                "Resource": param_arns,
            }
        )
    if access.secrets_manager:
        statements.append(
            {
                "Sid": "WorkflowSecrets",
                "Effect": "Allow",
                "Action": ["secretsmanager:GetSecretValue"],
                "Resource": {
                    "Fn::Sub": "arn:${AWS::Partition}:secretsmanager:${AWS::Region}"
                    f":${{AWS::AccountId}}:secret:cronhook/{stage}/*"
                },
            }
        )
    if access.source_rules:
        from infra.sources import rule_arns

        statements.append(
            {
                "Sid": "SourceRules",
                "Effect": "Allow",
                "Action": [
                    "events:PutRule",
                    "events:PutTargets",
                    "events:RemoveTargets",
                    "events:DeleteRule",
                ],
                "Resource": rule_arns(stage),
            }
        )
        statements.append(
            {
                # SES v1 receipt-rule actions have no resource types: "*" is the only form.
                "Sid": "MailRules",
                "Effect": "Allow",
                "Action": ["ses:CreateReceiptRule", "ses:DeleteReceiptRule"],
                "Resource": "*",
            }
        )
    if access.send_alerts or access.alerts:
        from infra.alerts import alert_statements

        statements.extend(alert_statements(send=access.send_alerts, consume=access.alerts))
    if access.run_logs:
        statements.extend(_run_log_statements())
    if access.ingest:
        statements.append(
            {
                "Sid": "ConsumeIngest",
                "Effect": "Allow",
                "Action": [
                    "sqs:ReceiveMessage",
                    "sqs:DeleteMessage",
                    "sqs:GetQueueAttributes",
                    "sqs:ChangeMessageVisibility",
                ],
                "Resource": {"Fn::GetAtt": ["IngestQueue", "Arn"]},
            }
        )
        statements.append(
            {
                "Sid": "InboundMail",
                "Effect": "Allow",
                "Action": ["s3:GetObject"],
                "Resource": {"Fn::Sub": "${MailBucket.Arn}/inbound/*"},
            }
        )
    return statements


def _run_log_statements() -> list[dict]:
    """``logs:StartQuery`` on the two log groups a run's lines are in (the group's ARN with
    and without its ``:*``: IAM checks the bare one), and ``logs:GetQueryResults``, which
    takes a query id and has no resource-level permission."""
    groups = [f"{FUNCTIONS[f]}LogGroup" for f in ("runner", "api_handler")]
    return [
        {
            "Sid": "RunLogs",
            "Effect": "Allow",
            "Action": ["logs:StartQuery"],
            "Resource": [
                arn
                for group in groups
                for arn in (
                    {"Fn::GetAtt": [group, "Arn"]},
                    {
                        "Fn::Sub": "arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}"
                        ":log-group:${" + group + "}"
                    },
                )
            ],
        },
        {
            "Sid": "RunLogResults",
            "Effect": "Allow",
            "Action": ["logs:GetQueryResults"],
            "Resource": "*",
        },
    ]


def role_resources(log_groups: dict[str, str], *, stage: str) -> dict[str, dict]:
    """An ``AWS::IAM::Role`` per function with its one inline policy."""
    resources: dict[str, dict] = {}
    for function, access in ACCESS.items():
        resources[role_logical_id(function)] = {
            "Type": "AWS::IAM::Role",
            "Properties": {
                "Description": f"cronhook {function}: least privilege, generated by infra/iam.py",
                "AssumeRolePolicyDocument": {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Principal": {"Service": "lambda.amazonaws.com"},
                            "Action": "sts:AssumeRole",
                        }
                    ],
                },
                "Policies": [
                    {
                        "PolicyName": f"cronhook-{function.replace('_', '-')}",
                        "PolicyDocument": {
                            "Version": "2012-10-17",
                            "Statement": _statements(function, access, log_groups[function], stage),
                        },
                    }
                ],
            },
        }
    return resources


TARGET_ROLE = "TargetInvokeRole"
TARGET_ROLE_ASSUME = "TargetInvokeAssume"
TENANT_TAG = "cronhook-tenant"  # chalicelib/workflows/remote/lambda_target.py sets it


# What the AWS service targets call (chalicelib/workflows/remote/aws_targets.py).
TARGET_ACTIONS = (
    "sqs:SendMessage",
    "sqs:GetQueueUrl",
    "sns:Publish",
    "states:StartExecution",
    "events:PutEvents",
)
# cronhook's own queues and topics (aws_targets.OWN_RESOURCES): no target reaches them.
OWN_QUEUES = ("fires", "fires-dlq", "ticks", "ingest", "ingest-dlq")
OWN_TOPICS = ("mail", "alarms")


def _arn(service: str, resource: str) -> dict:
    return {
        "Fn::Sub": f"arn:${{AWS::Partition}}:{service}:${{AWS::Region}}:${{AWS::AccountId}}:"
        + resource
    }


def _target_statements(stage: str) -> list:
    """The AWS service targets' statements of the target-invoke role."""
    tenant = f"cronhook-{stage}-${{!aws:PrincipalTag/{TENANT_TAG}}}-*"
    return [
        {
            "Sid": "TenantTargets",
            "Effect": "Allow",
            "Action": list(TARGET_ACTIONS),
            "Resource": [
                _arn("sqs", tenant),
                _arn("sns", tenant),
                _arn("states", f"stateMachine:{tenant}"),
                _arn("events", f"event-bus/{tenant}"),
            ],
        },
        {
            "Sid": "NotCronhooksOwn",
            "Effect": "Deny",
            "Action": list(TARGET_ACTIONS),
            "Resource": [_arn("sqs", f"cronhook-{stage}-{q}") for q in OWN_QUEUES]
            + [_arn("sns", f"cronhook-{stage}-{t}") for t in OWN_TOPICS],
        },
    ]


TARGET_ARNS_POLICY = "TargetArnsPolicy"


def _listed_targets(stage: str) -> dict:
    """The ARNs the stack parameter ``TargetArns`` lists, for the target-invoke role: a
    policy of its own that exists only when the parameter is set (condition HasTargetArns)."""
    return {
        "Type": "AWS::IAM::ManagedPolicy",
        "Condition": "HasTargetArns",
        "Properties": {
            "Description": f"cronhook {stage}: the targets TargetArns lists",
            "Roles": [{"Ref": TARGET_ROLE}],
            "PolicyDocument": {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Sid": "ListedTargets",
                        "Effect": "Allow",
                        "Action": list(TARGET_ACTIONS),
                        "Resource": {"Fn::Split": [",", {"Ref": "TargetArns"}]},
                    }
                ],
            },
        },
    }


def target_invoke_resources(*, stage: str) -> dict[str, dict]:
    """The role ``lambda:`` targets are invoked under, and the runner's right to assume it.

    1. ``TargetInvokeRole`` trusts only the roles of the functions with ``invoke_workflows``
       (the runner), and only with a ``cronhook-tenant`` session tag, the one tag allowed.
    2. It may invoke ``cronhook-<stage>-<that tag>-*``: a session tagged ``acme`` reaches
       ``cronhook-<stage>-acme-report`` (and its versions and aliases), never another
       tenant's function, another stage's, or cronhook's own (``cronhook-<stage>-runner``).
    3. The runner's side (``sts:AssumeRole`` + ``sts:TagSession`` on that role) is a managed
       policy attached to its role: in the runner's inline policy it would make the two
       roles depend on each other (a cycle CloudFormation refuses).
    """
    invokers = [role_logical_id(f) for f, access in ACCESS.items() if access.invoke_workflows]
    tenant_functions = {
        "Fn::Sub": "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}"
        f":function:cronhook-{stage}-${{!aws:PrincipalTag/{TENANT_TAG}}}-*"
    }
    return {
        TARGET_ARNS_POLICY: _listed_targets(stage),
        TARGET_ROLE: {
            "Type": "AWS::IAM::Role",
            "Properties": {
                "Description": (
                    f"cronhook {stage}: invokes lambda: targets, one tenant per session "
                    "(generated by infra/iam.py)"
                ),
                "MaxSessionDuration": 3600,
                "AssumeRolePolicyDocument": {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Sid": "RunnerWithTenantTag",
                            "Effect": "Allow",
                            "Principal": {
                                "AWS": [{"Fn::GetAtt": [role, "Arn"]} for role in invokers]
                            },
                            "Action": ["sts:AssumeRole", "sts:TagSession"],
                            "Condition": {
                                # Present and not empty: no session without a tenant.
                                "StringLike": {f"aws:RequestTag/{TENANT_TAG}": "?*"},
                                "ForAllValues:StringEquals": {"aws:TagKeys": [TENANT_TAG]},
                            },
                        }
                    ],
                },
                "Policies": [
                    {
                        "PolicyName": "cronhook-target-invoke",
                        "PolicyDocument": {
                            "Version": "2012-10-17",
                            "Statement": [
                                {
                                    "Sid": "TenantFunctions",
                                    "Effect": "Allow",
                                    "Action": ["lambda:InvokeFunction"],
                                    "Resource": tenant_functions,
                                },
                                *_target_statements(stage),
                            ],
                        },
                    }
                ],
            },
        },
        TARGET_ROLE_ASSUME: {
            "Type": "AWS::IAM::ManagedPolicy",
            "Properties": {
                "Description": f"cronhook {stage}: the runner assumes the target-invoke role",
                "Roles": [{"Ref": role} for role in invokers],
                "PolicyDocument": {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Sid": "AssumeTargetInvokeRole",
                            "Effect": "Allow",
                            "Action": ["sts:AssumeRole", "sts:TagSession"],
                            "Resource": {"Fn::GetAtt": [TARGET_ROLE, "Arn"]},
                        }
                    ],
                },
            },
        },
    }
