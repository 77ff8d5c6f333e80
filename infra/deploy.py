"""``make deploy STAGE=dev``: deploy ``build/<stage>/`` with the caller's AWS credentials.

Only boto3 is needed (no AWS CLI, no SAM CLI); credentials come from the usual chain
(``AWS_PROFILE``, environment, SSO, instance role). ``make deploy`` runs
``make package`` first.

1. Check that the root key parameter exists (CloudFormation cannot create a
   SecureString); ``--create-root-key`` makes one and prints it once.
2. Upload ``deployment.zip`` to the artifact bucket under its SHA-256 (created if
   missing: ``cronhook-artifacts-<account>-<region>``), and point every function's
   ``CodeUri`` at it: what ``aws cloudformation package`` does.
3. Upload the template, create a change set (CREATE or UPDATE), execute it, wait, and
   print the stack's outputs. ``--no-execute`` stops after the change set, for review.

``--expand-sam`` translates the SAM transform locally (aws-sam-translator) for
endpoints that do not run it, such as moto's CloudFormation in ``tests/infra``.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import secrets
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infra.template import PROJECT_DIR

__all__ = ["DeployOptions", "deploy", "expand_sam", "point_code_at"]

CAPABILITIES = ["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"]
NO_CHANGES = ("didn't contain changes", "No updates are to be performed")


@dataclass
class DeployOptions:
    """Where and how to deploy."""

    stage: str
    stack_name: str = ""
    region: str | None = None
    bucket: str | None = None
    parameters: dict[str, str] = field(default_factory=dict)
    endpoint_url: str | None = None
    expand_sam: bool = False
    execute: bool = True
    create_root_key: bool = False
    build_dir: Path | None = None
    poll_s: float = 10.0
    # Tests only: a last change to the expanded template (moto lacks some resource types).
    adapt: Callable[[dict], dict] | None = None

    def __post_init__(self) -> None:
        self.stack_name = self.stack_name or f"cronhook-{self.stage}"
        self.build_dir = self.build_dir or PROJECT_DIR / "build" / self.stage


def _say(message: str) -> None:
    print(message, flush=True)


def point_code_at(template: dict, *, bucket: str, key: str) -> dict:
    """A copy of ``template`` whose functions load their code from ``s3://bucket/key``."""
    out = copy.deepcopy(template)
    for resource in out["Resources"].values():
        if resource.get("Type") == "AWS::Serverless::Function":
            resource["Properties"]["CodeUri"] = {"Bucket": bucket, "Key": key}
    return out


def expand_sam(template: dict, *, region: str) -> dict:
    """Translate the SAM transform locally into plain CloudFormation."""
    import boto3
    from samtranslator.parser.parser import Parser
    from samtranslator.translator.translator import Translator

    translator = Translator(
        managed_policy_map=None,
        sam_parser=Parser(),
        boto_session=boto3.session.Session(region_name=region),
    )
    return translator.translate(
        sam_template=copy.deepcopy(template),
        parameter_values={},
        get_managed_policy_map=lambda: {},
    )


class _Aws:
    def __init__(self, options: DeployOptions):
        import boto3

        self.session = boto3.session.Session(region_name=options.region)
        self.region = self.session.region_name or "us-east-1"
        self.endpoint_url = options.endpoint_url

    def client(self, name: str) -> Any:
        return self.session.client(name, region_name=self.region, endpoint_url=self.endpoint_url)


def _ensure_bucket(aws: _Aws, name: str | None) -> str:
    from botocore.exceptions import ClientError

    s3 = aws.client("s3")
    if name is None:
        account = aws.client("sts").get_caller_identity()["Account"]
        name = f"cronhook-artifacts-{account}-{aws.region}"
    try:
        s3.head_bucket(Bucket=name)
        return name
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") not in ("404", "NoSuchBucket", "NotFound"):
            raise
    _say(f"creating artifact bucket {name}")
    kwargs: dict = {"Bucket": name}
    if aws.region != "us-east-1":
        kwargs["CreateBucketConfiguration"] = {"LocationConstraint": aws.region}
    s3.create_bucket(**kwargs)
    s3.put_public_access_block(
        Bucket=name,
        PublicAccessBlockConfiguration={
            "BlockPublicAcls": True,
            "IgnorePublicAcls": True,
            "BlockPublicPolicy": True,
            "RestrictPublicBuckets": True,
        },
    )
    return name


def _upload(aws: _Aws, bucket: str, key: str, body: bytes) -> None:
    from botocore.exceptions import ClientError

    s3 = aws.client("s3")
    try:
        s3.head_object(Bucket=bucket, Key=key)
        return  # content-addressed: already there
    except ClientError:
        pass
    s3.put_object(Bucket=bucket, Key=key, Body=body)


def _template_url(aws: _Aws, bucket: str, key: str) -> str:
    suffix = ".cn" if aws.region.startswith("cn-") else ""
    return f"https://s3.{aws.region}.amazonaws.com{suffix}/{bucket}/{key}"


def _root_key_param(template: dict, options: DeployOptions) -> str:
    return options.parameters.get(
        "RootKeyParameterName", template["Parameters"]["RootKeyParameterName"]["Default"]
    )


def _check_root_key(aws: _Aws, name: str, *, create: bool) -> None:
    ssm = aws.client("ssm")
    found = ssm.describe_parameters(ParameterFilters=[{"Key": "Name", "Values": [name]}])
    if found.get("Parameters"):
        return
    if not create:
        raise SystemExit(
            f"the root key parameter {name} does not exist. Create it once (CloudFormation "
            "cannot make a SecureString):\n"
            f"  aws ssm put-parameter --type SecureString --name {name} "
            '--value "chr_$(openssl rand -hex 24)"\n'
            "or rerun with --create-root-key (docs/deploy.md)."
        )
    key = "chr_" + secrets.token_urlsafe(24)
    ssm.put_parameter(
        Name=name, Type="SecureString", Value=key, Description="cronhook root API key"
    )
    _say(f"created the root key in {name}; it is shown once:\n  {key}")


def _stack_status(cfn: Any, name: str) -> str | None:
    from botocore.exceptions import ClientError

    try:
        return cfn.describe_stacks(StackName=name)["Stacks"][0]["StackStatus"]
    except ClientError as exc:
        if "does not exist" in str(exc):
            return None
        raise


def _wait(cfn: Any, name: str, *, poll_s: float, ok: tuple[str, ...]) -> str:
    while True:
        status = _stack_status(cfn, name) or "DELETE_COMPLETE"
        if status in ok:
            return status
        if status.endswith(("_FAILED", "ROLLBACK_COMPLETE")) or status == "DELETE_COMPLETE":
            events = cfn.describe_stack_events(StackName=name).get("StackEvents", [])
            for event in events[:20]:
                if "FAILED" in event.get("ResourceStatus", ""):
                    _say(
                        f"  {event['LogicalResourceId']}: {event['ResourceStatus']}: "
                        f"{event.get('ResourceStatusReason', '')}"
                    )
            raise SystemExit(f"stack {name} ended in {status}")
        time.sleep(poll_s)


def deploy(options: DeployOptions) -> dict[str, str]:
    """Deploy the packaged stage; returns the stack's outputs."""
    assert options.build_dir is not None
    template_path = options.build_dir / "sam.json"
    zip_path = options.build_dir / "deployment.zip"
    if not template_path.exists() or not zip_path.exists():
        raise SystemExit(
            f"{template_path} not found: run `make package STAGE={options.stage}` first"
        )
    template = json.loads(template_path.read_text())
    aws = _Aws(options)
    cfn = aws.client("cloudformation")

    _check_root_key(aws, _root_key_param(template, options), create=options.create_root_key)
    bucket = _ensure_bucket(aws, options.bucket)
    code = zip_path.read_bytes()
    code_key = f"cronhook/{options.stage}/{hashlib.sha256(code).hexdigest()}.zip"
    _say(
        f"uploading {zip_path.name} ({len(code) / 1024 / 1024:.1f} MiB) to s3://{bucket}/{code_key}"
    )
    _upload(aws, bucket, code_key, code)
    template = point_code_at(template, bucket=bucket, key=code_key)
    if options.expand_sam:
        template = expand_sam(template, region=aws.region)
    if options.adapt is not None:
        template = options.adapt(template)
    body = json.dumps(template, indent=1).encode()
    template_key = f"cronhook/{options.stage}/{hashlib.sha256(body).hexdigest()}.template.json"
    _upload(aws, bucket, template_key, body)

    status = _stack_status(cfn, options.stack_name)
    change_type = "CREATE" if status in (None, "REVIEW_IN_PROGRESS") else "UPDATE"
    previous: set[str] = set()
    if change_type == "UPDATE":
        stack = cfn.describe_stacks(StackName=options.stack_name)["Stacks"][0]
        previous = {p["ParameterKey"] for p in stack.get("Parameters", [])}
    if status == "ROLLBACK_COMPLETE":
        raise SystemExit(
            f"stack {options.stack_name} is ROLLBACK_COMPLETE (its first create failed): delete "
            "it in the console or with `aws cloudformation delete-stack`, then deploy again"
        )
    declared = template.get("Parameters", {})
    unknown = set(options.parameters) - set(declared)
    if unknown:
        raise SystemExit(f"unknown parameter(s): {', '.join(sorted(unknown))}")
    parameters = []
    for key in declared:
        if key in options.parameters:
            parameters.append({"ParameterKey": key, "ParameterValue": options.parameters[key]})
        elif key in previous:  # as `aws cloudformation deploy`: keep what was deployed
            parameters.append({"ParameterKey": key, "UsePreviousValue": True})
    change_set = f"cronhook-{int(time.time())}"
    _say(f"creating change set {change_set} ({change_type}) for stack {options.stack_name}")
    cfn.create_change_set(
        StackName=options.stack_name,
        ChangeSetName=change_set,
        ChangeSetType=change_type,
        TemplateURL=_template_url(aws, bucket, template_key),
        Parameters=parameters,
        Capabilities=CAPABILITIES,
        Tags=[{"Key": "cronhook:stage", "Value": options.stage}],
    )
    while True:
        described = cfn.describe_change_set(StackName=options.stack_name, ChangeSetName=change_set)
        if described["Status"] in ("CREATE_COMPLETE", "FAILED"):
            break
        time.sleep(options.poll_s)
    if described["Status"] == "FAILED":
        reason = described.get("StatusReason", "")
        if any(text in reason for text in NO_CHANGES):
            _say("no changes to deploy")
            cfn.delete_change_set(StackName=options.stack_name, ChangeSetName=change_set)
            return _outputs(cfn, options.stack_name)
        raise SystemExit(f"change set failed: {reason}")
    for change in described.get("Changes", []):
        rc = change.get("ResourceChange", {})
        _say(
            f"  {rc.get('Action', '?'):8} {rc.get('LogicalResourceId')} ({rc.get('ResourceType')})"
        )
    if not options.execute:
        _say(f"change set {change_set} is ready for review in the console (not executed)")
        return {}
    cfn.execute_change_set(StackName=options.stack_name, ChangeSetName=change_set)
    done = "CREATE_COMPLETE" if change_type == "CREATE" else "UPDATE_COMPLETE"
    _wait(cfn, options.stack_name, poll_s=options.poll_s, ok=(done,))
    outputs = _outputs(cfn, options.stack_name)
    _say(f"stack {options.stack_name}: {done}")
    for key in sorted(outputs):
        _say(f"  {key}: {outputs[key]}")
    return outputs


def _outputs(cfn: Any, name: str) -> dict[str, str]:
    stack = cfn.describe_stacks(StackName=name)["Stacks"][0]
    return {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}


def _parse_params(values: list[str]) -> dict[str, str]:
    out = {}
    for value in values:
        key, sep, val = value.partition("=")
        if not sep or not key:
            raise SystemExit(f"--param takes Key=Value, not {value!r}")
        out[key] = val
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Deploy build/<stage>/ with boto3.")
    parser.add_argument("--stage", default="dev")
    parser.add_argument("--stack-name", default="", help="default: cronhook-<stage>")
    parser.add_argument("--region", default=None, help="default: the caller's configured region")
    parser.add_argument("--bucket", default=None, help="artifact bucket (default: made for you)")
    parser.add_argument(
        "--param", action="append", default=[], metavar="Key=Value", help="a stack parameter"
    )
    parser.add_argument("--create-root-key", action="store_true")
    parser.add_argument("--no-execute", action="store_true", help="stop at the change set")
    parser.add_argument("--expand-sam", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--endpoint-url", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    deploy(
        DeployOptions(
            stage=args.stage,
            stack_name=args.stack_name,
            region=args.region,
            bucket=args.bucket or os.environ.get("CRONHOOK_ARTIFACT_BUCKET") or None,
            parameters=_parse_params(args.param),
            endpoint_url=args.endpoint_url,
            expand_sam=args.expand_sam,
            execute=not args.no_execute,
            create_root_key=args.create_root_key,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
