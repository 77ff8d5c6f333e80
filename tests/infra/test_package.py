"""``make package``: one lint-clean SAM template with everything the issue lists."""

from __future__ import annotations

import ast
import json
import re
import zipfile
from pathlib import Path

import pytest

from chalicelib.settings import RUNNER_MAX_CONCURRENCY, Settings
from infra.iam import FUNCTIONS, role_logical_id
from infra.template import MAX_RECEIVE_COUNT, PROTECTED_STAGES, merge_template

PROJECT_DIR = Path(__file__).resolve().parents[2]
MIB = 1024 * 1024


def _resources(template: dict, kind: str) -> dict[str, dict]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


def _functions(template: dict) -> dict[str, dict]:
    return _resources(template, "AWS::Serverless::Function")


def test_make_package_writes_one_sam_template_that_cfn_lint_passes(packaged):
    assert packaged.template["Transform"] == "AWS::Serverless-2016-10-31"
    assert "cfn-lint: 0 errors, 0 warnings" in packaged.output
    assert packaged.report["lint_warnings"] == 0
    # One template holds the app and everything it needs: nothing deployed by hand but
    # the root key (CloudFormation cannot make a SecureString).
    kinds = {r["Type"] for r in packaged.template["Resources"].values()}
    for kind in (
        "AWS::DynamoDB::Table",
        "AWS::SQS::Queue",
        "AWS::S3::Bucket",
        "AWS::KMS::Key",
        "AWS::SSM::Parameter",
        "AWS::IAM::Role",
        "AWS::CloudWatch::Alarm",
        "AWS::CloudWatch::Dashboard",
        "AWS::SNS::Topic",
        "AWS::Serverless::Api",
        "AWS::Serverless::Function",
    ):
        assert kind in kinds, kind


def test_the_bundle_leaves_boto3_and_botocore_to_the_lambda_runtime(packaged):
    with zipfile.ZipFile(packaged.dir / "deployment.zip") as z:
        tops = {name.split("/", 1)[0] for name in z.namelist()}
        unzipped = sum(i.file_size for i in z.infolist())
    assert not {t for t in tops if t.split("-")[0] in ("boto3", "botocore", "s3transfer")}
    assert {"app.py", "chalicelib", "pynamodb", "aws_lambda_powertools", "chalice"} <= tops
    zipped = (packaged.dir / "deployment.zip").stat().st_size
    # Lambda's limits are 50 MiB zipped (direct upload) and 250 MiB unzipped.
    assert zipped < 15 * MIB, zipped
    assert unzipped < 60 * MIB, unzipped
    # `import app` worked from the unzipped bundle (with the runtime's boto3 only).
    assert packaged.report["import_app_s"] > 0


def test_runner_mapping_reports_partial_failures_within_the_job_ceiling(packaged):
    runner = _functions(packaged.template)["Runner"]["Properties"]
    source = runner["Events"]["RunnerSqsEventSource"]
    assert source["Type"] == "SQS"
    props = source["Properties"]
    assert props["Queue"] == {"Fn::Sub": "${FiresQueue.Arn}"}
    assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert props["ScalingConfig"]["MaximumConcurrency"] == RUNNER_MAX_CONCURRENCY
    # Reserved concurrency below the ceiling would let the poller throttle fires into the DLQ.
    assert runner["ReservedConcurrentExecutions"] >= RUNNER_MAX_CONCURRENCY
    env = runner["Environment"]["Variables"]
    assert env["CRONHOOK_MAX_CONCURRENCY"] == str(RUNNER_MAX_CONCURRENCY)
    assert env["CRONHOOK_RUNNER_TIMEOUT_S"] == str(runner["Timeout"])


def test_heartbeat_runs_every_minute_and_never_twice_at_once(packaged):
    heartbeat = _functions(packaged.template)["Heartbeat"]["Properties"]
    assert heartbeat["Events"]["HeartbeatEvent"]["Properties"]["Schedule"] == "rate(1 minute)"
    assert heartbeat["ReservedConcurrentExecutions"] == 1
    assert heartbeat["Timeout"] <= 60
    # A throttled tick is dropped, not retried for hours: the next minute's tick covers it.
    assert heartbeat["EventInvokeConfig"] == {
        "MaximumEventAgeInSeconds": 60,
        "MaximumRetryAttempts": 0,
    }


def test_fire_queue_dead_letters_after_retries_and_outlasts_the_runner(packaged):
    resources = packaged.template["Resources"]
    queue = resources["FiresQueue"]["Properties"]
    runner_timeout = resources["Runner"]["Properties"]["Timeout"]
    assert queue["VisibilityTimeout"] >= 6 * runner_timeout
    assert queue["RedrivePolicy"]["maxReceiveCount"] == MAX_RECEIVE_COUNT >= 5
    assert queue["RedrivePolicy"]["deadLetterTargetArn"] == {
        "Fn::GetAtt": ["DeadLetterQueue", "Arn"]
    }
    assert queue["SqsManagedSseEnabled"] is True
    dlq = resources["DeadLetterQueue"]["Properties"]
    assert dlq["MessageRetentionPeriod"] == 14 * 86400  # the most SQS keeps: time to redrive


def test_payload_bucket_is_encrypted_private_tls_only_and_expires(packaged):
    resources = packaged.template["Resources"]
    bucket = resources["PayloadBucket"]["Properties"]
    (rule,) = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "aws:kms"
    assert rule["ServerSideEncryptionByDefault"]["KMSMasterKeyID"] == {
        "Fn::GetAtt": ["SecretsKey", "Arn"]
    }
    assert all(bucket["PublicAccessBlockConfiguration"].values())
    assert len(bucket["PublicAccessBlockConfiguration"]) == 4
    (lifecycle,) = bucket["LifecycleConfiguration"]["Rules"]
    assert lifecycle["ExpirationInDays"] > Settings().event_retention_days
    policy = resources["PayloadBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    assert policy[0]["Effect"] == "Deny"
    assert policy[0]["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_secrets_key_rotates_and_outlives_the_stack(packaged):
    key = packaged.template["Resources"]["SecretsKey"]
    assert key["Properties"]["EnableKeyRotation"] is True
    assert key["DeletionPolicy"] == "Retain"  # sealed secrets are unreadable without it


def test_root_key_is_a_parameter_name_and_the_switch_is_a_parameter(packaged):
    template = packaged.template
    assert template["Parameters"]["RootKeyParameterName"]["Default"] == "/cronhook/dev/root-key"
    (switch,) = _resources(template, "AWS::SSM::Parameter").values()
    assert switch["Properties"]["Type"] == "String"
    assert switch["Properties"]["Value"] == "on"


def test_every_function_is_traced_logged_and_has_a_role_of_its_own(packaged):
    functions = _functions(packaged.template)
    assert set(functions) == set(FUNCTIONS.values())
    roles = set()
    for function, logical in FUNCTIONS.items():
        props = functions[logical]["Properties"]
        assert props["Tracing"] == "Active"
        assert props["Role"] == {"Fn::GetAtt": [role_logical_id(function), "Arn"]}
        roles.add(role_logical_id(function))
        group = props["LoggingConfig"]["LogGroup"]["Ref"]
        assert packaged.template["Resources"][group]["Type"] == "AWS::Logs::LogGroup"
        assert props["Runtime"] == "python3.11"
    assert len(roles) == len(FUNCTIONS)


def _settings_env_names() -> set[str]:
    """The CRONHOOK_* names settings.py reads."""
    source = (PROJECT_DIR / "chalicelib" / "settings.py").read_text()
    return set(re.findall(r"\"(CRONHOOK_[A-Z0-9_]+)\"", source))


def test_functions_get_every_setting_the_deployment_decides(packaged):
    read = _settings_env_names()
    for logical in FUNCTIONS.values():
        env = packaged.template["Resources"][logical]["Properties"]["Environment"]["Variables"]
        ours = {k for k in env if k.startswith("CRONHOOK_")}
        assert ours <= read, f"{logical}: set but never read: {ours - read}"
        for needed in (
            "CRONHOOK_STAGE",
            "CRONHOOK_TABLE_PREFIX",
            "CRONHOOK_QUEUE_URL",
            "CRONHOOK_BUCKET",
            "CRONHOOK_KMS_KEY_ID",
            "CRONHOOK_ROOT_KEY_PARAM",
            "CRONHOOK_SWITCH_PARAM",
            "CRONHOOK_PUBLIC_URL",
        ):
            assert needed in env, (logical, needed)
        assert env["POWERTOOLS_TRACER_CAPTURE_RESPONSE"] == "false"


def test_api_is_named_throttled_traced_and_access_logged_without_tokens(packaged):
    api = packaged.template["Resources"]["RestAPI"]["Properties"]
    assert api["Name"] == "cronhook-dev"
    assert api["TracingEnabled"] is True
    (settings,) = api["MethodSettings"]
    assert settings["ThrottlingRateLimit"] == {"Ref": "ApiThrottleRateLimit"}
    assert settings["ThrottlingBurstLimit"] == {"Ref": "ApiThrottleBurstLimit"}
    assert settings["DataTraceEnabled"] is False  # would log request bodies (secrets)
    log = api["AccessLogSetting"]
    assert log["DestinationArn"] == {"Fn::GetAtt": ["ApiAccessLogGroup", "Arn"]}
    fields = json.loads(log["Format"])
    assert "$context.resourcePath" in fields.values()
    # /hooks/{token}: the real path carries the trigger's token; only the template is logged.
    assert "$context.path" not in fields.values()


def test_api_reaches_its_handler_by_name_so_the_handler_may_know_the_api_url(packaged):
    body = json.dumps(packaged.template["Resources"]["RestAPI"]["Properties"]["DefinitionBody"])
    assert "${APIHandler.Arn}" not in body
    assert "function:cronhook-dev-api/invocations" in body
    handler = packaged.template["Resources"]["APIHandler"]["Properties"]
    assert handler["FunctionName"] == "cronhook-dev-api"
    url = handler["Environment"]["Variables"]["CRONHOOK_PUBLIC_URL"]
    assert "${RestAPI}" in json.dumps(url)


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_tables_are_protected_from_deletion_on_prod_only(stage):
    tables = {
        k: v
        for k, v in merge_template(stage)["Resources"].items()
        if v.get("Type") == "AWS::DynamoDB::Table"
    }
    assert tables
    protected = stage in PROTECTED_STAGES
    for table in tables.values():
        assert table["Properties"]["DeletionProtectionEnabled"] is protected
        assert table["DeletionPolicy"] == ("Retain" if protected else "Delete")
        assert table["UpdateReplacePolicy"] == table["DeletionPolicy"]
        assert table["Properties"]["TableName"].startswith(f"cronhook-{stage}-")


def test_app_runner_decorator_matches_the_template(packaged):
    """app.py's on_sqs_message and the merge template agree (the generated mapping was merged)."""
    tree = ast.parse((PROJECT_DIR / "app.py").read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "on_sqs_message":
            names |= {kw.arg for kw in node.keywords}
    assert "maximum_concurrency" in names
    source = packaged.template["Resources"]["Runner"]["Properties"]["Events"]
    assert list(source) == ["RunnerSqsEventSource"]
