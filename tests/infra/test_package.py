"""``make package``: one lint-clean SAM template with everything the issue lists."""

from __future__ import annotations

import ast
import json
import re
import zipfile
from pathlib import Path

import pytest

from chalicelib.settings import (
    RUNNER_MAX_CONCURRENCY,
    Settings,
    claim_lease_s,
    queue_visibility_s,
)
from infra.iam import FUNCTIONS, role_logical_id
from infra.template import (
    FIRE_PATH_FUNCTIONS,
    LAMBDA_ARCHITECTURE,
    LAMBDA_RUNTIME,
    MAX_RECEIVE_COUNT,
    PROTECTED_STAGES,
    merge_template,
)

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
    # Reserved concurrency: a parameter (0: none), by default the ceiling; below the ceiling
    # the poller would throttle fires into the DLQ (infra/deploy.py refuses 0 < n < ceiling).
    assert runner["ReservedConcurrentExecutions"] == {
        "Fn::If": [
            "HasRunnerReservation",
            {"Ref": "RunnerReservedConcurrency"},
            {"Ref": "AWS::NoValue"},
        ]
    }
    param = packaged.template["Parameters"]["RunnerReservedConcurrency"]
    assert param["Default"] == RUNNER_MAX_CONCURRENCY and param["MinValue"] == 0
    env = runner["Environment"]["Variables"]
    assert env["CRONHOOK_MAX_CONCURRENCY"] == str(RUNNER_MAX_CONCURRENCY)
    assert env["CRONHOOK_RUNNER_TIMEOUT_S"] == str(runner["Timeout"])


def test_heartbeat_runs_every_minute_and_never_twice_at_once(packaged):
    heartbeat = _functions(packaged.template)["Heartbeat"]["Properties"]
    assert heartbeat["Events"]["HeartbeatEvent"]["Properties"]["Schedule"] == "rate(1 minute)"
    assert heartbeat["ReservedConcurrentExecutions"]["Fn::If"][1] == {
        "Ref": "HeartbeatReservedConcurrency"
    }
    assert packaged.template["Parameters"]["HeartbeatReservedConcurrency"]["Default"] == 1
    assert packaged.template["Conditions"]["HasHeartbeatReservation"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "HeartbeatReservedConcurrency"}, 0]}]
    }
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
    # One derivation (chalicelib/settings.py): the visibility outlasts a run (AWS refuses a
    # mapping whose queue's visibility is below the function's timeout) ...
    assert queue["VisibilityTimeout"] == queue_visibility_s(runner_timeout) > runner_timeout
    # ... and a message whose invocation died un-started comes back before its claim's
    # lease ends (a delay of up to the lookahead, then one visibility), so it runs, not lost.
    settings = Settings(runner_timeout_s=runner_timeout)
    assert settings.lease_s == claim_lease_s(runner_timeout, settings.lookahead_s)
    assert settings.lookahead_s + queue["VisibilityTimeout"] < settings.lease_s
    env = resources["Runner"]["Properties"]["Environment"]["Variables"]
    assert env["CRONHOOK_RUNNER_TIMEOUT_S"] == str(runner_timeout)
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


def test_secrets_key_rotates_outlives_the_stack_but_not_a_failed_first_create(packaged):
    key = packaged.template["Resources"]["SecretsKey"]
    assert key["Properties"]["EnableKeyRotation"] is True
    # Sealed secrets are unreadable without it; a failed first create leaves no key behind.
    assert key["DeletionPolicy"] == "RetainExceptOnCreate"
    assert key["UpdateReplacePolicy"] == "Retain"


def test_root_key_and_switch_are_parameter_names_and_no_deploy_owns_the_switch(packaged):
    template = packaged.template
    assert template["Parameters"]["RootKeyParameterName"]["Default"] == "/cronhook/dev/root-key"
    assert template["Parameters"]["SwitchParameter"]["Default"] == "/cronhook/dev/triggers-enabled"
    # No AWS::SSM::Parameter: CloudFormation would write "on" back on a later deploy.
    assert _resources(template, "AWS::SSM::Parameter") == {}


def test_every_function_is_traced_logged_and_has_a_role_of_its_own(packaged):
    functions = _functions(packaged.template)
    assert set(functions) == set(FUNCTIONS.values())
    roles = set()
    for function, logical in FUNCTIONS.items():
        props = functions[logical]["Properties"]
        if function in FIRE_PATH_FUNCTIONS:
            # Sampled: traced when what sent the fire was (an API call), else not.
            assert props["Tracing"] == {"Ref": "FirePathTracing"}
            assert packaged.template["Parameters"]["FirePathTracing"]["Default"] == "PassThrough"
        else:
            assert props["Tracing"] == "Active"
        assert props["Role"] == {"Fn::GetAtt": [role_logical_id(function), "Arn"]}
        roles.add(role_logical_id(function))
        group = props["LoggingConfig"]["LogGroup"]["Ref"]
        assert packaged.template["Resources"][group]["Type"] == "AWS::Logs::LogGroup"
        # Pinned, whoever builds; the API answers within API Gateway's 29 s.
        assert props["Runtime"] == LAMBDA_RUNTIME == "python3.12"
        assert props["Architectures"] == [LAMBDA_ARCHITECTURE] == ["arm64"]
        if function in ("api_handler", "authorizer"):
            assert props["Timeout"] <= 29, function
    assert len(roles) == len(FUNCTIONS)


def test_the_zip_holds_dependencies_built_for_the_pinned_runtime_and_architecture(packaged):
    with zipfile.ZipFile(packaged.dir / "deployment.zip") as z:
        compiled = [n for n in z.namelist() if n.endswith(".so")]
    assert compiled == sorted(packaged.report["compiled"]) or set(compiled) == set(
        packaged.report["compiled"]
    )
    assert any(n.startswith("pydantic_core/") for n in compiled)
    for name in compiled:
        assert "aarch64" in name and ("cpython-312" in name or ".abi3." in name), name
        assert "x86_64" not in name and "cpython-311" not in name, name


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
    # SAM adds a second stage named "Stage" unless OpenApiVersion is set.
    assert api["OpenApiVersion"] == "2.0"
    settings, hooks = api["MethodSettings"]
    assert (settings["ResourcePath"], settings["HttpMethod"]) == ("/*", "*")
    # Per-route metrics cost $35-50 a month: a parameter, off by default.
    assert settings["MetricsEnabled"] == {"Fn::If": ["ApiDetailedMetrics", True, False]}
    assert packaged.template["Parameters"]["ApiDetailedMetrics"]["Default"] == "false"
    # Deleting the stage that owns the account's API Gateway role breaks the others' logs.
    assert packaged.template["Parameters"]["ConfigureApiGatewayAccount"]["Default"] == "false"
    assert settings["ThrottlingRateLimit"] == {"Ref": "ApiThrottleRateLimit"}
    assert settings["ThrottlingBurstLimit"] == {"Ref": "ApiThrottleBurstLimit"}
    # /hooks has a throttle bucket of its own, on the route the app serves.
    assert (hooks["ResourcePath"], hooks["HttpMethod"]) == ("/~1hooks~1{token}", "POST")
    assert hooks["ThrottlingRateLimit"] == {"Ref": "HooksThrottleRateLimit"}
    assert hooks["ThrottlingBurstLimit"] == {"Ref": "HooksThrottleBurstLimit"}
    assert hooks["MetricsEnabled"] == settings["MetricsEnabled"]
    import app as app_module

    route = hooks["ResourcePath"][1:].replace("~1", "/")  # "/~1hooks~1{token}"
    assert "POST" in app_module.app.routes[route]
    for each in (settings, hooks):
        assert each["DataTraceEnabled"] is False  # would log request bodies (secrets)
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
    template = merge_template(stage)
    default = template["Parameters"]["TableDeletionProtection"]["Default"]
    assert default == ("true" if protected else "false")
    for table in tables.values():
        assert table["Properties"]["DeletionProtectionEnabled"] == {
            "Fn::If": ["TableDeletionProtection", True, False]
        }
        # Kept when the stack goes, removed when the first create fails ("already exists").
        assert table["DeletionPolicy"] == ("RetainExceptOnCreate" if protected else "Delete")
        assert table["UpdateReplacePolicy"] == ("Retain" if protected else "Delete")
    for logical in ("DeadLetterQueue", "PayloadBucket"):
        kept = template["Resources"][logical]
        assert kept["DeletionPolicy"] == ("RetainExceptOnCreate" if protected else "Delete")
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
