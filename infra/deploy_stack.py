"""The stack in CloudFormation: its status and events, the first real failure (and a hint),
waiting, change sets, a failed first create deleted, the outputs."""

from __future__ import annotations

import time
from typing import Any

from infra.deploy_options import DeployOptions, _ask, _Aws, _interactive, _say

__all__ = ["CAPABILITIES", "NO_CHANGES", "CONSEQUENCES", "HINTS", "first_failure"]

CAPABILITIES = ["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"]
NO_CHANGES = ("didn't contain changes", "No updates are to be performed")
# Failures that are consequences, not causes: CloudFormation cancels the resources in
# progress when one fails, then deletes everything on rollback.
CONSEQUENCES = ("cancelled", "Resource creation cancelled", "Resource update cancelled")


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


def _change_type(cfn: Any, options: DeployOptions) -> tuple[str, dict[str, str]]:
    """``CREATE`` or ``UPDATE`` (a failed first create deleted first), and the parameters
    the stack has now (none for a create)."""
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
    return change_type, previous


def _protect_tables(aws: _Aws, options: DeployOptions, declared: dict, template_url: str) -> None:
    """A protected stage's first create succeeded: turn the tables' deletion protection on."""
    _say("turning on the tables' deletion protection now that the stack exists")
    protect = [
        {"ParameterKey": k, "UsePreviousValue": True}
        for k in declared
        if k != "TableDeletionProtection"
    ] + [{"ParameterKey": "TableDeletionProtection", "ParameterValue": "true"}]
    _apply(
        aws,
        options,
        template_url=template_url,
        parameters=protect,
        change_type="UPDATE",
    )


def _outputs(cfn: Any, name: str) -> dict[str, str]:
    stack = cfn.describe_stacks(StackName=name)["Stacks"][0]
    return {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}
