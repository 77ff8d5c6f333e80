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

The steps live in ``infra/deploy_options.py`` (options, prompts, the region),
``infra/deploy_checks.py`` (1 and 4), ``infra/deploy_artifacts.py`` (2 and 6) and
``infra/deploy_stack.py`` (3 and 5); this module runs them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime

from infra.deploy_artifacts import (
    KEEP_RELEASES,
    _ensure_bucket,
    _manifest_key,
    _packaged,
    _read_manifest,
    _record_deploy,
    _record_release,
    _template_url,
    _upload_release,
    expand_sam,
    point_code_at,
)
from infra.deploy_checks import MIN_UNRESERVED as MIN_UNRESERVED
from infra.deploy_checks import RESERVATIONS as RESERVATIONS
from infra.deploy_checks import (
    _check_parameters,
    _ensure_parameters,
    _preflight,
    _stack_parameters,
    check_concurrency,
)
from infra.deploy_options import DeployOptions, _Aws, _say, resolve_region
from infra.deploy_stack import CAPABILITIES as CAPABILITIES
from infra.deploy_stack import CONSEQUENCES as CONSEQUENCES
from infra.deploy_stack import HINTS as HINTS
from infra.deploy_stack import NO_CHANGES as NO_CHANGES
from infra.deploy_stack import (
    _apply,
    _change_type,
    _outputs,
    _protect_tables,
    _stack_status,
    first_failure,
)

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


def deploy(options: DeployOptions) -> dict[str, str]:
    """Deploy the packaged stage; returns the stack's outputs."""
    template, zip_path = _packaged(options)
    aws = _Aws(options)
    cfn = aws.client("cloudformation")
    account = aws.client("sts").get_caller_identity()["Account"]
    _say(f"deploying stage {options.stage} to account {account}, region {aws.region}")

    _ensure_parameters(aws, template, options)
    bucket = _ensure_bucket(aws, options.bucket)
    template, uploaded = _upload_release(aws, options, bucket, template, zip_path)
    template_url = _template_url(aws, bucket, uploaded["template_key"])

    change_type, previous = _change_type(cfn, options)
    declared = template.get("Parameters", {})
    protect_later = _check_parameters(options, declared, change_type)
    _preflight(aws, options, declared, previous, creating=change_type == "CREATE")
    done = _apply(
        aws,
        options,
        template_url=template_url,
        parameters=_stack_parameters(declared, options.parameters, previous),
        change_type=change_type,
    )
    if done is None and not options.execute:
        return {}
    _record_deploy(aws, bucket, options.stage, uploaded)
    if protect_later and done is not None:
        _protect_tables(aws, options, declared, template_url)
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
    target = _rollback_target(releases, current)
    stack = cfn.describe_stacks(StackName=options.stack_name)["Stacks"][0]
    parameters = _parameters_in_place(aws, bucket, target, stack)
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


def _rollback_target(releases: list[dict], current: str) -> dict:
    """The newest good release before the current one."""
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
    return target


def _parameters_in_place(aws: _Aws, bucket: str, target: dict, stack: dict) -> list[dict]:
    old = aws.client("s3").get_object(Bucket=bucket, Key=target["template_key"])["Body"].read()
    declared = json.loads(old).get("Parameters", {})
    # The parameters in place, as far as that release declares them (its own defaults else).
    parameters = [
        {"ParameterKey": p["ParameterKey"], "UsePreviousValue": True}
        for p in stack.get("Parameters", [])
        if p["ParameterKey"] in declared
    ]
    return parameters


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
