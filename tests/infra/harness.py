"""Running the packaged stack "as Lambda" against moto, and checking IAM on what it calls.

- ``MotoProcess``: a moto server in its own process, so the suite's in-process servers
  (and their ``/moto-api/reset``) never touch the deployed stack.
- ``CallRecorder``: every botocore call (boto3 and pynamodb alike go through
  ``BaseClient._make_api_call``) made while acting as a function, with its parameters.
- ``Functions``: invokes the app's real handlers in process with the environment the
  *deployed* function has (read back from moto's Lambda), as a fresh Lambda would:
  caches reset, clients rebuilt, ``AWS_LAMBDA_FUNCTION_NAME`` set (so EMF is emitted).
- ``required_permissions``: maps a recorded call to the IAM (action, resource) pairs AWS
  would check, including the implied ones (SSE-KMS on S3 calls KMS as the caller).
- ``allows``: a small evaluator for the Allow-only policies ``infra/iam.py`` writes.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from tests.ports import free_port

REGION = "us-east-1"
ACCOUNT = "123456789012"
# What moto's CloudFormation cannot create: checked separately (alarms through the
# CloudWatch API; the API Gateway deployment/stage through the handler, in process).
MOTO_UNSUPPORTED = {
    "AWS::CloudWatch::Alarm",
    "AWS::ApiGateway::Account",
    "AWS::S3::BucketPolicy",
    "AWS::CloudFormation::WaitConditionHandle",
    "AWS::SNS::Subscription",
    "AWS::Lambda::EventInvokeConfig",
    # Event sources (infra/sources.py): moto makes no rule set, and keeps no id for policies.
    "AWS::SES::ReceiptRuleSet",
    "AWS::SNS::TopicPolicy",
    "AWS::SQS::QueuePolicy",
    # The optional per-IP limit on /hooks (infra/waf.py): no WAFv2 in moto's CloudFormation.
    "AWS::WAFv2::WebACL",
    "AWS::WAFv2::WebACLAssociation",
}
# moto creates a RestApi without importing its Body, so a Deployment of it has no methods.
MOTO_DROPPED = {"AWS::ApiGateway::Deployment", "AWS::ApiGateway::Stage"}


ROOT = Path(__file__).resolve().parents[2]

# moto's server with DynamoDB's per-item atomicity (``devstack.moto_atomic``), as
# the tests' in-process server and the local stack's embedded AWS run it. Stock moto checks
# a condition and then writes with no lock between: a runner batch's concurrent messages
# could both claim one run, and one's give-back remove the other's claim (seen in CI: an
# event run that succeeded recorded ``lost``). Real DynamoDB never does that.
_ATOMIC_MOTO = (
    "import sys\n"
    "from devstack.moto_atomic import make_dynamodb_atomic\n"
    "make_dynamodb_atomic()\n"
    "from tests.infra.harness import patch_moto_stack_updates\n"
    "patch_moto_stack_updates()\n"
    "from moto.server import main\n"
    "main(sys.argv[1:])\n"
)


def patch_moto_stack_updates() -> None:
    """Two moto bugs in a stack update that CloudFormation does not have.

    * moto has no update for an ``AWS::Logs::LogGroup``: an update that changes one (a new
      ``LogRetentionDays``) leaves the stack's resource as ``None``, and a resource updated
      after it that reads ``Fn::GetAtt [<it>, Arn]`` (a role whose policy changed) fails
      with "references undefined resource". CloudFormation updates the retention in place.
    * moto keeps a ``CommaDelimitedList`` parameter (``AlertTopics``) split after an
      update; the next update's ``UsePreviousValue`` hands it the list, which it splits
      again (a 500). CloudFormation keeps the parameter's string.
    """
    from moto.cloudformation.parsing import ResourceMap
    from moto.logs.models import LogGroup

    def update(
        cls, original_resource, new_resource_name, cloudformation_json, account_id, region_name
    ):  # noqa: E501
        days = cloudformation_json.get("Properties", {}).get("RetentionInDays")
        original_resource.set_retention_policy(int(days) if days else None)
        return original_resource

    LogGroup.update_from_cloudformation_json = classmethod(update)  # type: ignore[method-assign,assignment]
    real_load = ResourceMap.load_parameters

    def load_parameters(self) -> None:
        self.input_parameters = {
            k: ",".join(v) if isinstance(v, list) else v for k, v in self.input_parameters.items()
        }
        real_load(self)

    ResourceMap.load_parameters = load_parameters  # type: ignore[method-assign]


class MotoProcess:
    """moto's server on a private port, its DynamoDB writes atomic per item (``_ATOMIC_MOTO``)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self) -> MotoProcess:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _ATOMIC_MOTO, "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=str(ROOT),
        )
        import requests

        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                requests.get(f"{self.url}/moto-api/", timeout=1)
                return self
            except requests.RequestException:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("moto server did not start")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            self.proc = None


# -- recording calls ---------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    function: str
    service: str
    operation: str
    params: dict


@dataclass
class CallRecorder:
    """Records botocore calls made while ``acting_as`` a function."""

    calls: list[Call] = field(default_factory=list)
    function: str | None = None
    _original: Any = None

    def install(self) -> None:
        from botocore.client import BaseClient

        original = BaseClient._make_api_call
        recorder = self

        def _make_api_call(client: Any, operation_name: str, api_params: dict) -> Any:
            if recorder.function is not None:
                service = client.meta.service_model.service_name
                recorder.calls.append(
                    Call(recorder.function, service, operation_name, dict(api_params))
                )
            return original(client, operation_name, api_params)

        self._original = original
        BaseClient._make_api_call = _make_api_call  # type: ignore[method-assign]

    def uninstall(self) -> None:
        from botocore.client import BaseClient

        if self._original is not None:
            BaseClient._make_api_call = self._original  # type: ignore[method-assign]
            self._original = None

    @contextlib.contextmanager
    def acting_as(self, function: str) -> Iterator[None]:
        previous, self.function = self.function, function
        try:
            yield
        finally:
            self.function = previous


# -- calls -> IAM ------------------------------------------------------------------------

_BATCH_ACTIONS = {
    ("sqs", "SendMessageBatch"): "sqs:SendMessage",
    ("sqs", "DeleteMessageBatch"): "sqs:DeleteMessage",
    ("sqs", "ChangeMessageVisibilityBatch"): "sqs:ChangeMessageVisibility",
    ("s3", "HeadObject"): "s3:GetObject",
    ("s3", "ListObjectsV2"): "s3:ListBucket",
    ("lambda", "Invoke"): "lambda:InvokeFunction",
}
_TRANSACT = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
    "Get": "GetItem",
}


@dataclass
class ArnContext:
    """What is needed to turn call parameters into ARNs."""

    key_arns: dict[str, str]  # key id / alias / arn -> key arn
    bucket_keys: dict[str, str]  # bucket -> default SSE-KMS key arn

    def key_arn(self, key_id: str) -> str:
        return self.key_arns.get(key_id) or key_id


def _table_arn(table: str, index: str | None = None) -> str:
    arn = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{table}"
    return f"{arn}/index/{index}" if index else arn


def _queue_arn(url: str) -> str:
    return f"arn:aws:sqs:{REGION}:{ACCOUNT}:{url.rstrip('/').rsplit('/', 1)[-1]}"


def _param_arn(name: str) -> str:
    if name.startswith("arn:"):
        return name
    return f"arn:aws:ssm:{REGION}:{ACCOUNT}:parameter/{name.lstrip('/')}"


def required_permissions(call: Call, ctx: ArnContext) -> list[tuple[str, str]]:
    """The (action, resource) pairs IAM checks for ``call``; ValueError if unmapped."""
    s, op, p = call.service, call.operation, call.params
    if s == "dynamodb":
        if op in ("BatchGetItem", "BatchWriteItem"):
            return [(f"dynamodb:{op}", _table_arn(t)) for t in p["RequestItems"]]
        if op in ("TransactWriteItems", "TransactGetItems"):
            out = []
            for item in p["TransactItems"]:
                ((kind, body),) = item.items()
                out.append((f"dynamodb:{_TRANSACT[kind]}", _table_arn(body["TableName"])))
            return out
        return [(f"dynamodb:{op}", _table_arn(p["TableName"], p.get("IndexName")))]
    if s == "sqs":
        action = _BATCH_ACTIONS.get((s, op), f"sqs:{op}")
        return [(action, _queue_arn(p["QueueUrl"]))]
    if s == "s3":
        action = _BATCH_ACTIONS.get((s, op), f"s3:{op}")
        if op == "ListObjectsV2":
            return [(action, f"arn:aws:s3:::{p['Bucket']}")]
        out = [(action, f"arn:aws:s3:::{p['Bucket']}/{p['Key']}")]
        # SSE-KMS: S3 calls KMS with the caller's credentials.
        if op == "PutObject":
            key = p.get("SSEKMSKeyId") or ctx.bucket_keys.get(p["Bucket"])
            if key and p.get("ServerSideEncryption", "aws:kms") == "aws:kms":
                out.append(("kms:GenerateDataKey", ctx.key_arn(key)))
        elif op in ("GetObject", "HeadObject") and p["Bucket"] in ctx.bucket_keys:
            out.append(("kms:Decrypt", ctx.key_arn(ctx.bucket_keys[p["Bucket"]])))
        return out
    if s == "kms":
        return [(f"kms:{op}", ctx.key_arn(p["KeyId"]))]
    if s == "ssm":
        if op == "GetParameters":
            return [("ssm:GetParameters", _param_arn(n)) for n in p["Names"]]
        if op == "GetParametersByPath":
            return [("ssm:GetParametersByPath", _param_arn(p["Path"]))]
        return [(f"ssm:{op}", _param_arn(p["Name"]))]
    if s == "secretsmanager":
        secret = p["SecretId"]
        if not secret.startswith("arn:"):
            secret = f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:{secret}-AbCdEf"
        return [(f"secretsmanager:{op}", secret)]
    if s == "lambda":
        name = p["FunctionName"]
        if not name.startswith("arn:"):
            name = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}"
        return [(_BATCH_ACTIONS.get((s, op), f"lambda:{op}"), name)]
    if s == "events":
        # A rule's ARN: rule/<name> on the default bus, rule/<bus>/<name> on another.
        bus = p.get("EventBusName") or "default"
        name = p.get("Name") or p["Rule"]
        path = name if bus == "default" else f"{bus}/{name}"
        return [(f"events:{op}", f"arn:aws:events:{REGION}:{ACCOUNT}:rule/{path}")]
    if s == "ses":
        # SES v1 receipt rules have no resource-level permissions: IAM checks "*".
        return [
            (f"ses:{op}", f"arn:aws:ses:{REGION}:{ACCOUNT}:receipt-rule-set/{p['RuleSetName']}")
        ]
    if s == "logs":
        if op == "StartQuery":
            return [
                ("logs:StartQuery", f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:{group}")
                for group in p["logGroupNames"]
            ]
        if op == "GetQueryResults":  # no resource-level permission: IAM checks "*"
            return [("logs:GetQueryResults", "*")]
    raise ValueError(f"no IAM mapping for {s}:{op}; add one to tests/infra/harness.py")


def _listify(value: Any) -> list:
    return value if isinstance(value, list) else [value]


def _matches(pattern: str, value: str, *, case: bool) -> bool:
    regex = "^" + re.escape(pattern).replace(r"\*", ".*").replace(r"\?", ".") + "$"
    return re.match(regex, value, 0 if case else re.IGNORECASE) is not None


def allows(policy: dict, action: str, resource: str) -> bool:
    """Whether an Allow-only policy grants ``action`` on ``resource``."""
    for statement in _listify(policy.get("Statement", [])):
        if statement.get("Effect") != "Allow" or statement.get("Condition"):
            continue
        actions = _listify(statement.get("Action", []))
        resources = _listify(statement.get("Resource", []))
        if any(_matches(a, action, case=False) for a in actions) and any(
            _matches(r, resource, case=True) for r in resources
        ):
            return True
    return False


# -- invoking the functions ------------------------------------------------------------


class LambdaContext:
    """Just enough of Lambda's context object."""

    def __init__(self, config: dict):
        self.function_name = config["FunctionName"]
        self.function_version = "$LATEST"
        self.invoked_function_arn = config["FunctionArn"]
        self.memory_limit_in_mb = config.get("MemorySize", 128)
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{self.function_name}"
        self.log_stream_name = "test"
        self._deadline = time.monotonic() + config.get("Timeout", 60)

    def get_remaining_time_in_millis(self) -> int:
        return int((self._deadline - time.monotonic()) * 1000)


@contextlib.contextmanager
def environ(values: dict[str, str]) -> Iterator[None]:
    """Exactly ``values`` for every CRONHOOK_/POWERTOOLS_ variable, plus the others given."""
    saved = dict(os.environ)
    for key in list(os.environ):
        if key.startswith(("CRONHOOK_", "POWERTOOLS_", "AWS_LAMBDA_")):
            del os.environ[key]
    os.environ.update(values)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _reset_process_caches() -> None:
    """What a fresh Lambda process would not have: settings, clients, cached secrets."""
    import importlib

    from chalicelib.settings import reset_settings
    from chalicelib.store.aws import reset_clients

    reset_settings()
    reset_clients()
    for module_name, attr, how in (
        ("chalicelib.services.auth", "_root_cache", "clear"),
        ("chalicelib.services.switch", "_cache", "clear"),
        ("chalicelib.store.kms", "clear_cache", "call"),
    ):
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError:
            continue
        target = getattr(module, attr, None)
        if target is None:
            continue
        if how == "call":
            target()
        else:
            target.clear()


class LogCapture(logging.Handler):
    """Every record of the app's logger, formatted by its powertools formatter."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[tuple[str, str]] = []  # (function, line)
        self.function = ""

    def emit(self, record: logging.LogRecord) -> None:
        from chalicelib.observability import logger

        self.lines.append((self.function, logger.registered_formatter.format(record)))


@dataclass
class Functions:
    """The deployed functions, invoked in process with their deployed configuration."""

    endpoint: str
    configs: dict[str, dict]  # function key (api_handler, authorizer, ...) -> configuration
    recorder: CallRecorder
    logs: LogCapture
    api_definition: dict  # the RestApi's OpenAPI body as deployed (routes, authorizer, responses)
    api_id: str = "example"
    stdout: list[tuple[str, str]] = field(default_factory=list)  # (function, printed line)

    def invoke(
        self,
        function: str,
        event: dict,
        *,
        now: datetime | None = None,
        env_extra: dict[str, str] | None = None,
    ) -> Any:
        """``env_extra``: variables set over the deployed ones (a stack parameter changed)."""
        import app as app_module
        from chalicelib import wiring

        config = self.configs[function]
        env = dict(config.get("Environment", {}).get("Variables", {}))
        env.update(env_extra or {})
        env.update(
            {
                "CRONHOOK_AWS_ENDPOINT": self.endpoint,
                "AWS_LAMBDA_FUNCTION_NAME": config["FunctionName"],
                "AWS_REGION": REGION,
                "AWS_DEFAULT_REGION": REGION,
            }
        )
        module_name, attr = config["Handler"].rsplit(".", 1)
        assert module_name == "app", config["Handler"]
        handler = getattr(app_module, attr)
        printed = io.StringIO()
        from chalicelib import assembly

        real_now, real_runner = wiring.now_utc, assembly.build_runner
        with environ(env), self.recorder.acting_as(function), contextlib.redirect_stdout(printed):
            _reset_process_caches()
            self.logs.function = function
            if now is not None:
                wiring.now_utc = lambda: now  # type: ignore[assignment]
                # The runner reads its own clock (a scheduled fire waits for its slot,
                # ``runner.timing.fire_at_of``): it sees the moved one too.
                assembly.build_runner = lambda **kw: real_runner(  # type: ignore[assignment]
                    **{"clock": lambda: now, "sleep": lambda _s: None, **kw}
                )
            try:
                return handler(event, LambdaContext(config))
            finally:
                wiring.now_utc = real_now  # type: ignore[assignment]
                assembly.build_runner = real_runner  # type: ignore[assignment]
                self.logs.function = ""
                self.stdout.extend((function, line) for line in printed.getvalue().splitlines())

    # -- events ----------------------------------------------------------------------

    def api(
        self, method: str, path: str, *, body: Any = None, headers: dict | None = None
    ) -> tuple[int, Any]:
        """One request as API Gateway handles it with the deployed definition; (status, body).

        An unknown route gets the definition's gateway response; a route with a security
        requirement runs the deployed authorizer function first (TOKEN: the Authorization
        header), answers its refusal with the gateway response, and hands its context to
        the API handler as ``requestContext.authorizer``.
        """
        import app as app_module

        parsed = urlparse(path)
        try:
            resource, params = _match_route(app_module.app.routes, parsed.path)
            operation = self.api_definition["paths"][resource][method.lower()]
        except (LookupError, KeyError):
            return self.gateway_response("MISSING_AUTHENTICATION_TOKEN")
        raw = body if isinstance(body, bytes | str) or body is None else json.dumps(body)
        if isinstance(raw, bytes):
            raw = raw.decode()
        all_headers = {"host": "example.execute-api.us-east-1.amazonaws.com"}
        if raw is not None and not (headers or {}).get("content-type"):
            all_headers["content-type"] = "application/json"
        all_headers.update({k.lower(): v for k, v in (headers or {}).items()})
        query = dict(q.split("=", 1) for q in parsed.query.split("&") if "=" in q) or None
        request_context: dict[str, Any] = {
            "resourcePath": resource,
            "httpMethod": method,
            "path": "/api" + parsed.path,
            "stage": "api",
            "requestId": str(uuid.uuid4()),
            "domainName": all_headers["host"],
            "identity": {"sourceIp": "203.0.113.7"},
        }
        if operation.get("security"):
            refused, context = self._authorize(operation, method, parsed.path, all_headers)
            if refused:
                return self.gateway_response(refused)
            request_context["authorizer"] = context
        event = {
            "resource": resource,
            "path": parsed.path,
            "httpMethod": method,
            "headers": all_headers,
            "multiValueHeaders": {k: [v] for k, v in all_headers.items()},
            "queryStringParameters": query,
            "multiValueQueryStringParameters": {k: [v] for k, v in query.items()}
            if query
            else None,
            "pathParameters": params or None,
            "stageVariables": None,
            "requestContext": request_context,
            "body": raw,
            "isBase64Encoded": False,
        }
        answer = self.invoke("api_handler", event)
        text = answer.get("body") or ""
        try:
            return answer["statusCode"], json.loads(text) if text else None
        except ValueError:
            return answer["statusCode"], text

    def _authorize(
        self, operation: dict, method: str, path: str, headers: dict
    ) -> tuple[str | None, dict]:
        """(gateway response type if refused, the authorizer's context)."""
        ((name, _),) = operation["security"][0].items()
        scheme = self.api_definition["securityDefinitions"][name]
        config = scheme["x-amazon-apigateway-authorizer"]
        assert config["type"] == "token" and scheme["name"] == "Authorization", scheme
        # Cached results would let a revoked key work until the TTL ends.
        assert config["authorizerResultTtlInSeconds"] == 0, config
        token = headers.get("authorization")
        if not token:
            return "UNAUTHORIZED", {}  # the identity source is missing: no invocation
        method_arn = f"arn:aws:execute-api:{REGION}:{ACCOUNT}:{self.api_id}/api/{method}{path}"
        event = {"type": "TOKEN", "authorizationToken": token, "methodArn": method_arn}
        try:
            policy = self.invoke("authorizer", event)
        except Exception as exc:  # what Lambda reports to API Gateway as the error message
            return ("UNAUTHORIZED" if str(exc) == "Unauthorized" else "AUTHORIZER_FAILURE"), {}
        allowed = [
            resource
            for statement in policy["policyDocument"]["Statement"]
            if statement["Effect"] == "Allow"
            for resource in _listify(statement["Resource"])
        ]
        if not any(_matches(pattern, method_arn, case=True) for pattern in allowed):
            return "ACCESS_DENIED", {}
        return None, {**policy.get("context", {}), "principalId": policy["principalId"]}

    def gateway_response(self, response_type: str) -> tuple[int, Any]:
        """What the deployed definition makes API Gateway answer for ``response_type``."""
        defaults = {"MISSING_AUTHENTICATION_TOKEN": 403, "UNAUTHORIZED": 401}
        responses = self.api_definition.get("x-amazon-apigateway-gateway-responses", {})
        entry = responses.get(response_type)
        if entry is None:
            return defaults.get(response_type, 500), {"message": response_type}
        template = entry["responseTemplates"]["application/json"]
        body = template.replace("$context.error.messageString", json.dumps(response_type))
        return int(entry.get("statusCode", defaults.get(response_type, 500))), json.loads(body)

    def heartbeat(self, *, now: datetime, env_extra: dict[str, str] | None = None) -> Any:
        event = {
            "version": "0",
            "id": str(uuid.uuid4()),
            "detail-type": "Scheduled Event",
            "source": "aws.events",
            "account": ACCOUNT,
            "time": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "region": REGION,
            "resources": [f"arn:aws:events:{REGION}:{ACCOUNT}:rule/heartbeat"],
            "detail": {},
        }
        return self.invoke("heartbeat", event, now=now, env_extra=env_extra)

    def drain_queue(
        self,
        queue_url: str,
        *,
        rounds: int = 20,
        function: str = "runner",
        now: datetime | None = None,
        env_extra: dict[str, str] | None = None,
    ) -> list[dict]:
        """Poll like Lambda's SQS poller (with the function's role): batches of 10 to it."""
        from chalicelib.store.aws import client

        answers = []
        queue_arn = _queue_arn(queue_url)
        with environ({"CRONHOOK_AWS_ENDPOINT": self.endpoint}), self.recorder.acting_as(function):
            from chalicelib.settings import reset_settings
            from chalicelib.store.aws import reset_clients

            reset_settings()
            reset_clients()
            sqs = client("sqs")
            for _ in range(rounds):
                got = sqs.receive_message(
                    QueueUrl=queue_url, MaxNumberOfMessages=10, AttributeNames=["All"]
                ).get("Messages", [])
                if not got:
                    break
                records = [
                    {
                        "messageId": m["MessageId"],
                        "receiptHandle": m["ReceiptHandle"],
                        "body": m["Body"],
                        "attributes": m.get("Attributes", {}),
                        "messageAttributes": {},
                        "md5OfBody": m["MD5OfBody"],
                        "eventSource": "aws:sqs",
                        "eventSourceARN": queue_arn,
                        "awsRegion": REGION,
                    }
                    for m in got
                ]
                answer = self.invoke(function, {"Records": records}, now=now, env_extra=env_extra)
                answers.append(answer)
                failed = {f["itemIdentifier"] for f in (answer or {}).get("batchItemFailures", [])}
                done = [m for m in got if m["MessageId"] not in failed]
                if done:
                    sqs.delete_message_batch(
                        QueueUrl=queue_url,
                        Entries=[
                            {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                            for i, m in enumerate(done)
                        ],
                    )
        return answers


def _match_route(routes: dict, path: str) -> tuple[str, dict]:
    for resource in routes:
        names = re.findall(r"{(\w+)}", resource)
        regex = "^" + re.sub(r"{\w+}", "([^/]+)", resource) + "$"
        match = re.match(regex, path)
        if match:
            return resource, {n: unquote(v) for n, v in zip(names, match.groups(), strict=True)}
    raise LookupError(f"no route for {path}")


class Resolver:
    """CloudFormation intrinsics against a deployed stack, for what moto leaves out.

    moto's change sets drop a stack's Outputs and its CloudFormation skips alarms, so the
    tests resolve those sections themselves: ``Ref``, ``Fn::GetAtt`` (the attributes the
    template uses), ``Fn::Sub``, ``Fn::If``/conditions, ``Fn::Join``.
    """

    def __init__(self, template: dict, physical: dict[str, str], client: Any, stack: str):
        self.template = template
        self.physical = physical
        self.client = client
        self.params = {
            k: str(v.get("Default", "")) for k, v in template.get("Parameters", {}).items()
        }
        self.pseudo = {
            "AWS::Region": REGION,
            "AWS::AccountId": ACCOUNT,
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackName": stack,
            "AWS::NoValue": None,
        }

    def condition(self, name: str) -> bool:
        return bool(self.resolve(self.template["Conditions"][name]))

    def ref(self, name: str) -> Any:
        if name in self.pseudo:
            return self.pseudo[name]
        if name in self.params:
            return self.params[name]
        return self.physical[name]

    def get_att(self, name: str, attribute: str) -> str:
        kind = self.template["Resources"][name]["Type"]
        physical = self.physical[name]
        if kind == "AWS::SQS::Queue":
            attrs = self.client("sqs").get_queue_attributes(
                QueueUrl=physical, AttributeNames=["QueueArn"]
            )["Attributes"]
            return {"Arn": attrs["QueueArn"], "QueueName": physical.rsplit("/", 1)[-1]}[attribute]
        if kind == "AWS::KMS::Key" and attribute == "Arn":
            return self.client("kms").describe_key(KeyId=physical)["KeyMetadata"]["Arn"]
        if kind == "AWS::S3::Bucket" and attribute == "Arn":
            return f"arn:aws:s3:::{physical}"
        if kind == "AWS::DynamoDB::Table" and attribute == "Arn":
            return _table_arn(physical)
        if kind == "AWS::Logs::LogGroup" and attribute == "Arn":
            return f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:{physical}:*"
        if kind == "AWS::Lambda::Function" and attribute == "Arn":
            return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{physical}"
        raise ValueError(f"no GetAtt {name}.{attribute} ({kind}) in the test resolver")

    def resolve(self, node: Any) -> Any:
        if isinstance(node, list):
            return [self.resolve(v) for v in node]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            ((key, value),) = node.items()
            if key == "Ref":
                return self.ref(value)
            if key == "Fn::GetAtt":
                name, attribute = value if isinstance(value, list) else value.split(".", 1)
                return self.get_att(name, attribute)
            if key == "Fn::Sub":
                text, extra = (value, {}) if isinstance(value, str) else value
                extra = {k: self.resolve(v) for k, v in extra.items()}

                def fill(match: re.Match) -> str:
                    name = match.group(1)
                    if name in extra:
                        return str(extra[name])
                    if "." in name and not name.startswith("AWS::"):
                        return self.get_att(*name.split(".", 1))
                    return str(self.ref(name))

                return re.sub(r"\${([^}!]+)}", fill, text)
            if key == "Fn::If":
                name, yes, no = value
                return self.resolve(yes if self.condition(name) else no)
            if key == "Fn::Equals":
                left, right = self.resolve(value)
                return left == right
            if key == "Fn::Not":
                return not self.resolve(value[0])
            if key == "Fn::Join":
                sep, parts = value
                return sep.join(str(p) for p in self.resolve(parts))
            if key == "Condition":
                return self.condition(value)
        return {k: self.resolve(v) for k, v in node.items()}


def utc_now() -> datetime:
    """The real clock, read once by the scenario (the functions read it themselves)."""
    return datetime.now(UTC)


def later(at: datetime, seconds: float) -> datetime:
    return at + timedelta(seconds=seconds)
