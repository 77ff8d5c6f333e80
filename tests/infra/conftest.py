"""Session fixtures: package once, deploy once into moto, run one scenario through it.

``chalice package`` builds a deployment zip with pip (about 20 s), so it runs once per
session: exactly ``make package`` (``python -m infra.package``), into a temporary dir.
The packaged template is then deployed into a moto server of its own by
``infra/deploy.py`` (the ``make deploy`` code, with the SAM transform expanded locally),
and a scenario drives the app's real handlers with the deployed functions'
configuration. The tests read what that scenario produced.
"""

from __future__ import annotations

import ast
import hashlib
import hmac
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.infra.harness import (
    MOTO_DROPPED,
    ArnContext,
    CallRecorder,
    Functions,
    LogCapture,
    MotoProcess,
    Resolver,
    later,
    utc_now,
)

PROJECT_DIR = Path(__file__).resolve().parents[2]
STAGE = "dev"


@dataclass
class Packaged:
    dir: Path
    template: dict
    merge_template: dict
    report: dict
    output: str


@pytest.fixture(scope="package")
def packaged(tmp_path_factory: pytest.TempPathFactory) -> Packaged:
    """``make package STAGE=dev`` into a temporary dir (cfn-lint included: it fails on errors)."""
    out = tmp_path_factory.mktemp("build") / STAGE
    env = {**os.environ, "AWS_DEFAULT_REGION": "us-east-1"}
    answer = subprocess.run(
        [sys.executable, "-m", "infra.package", "--stage", STAGE, "--out", str(out)]
        + ["--measure-runs", "1"],
        cwd=PROJECT_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if answer.returncode != 0:
        pytest.fail(f"make package failed:\n{answer.stdout}\n{answer.stderr}")
    return Packaged(
        dir=out,
        template=json.loads((out / "sam.json").read_text()),
        merge_template=json.loads((out / "merge-template.json").read_text()),
        report=json.loads((out / "package-report.json").read_text()),
        output=answer.stdout,
    )


@dataclass
class Deployed:
    endpoint: str
    stack_name: str
    outputs: dict[str, str]
    expanded: dict  # the template as deployed (SAM expanded)
    physical: dict[str, str]  # logical id -> physical id
    mapping: dict  # the runner's event source mapping, as created
    functions: Functions
    recorder: CallRecorder
    root_key: str
    policies: dict[str, dict]  # function key -> its role's inline policy document
    arn_context: ArnContext
    resolver: Resolver
    boto: Any  # session factory for direct (unrecorded) checks

    def client(self, name: str) -> Any:
        return self.boto.client(name, region_name="us-east-1", endpoint_url=self.endpoint)


def _policy_document(document: Any) -> dict:
    if isinstance(document, dict):
        return document
    try:
        return json.loads(document)
    except ValueError:
        # moto keeps a policy that CloudFormation gave it as a dict as its Python repr.
        return ast.literal_eval(document)


def _api_definition(expanded: dict) -> dict:
    """The RestApi's OpenAPI body as deployed (after the SAM transform)."""
    (api,) = [r for r in expanded["Resources"].values() if r["Type"] == "AWS::ApiGateway::RestApi"]
    return api["Properties"]["Body"]


def adapt_for_moto(expanded: dict, keep: dict) -> dict:
    keep["expanded"] = json.loads(json.dumps(expanded))
    resources = {}
    for logical, resource in expanded["Resources"].items():
        if resource["Type"] in MOTO_DROPPED:
            continue
        if resource["Type"] == "AWS::KMS::Key":
            # moto keeps a key policy given as an object unparsed and then fails on it.
            resource = json.loads(json.dumps(resource))
            resource["Properties"]["KeyPolicy"] = json.dumps(resource["Properties"]["KeyPolicy"])
        resources[logical] = resource
    return {**expanded, "Resources": resources}


@pytest.fixture(scope="package")
def deployed(packaged: Packaged) -> Iterator[Deployed]:
    """The packaged template deployed into its own moto server by ``infra/deploy.py``."""
    import boto3

    from infra.deploy import DeployOptions, deploy
    from infra.iam import FUNCTIONS
    from infra.template import StageConfig

    moto = MotoProcess().start()
    recorder = CallRecorder()
    logs = LogCapture()
    try:
        kept: dict = {}
        deploy(
            DeployOptions(
                stage=STAGE,
                region="us-east-1",
                endpoint_url=moto.url,
                expand_sam=True,
                adapt=lambda t: adapt_for_moto(t, kept),
                create_root_key=True,
                build_dir=packaged.dir,
                poll_s=0.05,
            )
        )
        session = boto3.session.Session(region_name="us-east-1")

        def client(name: str) -> Any:
            return session.client(name, region_name="us-east-1", endpoint_url=moto.url)

        stack_name = f"cronhook-{STAGE}"
        physical = {
            r["LogicalResourceId"]: r.get("PhysicalResourceId", "")
            for r in client("cloudformation").list_stack_resources(StackName=stack_name)[
                "StackResourceSummaries"
            ]
        }
        lam = client("lambda")
        cfg = StageConfig.load(STAGE)
        configs = {
            f: lam.get_function_configuration(FunctionName=cfg.function_name(f)) for f in FUNCTIONS
        }
        mappings = lam.list_event_source_mappings(FunctionName=cfg.function_name("runner"))
        (mapping,) = mappings["EventSourceMappings"]
        # Our harness is the runner's poller: moto's would try to run the code in Docker.
        lam.update_event_source_mapping(UUID=mapping["UUID"], Enabled=False)
        # And the enqueuer's (the tick queue, with fan-out on: scenario step 7).
        for tick_mapping in lam.list_event_source_mappings(
            FunctionName=cfg.function_name("enqueuer")
        )["EventSourceMappings"]:
            lam.update_event_source_mapping(UUID=tick_mapping["UUID"], Enabled=False)
        # And the alerts function's (each heartbeat tick asks it for a sweep).
        for alerts_mapping in lam.list_event_source_mappings(
            FunctionName=cfg.function_name("alerts")
        )["EventSourceMappings"]:
            lam.update_event_source_mapping(UUID=alerts_mapping["UUID"], Enabled=False)
        iam = client("iam")
        policies = {}
        for function, logical in FUNCTIONS.items():
            role_name = configs[function]["Role"].rsplit("/", 1)[-1]
            (policy_name,) = iam.list_role_policies(RoleName=role_name)["PolicyNames"]
            document = iam.get_role_policy(RoleName=role_name, PolicyName=policy_name)[
                "PolicyDocument"
            ]
            policies[function] = _policy_document(document)
            assert logical  # every function of the app has a role of its own
        kms = client("kms")
        key_arn = kms.describe_key(KeyId=physical["SecretsKey"])["KeyMetadata"]["Arn"]
        key_id = key_arn.rsplit("/", 1)[-1]
        arn_context = ArnContext(
            key_arns={key_id: key_arn, key_arn: key_arn, f"alias/cronhook-{STAGE}": key_arn},
            bucket_keys={physical["PayloadBucket"]: key_arn},
        )
        # moto's change sets drop the stack's Outputs: resolve them from the template.
        resolver = Resolver(kept["expanded"], physical, client, stack_name)
        outputs = {k: resolver.resolve(v["Value"]) for k, v in kept["expanded"]["Outputs"].items()}
        root_key = client("ssm").get_parameter(
            Name=outputs["RootKeyParameterName"],
            WithDecryption=True,
        )["Parameter"]["Value"]
        from chalicelib.observability import logger

        logger._logger.addHandler(logs)
        recorder.install()
        yield Deployed(
            endpoint=moto.url,
            stack_name=stack_name,
            outputs=outputs,
            expanded=kept["expanded"],
            physical=physical,
            mapping=mapping,
            functions=Functions(
                moto.url,
                configs,
                recorder,
                logs,
                api_definition=_api_definition(kept["expanded"]),
                api_id=physical["RestAPI"],
            ),
            recorder=recorder,
            root_key=root_key,
            policies=policies,
            arn_context=arn_context,
            resolver=resolver,
            boto=session,
        )
    finally:
        recorder.uninstall()
        from chalicelib.observability import logger

        if logs in logger._logger.handlers:
            logger._logger.removeHandler(logs)
        moto.stop()
        from chalicelib.settings import reset_settings
        from chalicelib.store.aws import reset_clients

        reset_settings()
        reset_clients()


@dataclass
class Scenario:
    """What one pass through the deployed stack did and saw."""

    answers: dict[str, tuple[int, Any]] = field(default_factory=dict)
    runs: list[dict] = field(default_factory=list)
    secrets: list[str] = field(default_factory=list)
    trigger_ids: list[str] = field(default_factory=list)
    batch_answers: list[dict] = field(default_factory=list)
    log_lines: list[tuple[str, str]] = field(default_factory=list)  # (function, JSON line)
    stdout: list[tuple[str, str]] = field(default_factory=list)  # (function, EMF line)
    cfn_answers: list[dict] = field(default_factory=list)  # TriggerProvider's responses


# A deployed stage has no built-in workflows (CRONHOOK_BUILTIN_WORKFLOWS is off there): the
# scenario's workflow is registered the way a deployment registers its own.
WORKFLOW = "deploy-check"


def _register_workflow() -> None:
    from chalicelib.workflows import workflow
    from chalicelib.workflows.builtin import echo

    workflow(WORKFLOW)(echo)


def _sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@pytest.fixture(scope="package")
def scenario(deployed: Deployed) -> Scenario:
    """Everything a deployment does, through the deployed functions' handlers.

    1. The API creates an interval trigger with a budget; a manual fire runs.
    2. The heartbeat ("two minutes later": its clock, and the runner's when it drains the
       slots, are the one thing moved; the functions otherwise read the real clock) claims
       the first slot; the runner runs it.
    3. The next slot's message is lost before any runner claimed it (the queue purged): a
       heartbeat after that sends it again as overdue and it runs late; nothing is lost.
    4. An operator key creates a trigger and fires it (the runner re-checks the creator);
       requests without a key, with a bad one, with a revoked one, to an unknown route.
    5. Two webhooks arrive back to back, one over the inline limit (S3): the second waits
       for the first (concurrency 1) and the runner dispatches it.
    6. Delivered sources: an eventbridge trigger (the API makes its rule) gets two events
       on its bus, one over the inline limit; an email trigger (the API makes its SES
       receipt rule) gets a message SES stored and announced on the mail topic; the
       ingest function drains the ingest queue and the runner runs them. Deleting the
       eventbridge trigger removes its rule.
    8. CloudFormation: a stack's ``Custom::CronhookTrigger`` requests (Create of an
       interval trigger and of a webhook trigger, an Update of one, a Delete of both) go
       through the deployed TriggerProvider function, which answers each to a pre-signed
       URL stand-in.
    9. A run's log lines (``GET /v1/runs/{id}/logs``): the API starts a Logs Insights query
       on the runner's and its own log groups and reads its results.
    7. (Run right after step 3.) Fan-out on (``FanOutShards`` 1, over the deployed variables): the heartbeat
       sends one tick message per due shard; the enqueuer function reads each shard and
       sends the interval trigger's slot due then, which the runner runs.
    """
    _register_workflow()
    fn = deployed.functions
    queue_url = deployed.outputs["FiresQueueUrl"]
    result = Scenario(secrets=[deployed.root_key])
    auth = {"authorization": f"Bearer {deployed.root_key}"}
    lease_s = 60 + int(deployed.functions.configs["runner"]["Timeout"]) + 60
    first_line, first_print = len(fn.logs.lines), len(fn.stdout)

    def call(name: str, method: str, path: str, **kwargs: Any) -> Any:
        headers = {**auth, **kwargs.pop("headers", {})}
        status, body = fn.api(method, path, headers=headers, **kwargs)
        result.answers[name] = (status, body)
        return status, body

    def drain(now: datetime | None = None) -> None:
        # A scheduled fire starts no earlier than its slot (the runner postpones an early
        # message): the runner reads the heartbeat's moved clock when it drains its slots.
        result.batch_answers.extend(fn.drain_queue(queue_url, now=now))

    assert fn.api("GET", "/healthz")[0] == 200

    # 1.
    status, created = call(
        "create_interval",
        "POST",
        "/v1/triggers",
        body={
            "workflow": WORKFLOW,
            "title": "deploy check",
            "schedule": {"interval_s": 60},
            "limits": {"max_usd": 5.0, "budget_period": "month"},
        },
    )
    assert status == 201, created
    interval_id = created["id"]
    result.trigger_ids.append(interval_id)
    call("list", "GET", "/v1/triggers")
    call("get", "GET", f"/v1/triggers/{interval_id}")
    status, fired = call("fire", "POST", f"/v1/triggers/{interval_id}/fire")
    assert status == 202, fired
    drain()

    # 2.
    start = utc_now()
    fn.heartbeat(now=later(start, 120))  # Chalice drops a scheduled handler's return value
    drain(now=later(start, 120))

    # 3.
    fn.heartbeat(now=later(start, 180))
    deployed.client("sqs").purge_queue(QueueUrl=queue_url)  # the runner "crashed"
    fn.heartbeat(now=later(start, 180 + lease_s + 60))
    drain(now=later(start, 180 + lease_s + 60))

    # 7.
    fanned_at = later(start, 180 + lease_s + 180)
    fn.heartbeat(now=fanned_at, env_extra={"CRONHOOK_FANOUT_SHARDS": "1"})
    # A lookahead of 0: the enqueuer sends only the slot due now (the one after it would
    # wait out its DelaySeconds in moto's real time, after the scenario's last drain).
    result.batch_answers.extend(
        fn.drain_queue(
            deployed.outputs["TickQueueUrl"],
            function="enqueuer",
            now=fanned_at,
            env_extra={"CRONHOOK_LOOKAHEAD_S": "0"},
        )
    )
    drain(now=fanned_at)

    # 4.
    status, key = call("create_key", "POST", "/v1/keys", body={"role": "operator"})
    assert status == 201, key
    result.secrets.append(key["key"])
    operator = {"authorization": f"Bearer {key['key']}"}
    status, mine = fn.api(
        "POST",
        "/v1/triggers",
        body={
            "workflow": WORKFLOW,
            "title": "made by an operator",
            "schedule": {"interval_s": 3600},
        },
        headers=operator,
    )
    assert status == 201, mine
    result.trigger_ids.append(mine["id"])
    assert fn.api("POST", f"/v1/triggers/{mine['id']}/fire", headers=operator)[0] == 202
    drain()
    # API Gateway's own answers: no key, a bad key, a revoked key, an unknown route.
    result.answers["no_key"] = fn.api("GET", "/v1/triggers")
    bad_key = "chk_key_nope_" + "x" * 43
    result.secrets.append(bad_key)
    result.answers["bad_key"] = fn.api(
        "GET", "/v1/triggers", headers={"authorization": f"Bearer {bad_key}"}
    )
    status, viewer = call("viewer_key", "POST", "/v1/keys", body={"role": "viewer"})
    assert status == 201, viewer
    result.secrets.append(viewer["key"])
    viewer_auth = {"authorization": f"Bearer {viewer['key']}"}
    assert fn.api("GET", "/v1/triggers", headers=viewer_auth)[0] == 200
    assert call("revoke", "DELETE", f"/v1/keys/{viewer['id']}")[0] == 204
    result.answers["revoked_key"] = fn.api("GET", "/v1/triggers", headers=viewer_auth)
    result.answers["unknown_route"] = fn.api("GET", "/v1/nothing-here", headers=auth)

    # 5.
    status, hook = call(
        "create_webhook",
        "POST",
        "/v1/triggers",
        body={"workflow": WORKFLOW, "title": "deploy webhook", "event": {"source": "webhook"}},
    )
    assert status == 201, hook
    result.trigger_ids.append(hook["id"])
    secret = hook["webhook"]["secret"]
    result.secrets.append(secret)
    url = hook["webhook"]["url"]
    assert url.startswith(deployed.outputs["WebhookBaseUrl"] + "/hooks/"), url
    token_path = url[url.index("/hooks/") :]
    small = json.dumps({"hello": "world"}).encode()
    large = json.dumps({"blob": "x" * 150_000}).encode()  # over the inline limit: S3
    for name, body in (("webhook_small", small), ("webhook_large", large)):
        status, answer = fn.api(
            "POST",
            token_path,
            body=body,
            headers={
                "x-signature-256": _sign(secret, body),
                "idempotency-key": f"{name}-{time.time_ns()}",
            },
        )
        result.answers[name] = (status, answer)
        assert status == 202, (name, status, answer)
    drain()

    # 6.
    aws = deployed.client
    aws("events").create_event_bus(Name="orders")
    status, bridge = call(
        "create_eventbridge",
        "POST",
        "/v1/triggers",
        body={
            "workflow": WORKFLOW,
            "event": {"source": "eventbridge", "bus": "orders", "pattern": {"source": ["shop"]}},
        },
    )
    assert status == 201, bridge
    result.trigger_ids.append(bridge["id"])
    # moto's CloudFormation does not make AWS::SES::ReceiptRuleSet; the template declares it.
    rule_set = deployed.outputs["ReceiptRuleSetName"]
    aws("ses").create_receipt_rule_set(RuleSetName=rule_set)
    status, mail = call(
        "create_email",
        "POST",
        "/v1/triggers",
        body={"workflow": WORKFLOW, "event": {"source": "email", "address": "ops@example.com"}},
    )
    assert status == 201, mail
    result.trigger_ids.append(mail["id"])
    for detail in ({"order": 1}, {"order": 2, "blob": "x" * 150_000}):
        aws("events").put_events(
            Entries=[
                {
                    "EventBusName": "orders",
                    "Source": "shop",
                    "DetailType": "OrderPlaced",
                    "Detail": json.dumps(detail),
                }
            ]
        )
    mail_bucket = deployed.outputs["MailBucketName"]
    key = f"inbound/{mail['id']}/ses-message-1"
    raw = b"From: a@example.com\r\nTo: ops@example.com\r\nSubject: hi\r\nMessage-ID: <m1@example.com>\r\n\r\nhello\r\n"
    aws("s3").put_object(Bucket=mail_bucket, Key=key, Body=raw)
    notification = {
        "notificationType": "Received",
        "mail": {
            "messageId": "ses-message-1",
            "source": "a@example.com",
            "destination": ["ops@example.com"],
        },
        "receipt": {
            "recipients": ["ops@example.com"],
            "action": {
                "type": "S3",
                "topicArn": deployed.outputs["MailTopicArn"],
                "bucketName": mail_bucket,
                "objectKeyPrefix": f"inbound/{mail['id']}/",
                "objectKey": key,
            },
        },
    }
    # Nor AWS::SNS::Subscription (MailTopicToIngest): subscribe the queue as it would.
    ingest_arn = deployed.client("sqs").get_queue_attributes(
        QueueUrl=deployed.outputs["IngestQueueUrl"], AttributeNames=["QueueArn"]
    )["Attributes"]["QueueArn"]
    aws("sns").subscribe(
        TopicArn=deployed.outputs["MailTopicArn"], Protocol="sqs", Endpoint=ingest_arn
    )
    aws("sns").publish(TopicArn=deployed.outputs["MailTopicArn"], Message=json.dumps(notification))
    result.batch_answers.extend(
        fn.drain_queue(deployed.outputs["IngestQueueUrl"], function="ingest")
    )
    drain()

    for trigger_id in result.trigger_ids:
        status, runs = call(f"runs_{trigger_id}", "GET", f"/v1/triggers/{trigger_id}/runs")
        assert status == 200, runs
        result.runs += runs["items"]
    status, health = call("health", "GET", "/v1/health")
    assert status == 200 and health["queue_depth"] is not None, health
    # 9.
    status, logs = call("run_logs", "GET", f"/v1/runs/{result.runs[0]['id']}/logs")
    assert status == 200, logs
    assert call("delete_eventbridge", "DELETE", f"/v1/triggers/{bridge['id']}")[0] == 204
    call("disable", "POST", f"/v1/triggers/{interval_id}/disable")
    status, _ = call("delete", "DELETE", f"/v1/triggers/{interval_id}")
    assert status == 204
    # 8.
    result.cfn_answers = _custom_resource_steps(fn)
    result.log_lines = [(f, line) for f, line in fn.logs.lines[first_line:] if f]
    result.stdout = list(fn.stdout[first_print:])
    return result


def _custom_resource_steps(fn: Functions) -> list[dict]:
    """Scenario step 8: CloudFormation's requests to the TriggerProvider; its answers."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    answers: list[dict] = []

    class ResponseUrl(BaseHTTPRequestHandler):
        def do_PUT(self) -> None:  # noqa: N802 (http.server's name)
            answers.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), ResponseUrl)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    stack = "arn:aws:cloudformation:us-east-1:123456789012:stack/workflows/1f2e3d4c"

    def send(kind: str, properties: dict, **extra: Any) -> dict:
        request_id = f"cfn-{len(answers) + 1}"
        event = {
            "RequestType": kind,
            "ResponseURL": f"http://127.0.0.1:{server.server_address[1]}/{request_id}",
            "StackId": stack,
            "RequestId": request_id,
            "ResourceType": "Custom::CronhookTrigger",
            "LogicalResourceId": "Trigger",
            "ResourceProperties": {"ServiceToken": "token", **properties},
            **extra,
        }
        fn.invoke("trigger_provider", event)
        assert answers and answers[-1]["RequestId"] == request_id, answers
        return answers[-1]

    try:
        every = {"Key": "cfn-every-minute", "workflow": WORKFLOW, "schedule": {"interval_s": "60"}}
        hook = {"Key": "cfn-hook", "workflow": WORKFLOW, "event": {"source": "webhook"}}
        for properties in (every, hook):
            assert send("Create", properties)["Status"] == "SUCCESS", answers
        changed = {**every, "title": "changed by the stack"}
        updated = send(
            "Update", changed, PhysicalResourceId=every["Key"], OldResourceProperties=every
        )
        assert updated["Status"] == "SUCCESS", updated
        for properties in (changed, hook):
            deleted = send("Delete", properties, PhysicalResourceId=properties["Key"])
            assert deleted["Status"] == "SUCCESS", deleted
    finally:
        server.shutdown()
        server.server_close()
    return answers
