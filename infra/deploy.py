"""``make deploy STAGE=dev``: deploy ``build/<stage>/`` with the caller's AWS credentials.

Only boto3 is needed (no AWS CLI, no SAM CLI); credentials come from the usual chain
(``AWS_PROFILE``, environment, SSO, instance role). ``make deploy`` runs
``make package`` first. The region is ``--region``, else ``AWS_REGION``, else
``AWS_DEFAULT_REGION``, else the profile's; none is an error, never a silent default.

1. Say which account and region; check that the root key parameter exists
   (CloudFormation cannot create a SecureString; ``--create-root-key`` makes one and
   prints it once); create the on/off switch parameter (``on``) if it is missing, and
   never write it again (its value belongs to operators, not to deploys).
2. Upload ``deployment.zip`` to the artifact bucket under its SHA-256 (created if
   missing: ``cronhook-artifacts-<account>-<region>``), and point every function's
   ``CodeUri`` at it: what ``aws cloudformation package`` does.
3. A stack left ``ROLLBACK_COMPLETE`` by a failed first create cannot be updated: say
   why it failed, then delete it (``--delete-failed-stack``, or yes to the prompt).
4. Before the change set: the account's Lambda concurrency can hold the reservations
   asked for (``GetAccountSettings``); the region's API Gateway has a CloudWatch role
   for access logs (else this stack sets it, ``ConfigureApiGatewayAccount=true``); an
   ``AlarmEmail`` is asked for (or a loud warning says nobody will be told).
5. Create a change set (CREATE or UPDATE), execute it, wait. On failure, print the
   first real failure (the root cause, not the cancellations and deletions after it).
   A protected stage's tables get deletion protection once the first create succeeded.
6. Record the release in ``s3://<bucket>/cronhook/<stage>/releases.json`` (the last
   ``KEEP_RELEASES``, older artifacts deleted). ``--rollback`` (``make rollback``)
   redeploys the release before the current one, with the parameters in place.

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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from infra.template import PROJECT_DIR, PROTECTED_STAGES

__all__ = [
    "DeployOptions",
    "deploy",
    "rollback",
    "expand_sam",
    "point_code_at",
    "first_failure",
    "check_concurrency",
    "resolve_region",
    "KEEP_RELEASES",
]

CAPABILITIES = ["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"]
NO_CHANGES = ("didn't contain changes", "No updates are to be performed")
# Failures that are consequences, not causes: CloudFormation cancels the resources in
# progress when one fails, then deletes everything on rollback.
CONSEQUENCES = ("cancelled", "Resource creation cancelled", "Resource update cancelled")
KEEP_RELEASES = 5  # releases (code + template) kept in the artifact bucket for rollback
# AWS keeps this much of the account's concurrency unreserved (or all of it when the
# account's quota is lower: new accounts often have 10, and can then reserve nothing).
MIN_UNRESERVED = 100
RESERVATIONS = {"HeartbeatReservedConcurrency": "heartbeat", "RunnerReservedConcurrency": "runner"}


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
    # A ROLLBACK_COMPLETE stack: True deletes it, False refuses, None asks (if interactive).
    delete_failed: bool | None = None
    # Whether to prompt (default: stdin is a terminal); ``ask`` answers prompts (tests).
    interactive: bool | None = None
    ask: Callable[[str], str] | None = None
    # Tests only: a last change to the expanded template (moto lacks some resource types).
    adapt: Callable[[dict], dict] | None = None

    def __post_init__(self) -> None:
        self.stack_name = self.stack_name or f"cronhook-{self.stage}"
        self.build_dir = self.build_dir or PROJECT_DIR / "build" / self.stage


def _say(message: str) -> None:
    print(message, flush=True)


def _loud(lines: list[str]) -> None:
    bar = "!" * 78
    _say("\n".join([bar, *(f"!! {line}" for line in lines), bar]))


def _interactive(options: DeployOptions) -> bool:
    if options.interactive is not None:
        return options.interactive
    return sys.stdin.isatty()


def _ask(options: DeployOptions, question: str) -> str:
    if options.ask is not None:
        return options.ask(question)
    return input(question)


def resolve_region(explicit: str | None, session: Any) -> str:
    """``--region``, else ``AWS_REGION``, else ``AWS_DEFAULT_REGION``/the profile's region."""
    region = explicit or os.environ.get("AWS_REGION") or session.region_name
    if not region:
        raise SystemExit(
            "no AWS region: pass --region, or set AWS_REGION, or set a region in your "
            "profile (aws configure set region <region>)"
        )
    return region


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

        session = boto3.session.Session()
        self.region = resolve_region(options.region, session)
        self.session = boto3.session.Session(region_name=self.region)
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


def _ensure_switch(aws: _Aws, name: str) -> None:
    """Create the on/off switch (``on``) if missing; an existing value is never touched."""
    from botocore.exceptions import ClientError

    ssm = aws.client("ssm")
    try:
        ssm.put_parameter(
            Name=name,
            Type="String",
            Value="on",
            Overwrite=False,
            Description="cronhook on/off switch: 'off' stops all firing (docs/runbook.md).",
        )
        _say(f"created the switch {name} = on")
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "ParameterAlreadyExists":
            raise
        value = ssm.get_parameter(Name=name)["Parameter"]["Value"]
        if value.strip().lower() in ("off", "false", "0", "disabled"):
            _loud([f"the switch {name} is '{value}': nothing fires; this deploy leaves it so."])


def _stack_status(cfn: Any, name: str) -> str | None:
    from botocore.exceptions import ClientError

    try:
        return cfn.describe_stacks(StackName=name)["Stacks"][0]["StackStatus"]
    except ClientError as exc:
        if "does not exist" in str(exc):
            return None
        raise


def _stack_events(cfn: Any, name: str) -> list[dict]:
    """All of the stack's events, newest first (every page)."""
    events: list[dict] = []
    token = None
    while True:
        kwargs = {"StackName": name, **({"NextToken": token} if token else {})}
        page = cfn.describe_stack_events(**kwargs)
        events += page.get("StackEvents", [])
        token = page.get("NextToken")
        if not token:
            return events


def first_failure(events: list[dict], stack_name: str) -> dict | None:
    """The first real failure of the stack's last operation: its root cause.

    ``events`` come newest first (``DescribeStackEvents``). The last operation starts at
    the newest ``*_IN_PROGRESS`` event of the stack itself that a user started (create,
    update, or an update's rollback follows it); of the failures after it, the first one
    that is not a cancellation (resources CloudFormation stopped because another failed)
    and not the stack's own summary ("The following resource(s) failed ...").
    """
    chronological = list(reversed(events))
    start = 0
    for i, event in enumerate(chronological):
        if (
            event.get("LogicalResourceId") == stack_name
            and event.get("ResourceType") == "AWS::CloudFormation::Stack"
            and event.get("ResourceStatus") in ("CREATE_IN_PROGRESS", "UPDATE_IN_PROGRESS")
            and "User Initiated" in (event.get("ResourceStatusReason") or "User Initiated")
        ):
            start = i
    summary = None
    for event in chronological[start:]:
        status = event.get("ResourceStatus", "")
        if not status.endswith("_FAILED"):
            continue
        reason = event.get("ResourceStatusReason") or ""
        if event.get("ResourceType") == "AWS::CloudFormation::Stack":
            summary = summary or event
            continue
        if any(text in reason for text in CONSEQUENCES):
            continue
        return event
    return summary


HINTS = {
    "already exists": (
        "a resource with this name is left from an earlier attempt or another stack: "
        "delete it, or deploy under another stage name"
    ),
    "UnreservedConcurrentExecution": (
        "the account cannot reserve that much Lambda concurrency: pass "
        "--param HeartbeatReservedConcurrency=0 --param RunnerReservedConcurrency=0, or ask "
        "for a higher quota (Service Quotas, Lambda, 'Concurrent executions')"
    ),
    "CloudWatch Logs role ARN must be set": (
        "the region's API Gateway has no CloudWatch role: deploy with "
        "--param ConfigureApiGatewayAccount=true (docs/deploy.md)"
    ),
}


def _explain(cfn: Any, name: str) -> str:
    event = first_failure(_stack_events(cfn, name), name)
    if event is None:
        return "no failure event found: see the stack's events in the console"
    reason = event.get("ResourceStatusReason", "")
    text = (
        f"first failure: {event.get('LogicalResourceId')} ({event.get('ResourceType')}) "
        f"{event.get('ResourceStatus')}: {reason}"
    )
    for needle, hint in HINTS.items():
        if needle in reason:
            text += f"\n  hint: {hint}"
    return text


def _wait(cfn: Any, name: str, *, poll_s: float, ok: tuple[str, ...]) -> str:
    while True:
        status = _stack_status(cfn, name) or "DELETE_COMPLETE"
        if status in ok:
            return status
        if status.endswith(("_FAILED", "ROLLBACK_COMPLETE")) or status == "DELETE_COMPLETE":
            _say(_explain(cfn, name))
            raise SystemExit(f"stack {name} ended in {status}")
        time.sleep(poll_s)


def _delete_failed_stack(cfn: Any, options: DeployOptions) -> None:
    """A ROLLBACK_COMPLETE stack (its first create failed) cannot be updated: delete it."""
    name = options.stack_name
    why = _explain(cfn, name)
    _say(f"stack {name} is ROLLBACK_COMPLETE: its first create failed.\n{why}")
    delete = options.delete_failed
    if delete is None and _interactive(options):
        answer = _ask(
            options, f"delete stack {name} (it holds nothing) and create it again? [y/N] "
        )
        delete = answer.strip().lower() in ("y", "yes")
    if not delete:
        raise SystemExit(
            f"stack {name} is ROLLBACK_COMPLETE and cannot be updated: fix the cause above, "
            "then rerun with --delete-failed-stack (make deploy "
            f'STAGE={options.stage} DEPLOY_ARGS="--delete-failed-stack")'
        )
    _say(f"deleting stack {name}")
    cfn.delete_stack(StackName=name)
    while (_stack_status(cfn, name) or "DELETE_COMPLETE") != "DELETE_COMPLETE":
        if _stack_status(cfn, name) == "DELETE_FAILED":
            _say(_explain(cfn, name))
            raise SystemExit(f"could not delete stack {name}")
        time.sleep(options.poll_s)


def check_concurrency(lam: Any, wanted: dict[str, int], current: dict[str, int]) -> None:
    """Refuse, before any change set, reservations the account's Lambda quota cannot hold.

    ``wanted``: function -> reserved concurrency asked for (0: none); ``current``: what
    those functions reserve now (an update gives it back before taking the new one).
    AWS keeps ``min(100, quota)`` of the account unreserved.
    """
    settings = lam.get_account_settings()
    quota = int(settings["AccountLimit"]["ConcurrentExecutions"])
    unreserved = int(settings["AccountLimit"]["UnreservedConcurrentExecutions"])
    floor = min(MIN_UNRESERVED, quota)
    extra = sum(wanted.values()) - sum(current.get(f, 0) for f in wanted)
    room = unreserved - floor
    if extra <= room:
        return
    asked = ", ".join(f"{f} {n}" for f, n in wanted.items() if n)
    raise SystemExit(
        f"this account's Lambda concurrency cannot hold the reservations asked for ({asked}):"
        f" its quota is {quota} concurrent executions, {unreserved} unreserved, and AWS keeps "
        f"at least {floor} unreserved, so at most {max(room, 0)} more can be reserved.\n"
        "Either deploy without reservations (the heartbeat may then overlap itself, which "
        "is safe: every claim is a conditional write; the runner stays bounded by the queue "
        "mapping's MaximumConcurrency):\n"
        "  --param HeartbeatReservedConcurrency=0 --param RunnerReservedConcurrency=0\n"
        "or ask for a higher quota (Service Quotas > AWS Lambda > Concurrent executions, "
        "code L-B99A9384) and deploy again."
    )


def _reserved_now(lam: Any, names: dict[str, str]) -> dict[str, int]:
    out = {}
    for function, name in names.items():
        try:
            found = lam.get_function_concurrency(FunctionName=name)
        except Exception:  # noqa: BLE001 - no such function yet: nothing reserved
            continue
        out[function] = int(found.get("ReservedConcurrentExecutions") or 0)
    return out


def _effective(key: str, declared: dict, given: dict[str, str], previous: dict[str, str]) -> str:
    if key in given:
        return given[key]
    if key in previous:
        return previous[key]
    return str(declared.get(key, {}).get("Default", ""))


def _preflight(
    aws: _Aws, options: DeployOptions, declared: dict, previous: dict[str, str], creating: bool
) -> None:
    """Checks and questions before the change set; may add to ``options.parameters``."""
    from botocore.exceptions import BotoCoreError, ClientError

    params = options.parameters
    # Reserved concurrency against the account's quota.
    if set(RESERVATIONS) <= set(declared):
        wanted = {
            f: int(_effective(k, declared, params, previous)) for k, f in RESERVATIONS.items()
        }
        runner = wanted["runner"]
        ceiling = int(declared["RunnerReservedConcurrency"]["Default"])
        if 0 < runner < ceiling:
            raise SystemExit(
                f"RunnerReservedConcurrency={runner} is below the job ceiling ({ceiling}, the "
                "queue mapping's MaximumConcurrency): Lambda's poller would throttle messages "
                "into the dead-letter queue. Use 0 (no reservation) or at least the ceiling."
            )
        lam = aws.client("lambda")
        names = {f: f"cronhook-{options.stage}-{f}" for f in RESERVATIONS.values()}
        try:
            check_concurrency(lam, wanted, _reserved_now(lam, names))
        except (BotoCoreError, ClientError) as exc:
            _say(f"warning: could not read the account's Lambda concurrency ({exc}); going on")
    # Access logs need the region's API Gateway CloudWatch role.
    key = "ConfigureApiGatewayAccount"
    if key in declared and key not in params and (creating or key not in previous):
        try:
            role = aws.client("apigateway").get_account().get("cloudwatchRoleArn")
        except (BotoCoreError, ClientError) as exc:
            role = "unknown"
            _say(f"warning: could not read API Gateway's account settings ({exc})")
        if not role:
            params[key] = "true"
            _loud(
                [
                    f"{aws.region} has no API Gateway CloudWatch role (access logs need one):",
                    f"this stack ({options.stack_name}) sets it: ConfigureApiGatewayAccount=true.",
                    "Other stages deploy with the default (false). Delete this stage last,",
                    "or their access logs stop (docs/deploy.md, 'API Gateway logging').",
                ]
            )
    # Somebody must be told when an alarm fires.
    if "AlarmEmail" in declared and not _effective("AlarmEmail", declared, params, previous):
        if _interactive(options):
            email = _ask(options, "email address for alarms (empty: nobody is told): ").strip()
            if email:
                params["AlarmEmail"] = email
                _say(f"alarms go to {email}: confirm the subscription in the email AWS sends")
                return
        _loud(
            [
                "NO ALARM EMAIL: alarms fire into an SNS topic that nobody is subscribed to.",
                "Nobody will be told when runs are lost, the heartbeat stops or the DLQ fills.",
                f'Fix: make deploy STAGE={options.stage} DEPLOY_ARGS="--param '
                'AlarmEmail=ops@example.com"',
            ]
        )


def _read_manifest(aws: _Aws, bucket: str, stage: str) -> list[dict]:
    from botocore.exceptions import ClientError

    try:
        body = aws.client("s3").get_object(Bucket=bucket, Key=_manifest_key(stage))["Body"]
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound"):
            return []
        raise
    return list(json.loads(body.read()).get("releases", []))


def _manifest_key(stage: str) -> str:
    return f"cronhook/{stage}/releases.json"


def _record_release(aws: _Aws, bucket: str, stage: str, release: dict) -> list[dict]:
    """Append ``release``, keep the last ``KEEP_RELEASES``, delete artifacts no one keeps."""
    releases = [*_read_manifest(aws, bucket, stage), release][-KEEP_RELEASES:]
    s3 = aws.client("s3")
    s3.put_object(
        Bucket=bucket,
        Key=_manifest_key(stage),
        Body=json.dumps({"stage": stage, "releases": releases}, indent=1).encode(),
        ContentType="application/json",
    )
    kept = {r[k] for r in releases for k in ("code_key", "template_key")}
    listed = s3.list_objects_v2(Bucket=bucket, Prefix=f"cronhook/{stage}/")
    stale = [
        o["Key"]
        for o in listed.get("Contents", [])
        if o["Key"] not in kept and o["Key"] != _manifest_key(stage)
    ]
    if stale:
        s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in stale]})
    return releases


def _apply(
    aws: _Aws,
    options: DeployOptions,
    *,
    template_url: str,
    parameters: list[dict],
    change_type: str,
) -> str | None:
    """Create the change set, show it, execute it, wait. Returns the final status, or
    None when there was nothing to change or the change set was left for review."""
    cfn = aws.client("cloudformation")
    change_set = f"cronhook-{int(time.time())}"
    _say(f"creating change set {change_set} ({change_type}) for stack {options.stack_name}")
    cfn.create_change_set(
        StackName=options.stack_name,
        ChangeSetName=change_set,
        ChangeSetType=change_type,
        TemplateURL=template_url,
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
            return None
        raise SystemExit(f"change set failed: {reason}")
    for change in described.get("Changes", []):
        rc = change.get("ResourceChange", {})
        _say(
            f"  {rc.get('Action', '?'):8} {rc.get('LogicalResourceId')} ({rc.get('ResourceType')})"
        )
    if not options.execute:
        _say(f"change set {change_set} is ready for review in the console (not executed)")
        return None
    cfn.execute_change_set(StackName=options.stack_name, ChangeSetName=change_set)
    done = "CREATE_COMPLETE" if change_type == "CREATE" else "UPDATE_COMPLETE"
    return _wait(cfn, options.stack_name, poll_s=options.poll_s, ok=(done,))


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
    account = aws.client("sts").get_caller_identity()["Account"]
    _say(f"deploying stage {options.stage} to account {account}, region {aws.region}")

    _check_root_key(aws, _root_key_param(template, options), create=options.create_root_key)
    if "SwitchParameter" in template.get("Parameters", {}):
        switch = options.parameters.get(
            "SwitchParameter", template["Parameters"]["SwitchParameter"]["Default"]
        )
        _ensure_switch(aws, switch)
    bucket = _ensure_bucket(aws, options.bucket)
    code = zip_path.read_bytes()
    code_sha = hashlib.sha256(code).hexdigest()
    code_key = f"cronhook/{options.stage}/{code_sha}.zip"
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
    if status == "ROLLBACK_COMPLETE":
        _delete_failed_stack(cfn, options)
        status = None
    change_type = "CREATE" if status in (None, "REVIEW_IN_PROGRESS") else "UPDATE"
    previous: dict[str, str] = {}
    if change_type == "UPDATE":
        stack = cfn.describe_stacks(StackName=options.stack_name)["Stacks"][0]
        previous = {
            p["ParameterKey"]: p.get("ParameterValue", "") for p in stack.get("Parameters", [])
        }
    declared = template.get("Parameters", {})
    unknown = set(options.parameters) - set(declared)
    if unknown:
        raise SystemExit(f"unknown parameter(s): {', '.join(sorted(unknown))}")
    protect_later = (
        change_type == "CREATE"
        and options.stage in PROTECTED_STAGES
        and "TableDeletionProtection" in declared
        and "TableDeletionProtection" not in options.parameters
    )
    if protect_later:
        # Deletion protection would stop a failed first create from rolling back its tables.
        options.parameters["TableDeletionProtection"] = "false"
    _preflight(aws, options, declared, previous, creating=change_type == "CREATE")
    parameters = []
    for key in declared:
        if key in options.parameters:
            parameters.append({"ParameterKey": key, "ParameterValue": options.parameters[key]})
        elif key in previous:  # as `aws cloudformation deploy`: keep what was deployed
            parameters.append({"ParameterKey": key, "UsePreviousValue": True})
    done = _apply(
        aws,
        options,
        template_url=_template_url(aws, bucket, template_key),
        parameters=parameters,
        change_type=change_type,
    )
    if done is None and not options.execute:
        return {}
    release = {
        "deployed_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "kind": "deploy",
        "code_key": code_key,
        "code_sha256": code_sha,
        "template_key": template_key,
    }
    releases = _read_manifest(aws, bucket, options.stage)
    if not releases or releases[-1]["template_key"] != template_key:
        _record_release(aws, bucket, options.stage, release)
    if protect_later and done is not None:
        _say("turning on the tables' deletion protection now that the stack exists")
        protect = [
            {"ParameterKey": k, "UsePreviousValue": True}
            for k in declared
            if k != "TableDeletionProtection"
        ] + [{"ParameterKey": "TableDeletionProtection", "ParameterValue": "true"}]
        _apply(
            aws,
            options,
            template_url=_template_url(aws, bucket, template_key),
            parameters=protect,
            change_type="UPDATE",
        )
    outputs = _outputs(cfn, options.stack_name)
    _say(f"stack {options.stack_name}: {done or 'unchanged'}")
    for key in sorted(outputs):
        _say(f"  {key}: {outputs[key]}")
    return outputs


def rollback(options: DeployOptions) -> dict:
    """Redeploy the release before the current one (its code and template), parameters kept.

    Returns the release now deployed. The manifest gets a ``rollback`` entry, so a second
    rollback goes one further back, and a later deploy starts from there.
    """
    aws = _Aws(options)
    cfn = aws.client("cloudformation")
    bucket = _ensure_bucket(aws, options.bucket)
    releases = _read_manifest(aws, bucket, options.stage)
    status = _stack_status(cfn, options.stack_name)
    if status is None:
        raise SystemExit(f"stack {options.stack_name} does not exist: nothing to roll back")
    if not status.endswith("_COMPLETE") or status == "ROLLBACK_COMPLETE":
        raise SystemExit(f"stack {options.stack_name} is {status}: cannot roll back now")
    if not releases:
        raise SystemExit(f"no releases recorded in s3://{bucket}/{_manifest_key(options.stage)}")
    current = releases[-1]["template_key"]
    # A release rolled back from (and not deployed again since) is not "good".
    bad: set[str] = set()
    for r in releases:
        if r.get("kind") == "rollback":
            bad.add(r["rolled_back_from"])
        else:
            bad.discard(r["template_key"])
    target = next(
        (
            r
            for r in reversed(releases[:-1])
            if r["template_key"] != current and r["template_key"] not in bad
        ),
        None,
    )
    if target is None:
        raise SystemExit(
            f"no good release before the current one is kept (the last {KEEP_RELEASES} are)"
        )
    stack = cfn.describe_stacks(StackName=options.stack_name)["Stacks"][0]
    old = aws.client("s3").get_object(Bucket=bucket, Key=target["template_key"])["Body"].read()
    declared = json.loads(old).get("Parameters", {})
    # The parameters in place, as far as that release declares them (its own defaults else).
    parameters = [
        {"ParameterKey": p["ParameterKey"], "UsePreviousValue": True}
        for p in stack.get("Parameters", [])
        if p["ParameterKey"] in declared
    ]
    _say(
        f"rolling {options.stack_name} back to the release of {target['deployed_at']} "
        f"(code {target['code_sha256'][:12]})"
    )
    _apply(
        aws,
        options,
        template_url=_template_url(aws, bucket, target["template_key"]),
        parameters=parameters,
        change_type="UPDATE",
    )
    release = {
        **target,
        "kind": "rollback",
        "rolled_back_from": current,
        "deployed_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    _record_release(aws, bucket, options.stage, release)
    return release


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
    parser.add_argument(
        "--delete-failed-stack",
        action="store_true",
        default=None,
        help="delete a ROLLBACK_COMPLETE stack (a failed first create) and create it again",
    )
    parser.add_argument(
        "--rollback",
        action="store_true",
        help="redeploy the release before the current one (make rollback)",
    )
    parser.add_argument("--expand-sam", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--endpoint-url", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    options = DeployOptions(
        stage=args.stage,
        stack_name=args.stack_name,
        region=args.region,
        bucket=args.bucket or os.environ.get("CRONHOOK_ARTIFACT_BUCKET") or None,
        parameters=_parse_params(args.param),
        endpoint_url=args.endpoint_url,
        expand_sam=args.expand_sam,
        execute=not args.no_execute,
        create_root_key=args.create_root_key,
        delete_failed=args.delete_failed_stack,
    )
    if args.rollback:
        rollback(options)
    else:
        deploy(options)
    return 0


if __name__ == "__main__":
    sys.exit(main())
