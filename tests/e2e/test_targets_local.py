"""The AWS service targets in the local stack (``make run``): the embedded AWS serves SQS,
SNS, Step Functions and EventBridge, and a fire reaches each through it over real HTTP."""

from __future__ import annotations

import json

import boto3
import pytest

from tests.e2e.conftest import Stack

pytestmark = pytest.mark.e2e

# The local stack's stage is "local" and the root key's tenant is "local".
OWN = "cronhook-local-local-"


def _aws(stack: Stack, service: str):
    return boto3.client(
        service,
        endpoint_url=stack.aws_url,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )


def _fire(stack: Stack, workflow: str) -> dict:
    made = stack.call(
        "POST", "/v1/triggers", {"workflow": workflow, "schedule": {"cron": "0 0 1 1 *"}}
    )
    assert made.status_code == 201, made.text
    trigger_id = made.json()["id"]
    assert stack.call("POST", f"/v1/triggers/{trigger_id}/fire").status_code == 202

    def settled():
        items = stack.call("GET", f"/v1/triggers/{trigger_id}/runs").json()["items"]
        done = [r for r in items if r["status"] not in ("queued", "running")]
        return done[0] if done else None

    return stack.wait_for(settled)


def test_sqs_sns_states_and_events_targets_run_in_the_local_stack(stack):
    sqs = _aws(stack, "sqs")
    url = sqs.create_queue(QueueName=f"{OWN}e2e-jobs")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    run = _fire(stack, f"sqs:{queue_arn}")
    assert run["status"] == "succeeded", run
    body = json.loads(sqs.receive_message(QueueUrl=url, WaitTimeSeconds=2)["Messages"][0]["Body"])
    assert body["fire_id"] == run["id"]

    topic = _aws(stack, "sns").create_topic(Name=f"{OWN}e2e-news")["TopicArn"]
    assert _fire(stack, f"sns:{topic}")["status"] == "succeeded"

    machine = _aws(stack, "stepfunctions").create_state_machine(
        name=f"{OWN}e2e-flow",
        definition=json.dumps({"StartAt": "A", "States": {"A": {"Type": "Pass", "End": True}}}),
        roleArn="arn:aws:iam::123456789012:role/cronhook-local-sfn",
    )["stateMachineArn"]
    run = _fire(stack, f"states:{machine}")
    assert run["status"] == "succeeded", run
    executions = _aws(stack, "stepfunctions").list_executions(stateMachineArn=machine)
    assert [e["executionArn"] for e in executions["executions"]] == [run["output"]["execution_arn"]]

    _aws(stack, "events").create_event_bus(Name=f"{OWN}e2e-bus")
    assert _fire(stack, f"events:{OWN}e2e-bus")["status"] == "succeeded"
