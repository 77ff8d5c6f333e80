"""``infra/deploy.py`` before and after the change set: what a failed first deploy says,
what it does with a ``ROLLBACK_COMPLETE`` stack, the concurrency quota, the region, the
alarm email. AWS answers are botocore ``Stubber`` recordings (shapes checked by botocore
against the service model); no account is needed.
"""

from __future__ import annotations

import os
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber

from infra import deploy as d
from infra import deploy_stack

PROJECT_DIR = Path(__file__).resolve().parents[2]
STACK = "cronhook-dev"
STACK_ID = f"arn:aws:cloudformation:us-east-1:123456789012:stack/{STACK}/1"
T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
DASHBOARD_REASON = (
    "The dashboard body is invalid, there are 32 validation errors: "
    '[{"dataPath": "/widgets/4/properties/metrics/0", "message": "Should be array"}]'
)


def _client(service: str):
    return boto3.client(
        service,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def _event(n: int, logical: str, kind: str, status: str, reason: str = "") -> dict:
    event = {
        "StackId": STACK_ID,
        "EventId": f"e{n}",
        "StackName": STACK,
        "LogicalResourceId": logical,
        "ResourceType": kind,
        "Timestamp": T0 + timedelta(seconds=n),
        "ResourceStatus": status,
    }
    if reason:
        event["ResourceStatusReason"] = reason
    return event


def failed_first_create() -> list[dict]:
    """What DescribeStackEvents answers after a first create failed (newest first)."""
    stack = "AWS::CloudFormation::Stack"
    chronological = [
        _event(0, STACK, stack, "REVIEW_IN_PROGRESS", "User Initiated"),
        _event(1, STACK, stack, "CREATE_IN_PROGRESS", "User Initiated"),
        _event(2, "FiresQueue", "AWS::SQS::Queue", "CREATE_IN_PROGRESS"),
        _event(3, "FiresQueue", "AWS::SQS::Queue", "CREATE_COMPLETE"),
        _event(4, "Dashboard", "AWS::CloudWatch::Dashboard", "CREATE_IN_PROGRESS"),
        _event(5, "Runner", "AWS::Lambda::Function", "CREATE_IN_PROGRESS"),
        _event(6, "Dashboard", "AWS::CloudWatch::Dashboard", "CREATE_FAILED", DASHBOARD_REASON),
        _event(
            7, "Runner", "AWS::Lambda::Function", "CREATE_FAILED", "Resource creation cancelled"
        ),
        _event(
            8,
            STACK,
            stack,
            "ROLLBACK_IN_PROGRESS",
            "The following resource(s) failed to create: [Dashboard, Runner]. Rollback "
            "requested by user.",
        ),
        _event(9, "FiresQueue", "AWS::SQS::Queue", "DELETE_IN_PROGRESS"),
        _event(10, "FiresQueue", "AWS::SQS::Queue", "DELETE_COMPLETE"),
        _event(11, "Runner", "AWS::Lambda::Function", "DELETE_COMPLETE"),
        _event(12, STACK, stack, "ROLLBACK_COMPLETE"),
    ]
    return list(reversed(chronological))


def _stack(status: str) -> dict:
    return {
        "Stacks": [
            {
                "StackName": STACK,
                "StackId": STACK_ID,
                "CreationTime": T0,
                "StackStatus": status,
            }
        ]
    }


def test_the_first_real_failure_is_the_root_cause_not_the_rollback():
    found = d.first_failure(failed_first_create(), STACK)
    assert found is not None
    assert found["LogicalResourceId"] == "Dashboard"
    assert found["ResourceStatusReason"] == DASHBOARD_REASON
    # The 20 newest events (what deploy.py used to print) hold no failure with a cause.
    newest = failed_first_create()[:5]
    assert not [e for e in newest if e["ResourceStatus"].endswith("_FAILED")]


def test_a_failed_update_names_its_own_first_failure_not_an_older_one():
    stack = "AWS::CloudFormation::Stack"
    older = list(reversed(failed_first_create()))
    update = [
        _event(20, STACK, stack, "UPDATE_IN_PROGRESS", "User Initiated"),
        _event(
            21,
            "Heartbeat",
            "AWS::Lambda::Function",
            "UPDATE_FAILED",
            "Specified ReservedConcurrentExecutions for function decreases account's "
            "UnreservedConcurrentExecution below its minimum value of [10].",
        ),
        _event(22, STACK, stack, "UPDATE_ROLLBACK_IN_PROGRESS", "The following resource(s)..."),
        _event(23, STACK, stack, "UPDATE_ROLLBACK_COMPLETE"),
    ]
    events = list(reversed(older + update))
    assert d.first_failure(events, STACK)["LogicalResourceId"] == "Heartbeat"


def test_the_wait_prints_the_first_failure_with_its_reason_and_a_hint(capsys):
    cfn = _client("cloudformation")
    with Stubber(cfn) as stub:
        stub.add_response("describe_stacks", _stack("ROLLBACK_COMPLETE"), {"StackName": STACK})
        stub.add_response(
            "describe_stack_events", {"StackEvents": failed_first_create()}, {"StackName": STACK}
        )
        with pytest.raises(SystemExit) as stopped:
            deploy_stack._wait(cfn, STACK, poll_s=0, ok=("CREATE_COMPLETE",))
        stub.assert_no_pending_responses()
    assert "ROLLBACK_COMPLETE" in str(stopped.value)
    out = capsys.readouterr().out
    assert "first failure: Dashboard (AWS::CloudWatch::Dashboard) CREATE_FAILED" in out
    assert "32 validation errors" in out
    assert "Resource creation cancelled" not in out


def _options(**kwargs) -> d.DeployOptions:
    return d.DeployOptions(stage="dev", poll_s=0, **kwargs)


def test_a_rollback_complete_stack_is_not_deleted_without_consent(capsys):
    cfn = _client("cloudformation")
    with Stubber(cfn) as stub:
        stub.add_response(
            "describe_stack_events", {"StackEvents": failed_first_create()}, {"StackName": STACK}
        )
        with pytest.raises(SystemExit) as stopped:
            deploy_stack._delete_failed_stack(cfn, _options(delete_failed=None, interactive=False))
        stub.assert_no_pending_responses()  # no delete_stack call
    assert "--delete-failed-stack" in str(stopped.value)
    assert "32 validation errors" in capsys.readouterr().out


def test_a_rollback_complete_stack_is_deleted_when_the_operator_says_yes():
    cfn = _client("cloudformation")
    asked: list[str] = []

    def ask(question: str) -> str:
        asked.append(question)
        return "y"

    with Stubber(cfn) as stub:
        stub.add_response(
            "describe_stack_events", {"StackEvents": failed_first_create()}, {"StackName": STACK}
        )
        stub.add_response("delete_stack", {}, {"StackName": STACK})
        stub.add_response("describe_stacks", _stack("DELETE_IN_PROGRESS"), {"StackName": STACK})
        stub.add_response("describe_stacks", _stack("DELETE_IN_PROGRESS"), {"StackName": STACK})
        stub.add_client_error(
            "describe_stacks",
            service_error_code="ValidationError",
            service_message=f"Stack with id {STACK} does not exist",
            expected_params={"StackName": STACK},
        )
        deploy_stack._delete_failed_stack(cfn, _options(interactive=True, ask=ask))
        stub.assert_no_pending_responses()
    assert len(asked) == 1 and "delete stack cronhook-dev" in asked[0]


def _account(quota: int, unreserved: int) -> dict:
    return {
        "AccountLimit": {
            "TotalCodeSize": 80530636800,
            "CodeSizeUnzipped": 262144000,
            "CodeSizeZipped": 52428800,
            "ConcurrentExecutions": quota,
            "UnreservedConcurrentExecutions": unreserved,
        },
        "AccountUsage": {"TotalCodeSize": 0, "FunctionCount": 0},
    }


def test_a_new_account_with_a_quota_of_10_is_refused_before_the_change_set():
    lam = _client("lambda")
    with Stubber(lam) as stub:
        stub.add_response("get_account_settings", _account(10, 10), {})
        with pytest.raises(SystemExit) as stopped:
            d.check_concurrency(lam, {"heartbeat": 1, "runner": 5}, {})
    message = str(stopped.value)
    assert "quota is 10" in message and "at least 10 unreserved" in message
    assert "--param HeartbeatReservedConcurrency=0 --param RunnerReservedConcurrency=0" in message
    assert "L-B99A9384" in message


def test_reservations_pass_on_a_usual_account_and_without_reservations_on_a_small_one():
    lam = _client("lambda")
    with Stubber(lam) as stub:
        stub.add_response("get_account_settings", _account(1000, 1000), {})
        d.check_concurrency(lam, {"heartbeat": 1, "runner": 5}, {})
        stub.add_response("get_account_settings", _account(10, 10), {})
        d.check_concurrency(lam, {"heartbeat": 0, "runner": 0}, {})
        # An update gives back what the functions reserve now: 106 unreserved of 112 is
        # 6 above AWS's floor of 100, and the stack already holds 6.
        stub.add_response("get_account_settings", _account(112, 106), {})
        d.check_concurrency(lam, {"heartbeat": 1, "runner": 5}, {"heartbeat": 1, "runner": 5})
        stub.add_response("get_account_settings", _account(112, 106), {})
        with pytest.raises(SystemExit):
            d.check_concurrency(lam, {"heartbeat": 1, "runner": 12}, {"heartbeat": 1, "runner": 5})
        stub.assert_no_pending_responses()


def test_a_runner_reservation_below_the_job_ceiling_is_refused():
    declared = {
        "RunnerReservedConcurrency": {"Default": 5},
        "HeartbeatReservedConcurrency": {"Default": 1},
    }
    options = _options(parameters={"RunnerReservedConcurrency": "3"}, interactive=False)
    with pytest.raises(SystemExit) as stopped:
        d._preflight(None, options, declared, {}, creating=True)  # type: ignore[arg-type]
    assert "below the job ceiling (5" in str(stopped.value)


def _session(tmp_path: Path, monkeypatch, profile_region: str | None) -> boto3.session.Session:
    config = tmp_path / "config"
    config.write_text("[default]\n" + (f"region = {profile_region}\n" if profile_region else ""))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    return boto3.session.Session()


def test_the_region_is_never_silently_us_east_1(tmp_path, monkeypatch):
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    assert d.resolve_region(None, _session(tmp_path, monkeypatch, "eu-west-3")) == "eu-west-3"
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-central-1")
    assert d.resolve_region(None, _session(tmp_path, monkeypatch, "eu-west-3")) == "eu-central-1"
    monkeypatch.setenv("AWS_REGION", "ap-south-1")
    assert d.resolve_region(None, _session(tmp_path, monkeypatch, "eu-west-3")) == "ap-south-1"
    assert d.resolve_region("sa-east-1", _session(tmp_path, monkeypatch, None)) == "sa-east-1"
    monkeypatch.delenv("AWS_REGION")
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    with pytest.raises(SystemExit) as stopped:
        d.resolve_region(None, _session(tmp_path, monkeypatch, None))
    assert "no AWS region" in str(stopped.value)


def test_the_makefile_forces_no_region_on_deploy_or_rollback():
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["AWS_REGION"] = "eu-west-3"
    for target in ("deploy", "rollback"):
        answer = subprocess.run(
            ["make", "-n", "-p", "--no-print-directory", target],
            cwd=PROJECT_DIR,
            env=env,
            capture_output=True,
            text=True,
        )
        variables = [
            line for line in answer.stdout.splitlines() if line.startswith("AWS_DEFAULT_REGION")
        ]
        assert variables == [], variables
        assert "us-east-1" not in "\n".join(
            line for line in answer.stdout.splitlines() if "infra.deploy" in line
        )
    makefile = (PROJECT_DIR / "Makefile").read_text()
    assert "rollback:" in makefile and "--rollback" in makefile


def test_no_alarm_email_is_asked_for_or_warned_about_loudly(capsys):
    declared = {"AlarmEmail": {"Default": ""}}
    quiet = _options(interactive=False)
    d._preflight(None, quiet, declared, {}, creating=True)  # type: ignore[arg-type]
    out = capsys.readouterr().out
    assert "NO ALARM EMAIL" in out and "Nobody will be told" in out
    asked = _options(interactive=True, ask=lambda q: "ops@example.com")
    d._preflight(None, asked, declared, {}, creating=True)  # type: ignore[arg-type]
    assert asked.parameters["AlarmEmail"] == "ops@example.com"
    kept = _options(interactive=False)
    d._preflight(None, kept, declared, {"AlarmEmail": "a@b.c"}, creating=False)  # type: ignore[arg-type]
    assert "NO ALARM EMAIL" not in capsys.readouterr().out


def test_a_fresh_account_without_an_api_gateway_role_gets_one_from_this_stack(capsys):
    """Access logs need the region's API Gateway CloudWatch role; the default is not to
    own it (deleting the owner breaks the other stages' logs), unless there is none."""

    class Aws:
        region = "eu-west-3"

        def __init__(self, role: str | None):
            self.apigw = _client("apigateway")
            self.role = role

        def client(self, name: str):
            assert name == "apigateway"
            return self.apigw

    declared = {"ConfigureApiGatewayAccount": {"Default": "false"}}
    fresh = Aws(None)
    with Stubber(fresh.apigw) as stub:
        stub.add_response("get_account", {}, {})
        options = _options(interactive=False)
        d._preflight(fresh, options, declared, {}, creating=True)  # type: ignore[arg-type]
    assert options.parameters["ConfigureApiGatewayAccount"] == "true"
    assert "has no API Gateway CloudWatch role" in capsys.readouterr().out
    used = Aws("arn:aws:iam::123456789012:role/apigw-logs")
    with Stubber(used.apigw) as stub:
        stub.add_response("get_account", {"cloudwatchRoleArn": used.role}, {})
        options = _options(interactive=False)
        d._preflight(used, options, declared, {}, creating=True)  # type: ignore[arg-type]
    assert "ConfigureApiGatewayAccount" not in options.parameters  # the default: false
