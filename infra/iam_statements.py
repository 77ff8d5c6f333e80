"""The statements of one function's role, from its ``Access`` (``infra/iam_access.py``).

One builder per group of resources: the function's own logs and X-Ray, the tables (and
their named indexes), the queues, the payload bucket and the key, the parameters and
secrets, this stage's source rules, the alerts, the run logs, the ingest queue and the
inbound mail. The statements come in that order.
"""

from __future__ import annotations

from chalicelib.store.tables import ALL_MODELS, base_name
from infra.iam_access import FUNCTIONS, Access
from infra.tables import table_logical_id

__all__ = ["role_statements"]

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


_INDEXES = {
    base_name(m): sorted(m._get_schema()["global_secondary_indexes"], key=lambda i: i["index_name"])
    for m in ALL_MODELS
}


def _table_arns(tables: tuple[str, ...]) -> list:
    arns: list = []
    for name in tables:
        logical = table_logical_id(name)
        arns.append({"Fn::GetAtt": [logical, "Arn"]})
        for index in _INDEXES[name]:
            arns.append({"Fn::Sub": "${" + logical + ".Arn}/index/" + index["index_name"]})
    return arns


def role_statements(function: str, access: Access, log_group: str, stage: str) -> list[dict]:
    """Every statement of ``function``'s inline policy."""
    found = _own_statements(log_group)
    found += _table_statements(access)
    found += _queue_statements(access)
    found += _payload_statements(access)
    found += _parameter_statements(function, access, stage)
    found += _source_rule_statements(access, stage)
    if access.send_alerts or access.alerts:
        from infra.alerts import alert_statements

        found.extend(alert_statements(send=access.send_alerts, consume=access.alerts))
    if access.run_logs:
        found.extend(_run_log_statements())
    found += _ingest_statements(access)
    return found


def _own_statements(log_group: str) -> list[dict]:
    """The function's own log group, and X-Ray."""
    return [
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


def _table_statements(access: Access) -> list[dict]:
    statements: list[dict] = []
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
    return statements


def _queue_statements(access: Access) -> list[dict]:
    """The fire queue, the tick queue (the heartbeat's fan-out), and the depths the health
    check reads."""
    statements: list[dict] = []
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
    statements += _tick_statements(access)
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
    return statements


def _tick_statements(access: Access) -> list[dict]:
    """The tick queue of the heartbeat's fan-out."""
    statements: list[dict] = []
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
    return statements


def _payload_statements(access: Access) -> list[dict]:
    """The payload bucket's objects, and the key (webhook secrets, SSE-KMS)."""
    statements: list[dict] = []
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
    return statements


def _parameter_statements(function: str, access: Access, stage: str) -> list[dict]:
    """SSM parameters (the switch, the root key, workflow secrets) and Secrets Manager."""
    statements: list[dict] = []
    param_arns = [_parameter_arn(function, param, stage) for param in access.params]
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
    return statements


def _parameter_arn(function: str, param: str, stage: str) -> dict:
    """An SSM parameter ``ACCESS`` names: ``switch``, ``root_key`` or ``secrets``."""
    if param == "switch":
        return {
            "Fn::Sub": "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}"
            ":parameter${SwitchParameter}"
        }
    if param == "root_key":
        return {
            "Fn::Sub": "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}"
            ":parameter${RootKeyParameterName}"
        }
    if param == "secrets":
        # Workflow secrets are /cronhook/<stage>/<tenant>/[<scope>/]<name>: at least two
        # levels below the stage, so this never matches the root key or the switch
        # (/cronhook/<stage>/<name>, one level).
        return {
            "Fn::Sub": "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}"
            f":parameter/cronhook/{stage}/*/*"
        }
    raise ValueError(f"{function}: unknown parameter {param!r}")


def _source_rule_statements(access: Access, stage: str) -> list[dict]:
    """This stage's EventBridge rules and SES receipt rules (delivered sources)."""
    statements: list[dict] = []
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
    return statements


def _ingest_statements(access: Access) -> list[dict]:
    """The ingest queue, and the inbound mail SES stores."""
    statements: list[dict] = []
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
