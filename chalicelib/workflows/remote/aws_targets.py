"""AWS service targets: ``sqs:``, ``sns:``, ``states:`` and ``events:``.

Each sends the fire as JSON (``Fire.to_json()``, the body ``lambda:`` and ``http:`` get):

- ``sqs:<queue-arn>``: ``SendMessage``, the fire as the body. On a FIFO queue the group is
  the trigger and the deduplication id the fire id, so SQS itself drops a second send of
  one fire within its five-minute window.
- ``sns:<topic-arn>``: ``Publish``, the fire as the message (FIFO topics: as SQS).
- ``states:<state-machine-arn>``: ``StartExecution`` named by the fire id (``execution_name``),
  the fire as the input. A second start of one fire is refused by Step Functions itself
  (``ExecutionAlreadyExists``, or the running execution handed back when the input is the
  same): the run then succeeds with that execution, ``already_started: true``. One slot,
  one execution, whatever a duplicated message does.
- ``events:<bus-name-or-arn>``: ``PutEvents``, source ``cronhook``, detail-type
  ``cronhook.fire``, the fire as the detail; a failed entry fails the run with its code.

The run's ``output`` names what was made (``message_id``, ``execution_arn``, ``event_id``),
and an AWS error fails the run with AWS's code and message, as ``lambda:`` does.

**Which resources.** A tenant's are named ``cronhook-<stage>-<tenant>-*`` (the same fence as
``lambda:`` targets); the stack parameter ``TargetArns`` (``CRONHOOK_TARGET_ARNS``) lists
more ARNs, ``*`` allowed. Anything else is a 422 on create. cronhook's own queues and topics
are never targets. The calls are made under the tenant's session of the target-invoke role
(``lambda_target.tenant_service_client``), which IAM lets reach exactly those resources.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from chalicelib.settings import get_settings
from chalicelib.workflows.model import Fire, WorkflowFailed
from chalicelib.workflows.remote.answers import fire_body

__all__ = [
    "AWS_KINDS",
    "AwsTarget",
    "parse_aws_target",
    "check_aws_target",
    "execution_name",
    "invoke_aws",
    "OWN_RESOURCES",
]

AWS_KINDS = ("sqs", "sns", "states", "events")
_SERVICES = {"sqs": "sqs", "sns": "sns", "states": "stepfunctions", "events": "events"}
# cronhook's own queues and topics (infra/): never a target, whatever TargetArns says.
OWN_RESOURCES = ("fires", "fires-dlq", "ticks", "ingest", "ingest-dlq", "mail", "alarms")
_ARN = re.compile(r"arn:(aws[a-z-]*):([a-z]+):([a-z0-9-]+):(\d{12}):(.+)")
_NAMES = {
    "sqs": re.compile(r"[A-Za-z0-9_-]{1,75}(\.fifo)?|[A-Za-z0-9_-]{1,80}"),
    "sns": re.compile(r"[A-Za-z0-9_-]{1,251}(\.fifo)?|[A-Za-z0-9_-]{1,256}"),
    "states": re.compile(r"[A-Za-z0-9_-]{1,80}"),
    "events": re.compile(r"[A-Za-z0-9._/-]{1,256}"),
}
_SHAPES = {
    "sqs": "arn:aws:sqs:<region>:<account>:<queue>",
    "sns": "arn:aws:sns:<region>:<account>:<topic>",
    "states": "arn:aws:states:<region>:<account>:stateMachine:<name>",
    "events": "a bus name, or arn:aws:events:<region>:<account>:event-bus/<name>",
}
# Characters Step Functions refuses in an execution name (StartExecution's "name").
_NOT_IN_NAMES = re.compile(r"[\s<>{}\[\]?*\"#%\\^|~`$&,;:/\x00-\x1f\x7f-\x9f]")
_MAX_EXECUTION_NAME = 80
EVENT_SOURCE = "cronhook"
EVENT_DETAIL_TYPE = "cronhook.fire"


@dataclass(frozen=True)
class AwsTarget:
    """A parsed target: its kind, resource name and, where given, ARN parts."""

    kind: str
    name: str
    arn: str | None = None
    region: str | None = None
    account: str | None = None


def parse_aws_target(kind: str, spec: str) -> AwsTarget | None:
    """The target ``<kind>:<spec>`` parsed, or None if it is not of its kind's shape."""
    match = _ARN.fullmatch(spec)
    if match is None:
        if kind == "events" and _NAMES["events"].fullmatch(spec):
            return AwsTarget(kind, spec)  # a bus in the stack's own account and region
        return None
    _, service, region, account, resource = match.groups()
    prefix = {"sqs": "", "sns": "", "states": "stateMachine:", "events": "event-bus/"}[kind]
    if service != kind or not resource.startswith(prefix):
        return None
    name = resource[len(prefix) :]
    if not _NAMES[kind].fullmatch(name):
        return None
    return AwsTarget(kind, name, arn=spec, region=region, account=account)


def check_aws_target(kind: str, spec: str, *, tenant: str) -> str | None:
    """Why ``<kind>:<spec>`` may not be one of ``tenant``'s targets, or None if it may."""
    target = parse_aws_target(kind, spec)
    if target is None:
        return f"a {kind}: target is {_SHAPES[kind]} (got {spec!r})"
    stage = get_settings().stage
    if target.name in {f"cronhook-{stage}-{own}" for own in OWN_RESOURCES}:
        return f"{target.name} is cronhook's own; it cannot be a target"
    prefix = f"cronhook-{stage}-{tenant}-"
    if target.name.startswith(prefix) and len(target.name) > len(prefix):
        return None
    listed = get_settings().target_arns
    if target.arn is not None and any(fnmatch.fnmatchcase(target.arn, p) for p in listed):
        return None
    return (
        f"a {kind}: target of tenant {tenant!r} must be named {prefix}<name>, or be an ARN "
        f"the stack lists in TargetArns (got {target.name!r})"
    )


def execution_name(fire_id: str) -> str:
    """The fire id as a Step Functions execution name: refused characters become ``-``;
    a name over 80 characters keeps its start and a hash of the whole."""
    name = _NOT_IN_NAMES.sub("-", fire_id)
    if len(name) <= _MAX_EXECUTION_NAME:
        return name
    digest = hashlib.sha256(fire_id.encode("utf-8")).hexdigest()[:16]
    return f"{name[: _MAX_EXECUTION_NAME - 17]}-{digest}"


def _dedupe_id(fire_id: str) -> str:
    # SQS/SNS: up to 128 characters of alphanumerics and punctuation; a fire id fits.
    return re.sub(r"[^!-~]", "-", fire_id)[:128]


def invoke_aws(kind: str, spec: str, fire: Fire, *, tenant: str) -> dict:
    """Send the fire to an AWS target as ``tenant``; the run's answer (``output``)."""
    from chalicelib.workflows.remote.lambda_target import tenant_service_client

    problem = check_aws_target(kind, spec, tenant=tenant)
    if problem is not None:  # stored before the fence, or a TargetArns entry since removed
        raise WorkflowFailed(f"{kind} target refused: {problem}"[:1000])
    target = parse_aws_target(kind, spec)
    assert target is not None
    client = tenant_service_client(tenant, _SERVICES[kind])
    try:
        return {"output": _SENDERS[kind](client, target, fire)}
    except ClientError as exc:
        error = exc.response.get("Error", {})
        code, message = error.get("Code", "Error"), error.get("Message", "")
        raise WorkflowFailed(f"{kind} {spec}: {code}: {message}"[:1000]) from None
    except BotoCoreError as exc:
        raise WorkflowFailed(f"{kind} {spec}: {type(exc).__name__}: {exc}"[:1000]) from None


def _send_sqs(client: Any, target: AwsTarget, fire: Fire) -> dict:
    url = client.get_queue_url(
        QueueName=target.name,
        **({"QueueOwnerAWSAccountId": target.account} if target.account else {}),
    )["QueueUrl"]
    params: dict[str, Any] = {
        "QueueUrl": url,
        "MessageBody": fire_body(fire).decode("utf-8"),
        "MessageAttributes": {
            "cronhook-fire-id": {"DataType": "String", "StringValue": fire.fire_id}
        },
    }
    if target.name.endswith(".fifo"):
        params["MessageGroupId"] = fire.trigger_id
        params["MessageDeduplicationId"] = _dedupe_id(fire.fire_id)
    answer = client.send_message(**params)
    return {"message_id": answer["MessageId"]}


def _send_sns(client: Any, target: AwsTarget, fire: Fire) -> dict:
    params: dict[str, Any] = {
        "TopicArn": target.arn,
        "Message": fire_body(fire).decode("utf-8"),
        "MessageAttributes": {
            "cronhook-fire-id": {"DataType": "String", "StringValue": fire.fire_id}
        },
    }
    if target.name.endswith(".fifo"):
        params["MessageGroupId"] = fire.trigger_id
        params["MessageDeduplicationId"] = _dedupe_id(fire.fire_id)
    return {"message_id": client.publish(**params)["MessageId"]}


def _start_execution(client: Any, target: AwsTarget, fire: Fire) -> dict:
    name = execution_name(fire.fire_id)
    try:
        answer = client.start_execution(
            stateMachineArn=target.arn, name=name, input=fire_body(fire).decode("utf-8")
        )
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "ExecutionAlreadyExists":
            raise
        # This fire was started before (a duplicated message, a retry after a crash):
        # Step Functions refused the second start, so the one execution stands.
        arn = str(target.arn).replace(":stateMachine:", ":execution:", 1) + f":{name}"
        return {"execution_arn": arn, "execution_name": name, "already_started": True}
    return {"execution_arn": answer["executionArn"], "execution_name": name}


def _put_event(client: Any, target: AwsTarget, fire: Fire) -> dict:
    answer = client.put_events(
        Entries=[
            {
                "Source": EVENT_SOURCE,
                "DetailType": EVENT_DETAIL_TYPE,
                "Detail": json.dumps(fire.to_json(), separators=(",", ":"), default=str),
                "EventBusName": target.arn or target.name,
                "Resources": [],
            }
        ]
    )
    entry = (answer.get("Entries") or [{}])[0]
    if answer.get("FailedEntryCount") or entry.get("ErrorCode"):
        raise WorkflowFailed(
            f"events {target.arn or target.name}: {entry.get('ErrorCode', 'Failed')}: "
            f"{entry.get('ErrorMessage', '')}"[:1000]
        )
    return {"event_id": entry.get("EventId")}


_SENDERS = {
    "sqs": _send_sqs,
    "sns": _send_sns,
    "states": _start_execution,
    "events": _put_event,
}
