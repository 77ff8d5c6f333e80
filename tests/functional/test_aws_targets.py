"""sqs:, sns:, states: and events: targets, end to end against the moto server.

The runner makes each call under the tenant's session of the target-invoke role (moto's STS
hands out the session; moto does not evaluate IAM, which tests/infra/test_iam.py checks).
"""

from __future__ import annotations

import json

import pytest

from chalicelib import assembly
from chalicelib.domain.errors import ValidationError
from chalicelib.services import triggers
from chalicelib.settings import reset_settings
from chalicelib.store.aws import client
from chalicelib.store.sqs import FireMessage
from chalicelib.workflows import Fire, remote
from chalicelib.workflows.remote.aws_targets import execution_name
from chalicelib.workflows.targets import invoke
from tests.scenarios import fire_next

ACCOUNT = "123456789012"
# A tenant's resources are named cronhook-<stage>-<tenant>-*: stage test, tenant local.
OWN = "cronhook-test-local-"


@pytest.fixture(autouse=True)
def _fresh_sessions(aws):
    remote.reset_clients()
    yield
    remote.reset_clients()


def _queue(name: str, **attributes: str) -> tuple[str, str]:
    url = client("sqs").create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
    arn = client("sqs").get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
    return url, arn["Attributes"]["QueueArn"]


def _messages(url: str) -> list[dict]:
    found = client("sqs").receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
    return found.get("Messages", [])


def _fire_once(aws, clock, root, workflow: str, **body) -> tuple[str, dict]:
    created = triggers.create_trigger(
        root,
        {"workflow": workflow, "schedule": {"interval_s": 60}, "payload": {"n": 1}, **body},
        now=clock(),
    )
    statuses = fire_next(aws, clock, assembly.build_runner(clock=clock))
    run = triggers.list_trigger_runs(root, created["id"], {})["items"][0]
    assert statuses == [run["status"]]
    return created["id"], run


def test_an_sqs_targets_message_arrives_with_the_fire_as_its_body(aws, clock, root):
    url, arn = _queue(f"{OWN}jobs")
    trigger_id, run = _fire_once(aws, clock, root, f"sqs:{arn}")
    assert run["status"] == "succeeded", run
    [message] = _messages(url)
    body = json.loads(message["Body"])
    assert body["trigger_id"] == trigger_id
    assert body["fire_id"] == run["id"]
    assert body["payload"] == {"n": 1}
    assert body["surface"] == "schedule"
    assert run["output"] == {"message_id": message["MessageId"]}


def test_a_fifo_queue_takes_one_fire_once_whatever_sends_it_twice(aws, clock, root):
    url, arn = _queue(f"{OWN}jobs.fifo", FifoQueue="true")
    fire = Fire(
        trigger_id="trg_x", fire_id="trg_x.0000000000060s", scheduled_for=None, surface="schedule"
    )
    for attempt in (1, 2):
        fire.attempt = attempt
        invoke(f"sqs:{arn}", fire, tenant="local")
    assert len(_messages(url)) == 1


def test_an_sns_target_publishes_the_fire(aws, clock, root):
    url, queue_arn = _queue(f"{OWN}inbox")
    topic = client("sns").create_topic(Name=f"{OWN}news")["TopicArn"]
    client("sns").subscribe(
        TopicArn=topic,
        Protocol="sqs",
        Endpoint=queue_arn,
        Attributes={"RawMessageDelivery": "true"},
    )
    trigger_id, run = _fire_once(aws, clock, root, f"sns:{topic}")
    assert run["status"] == "succeeded", run
    [message] = _messages(url)
    assert json.loads(message["Body"])["fire_id"] == run["id"]
    assert set(run["output"]) == {"message_id"}


def _state_machine(name: str) -> str:
    definition = {"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}}
    return client("stepfunctions").create_state_machine(
        name=name,
        definition=json.dumps(definition),
        roleArn=f"arn:aws:iam::{ACCOUNT}:role/cronhook-test-sfn",
    )["stateMachineArn"]


def test_a_states_target_starts_one_execution_named_by_the_fire(aws, clock, root):
    machine = _state_machine(f"{OWN}flow")
    _, run = _fire_once(aws, clock, root, f"states:{machine}")
    assert run["status"] == "succeeded", run
    [execution] = client("stepfunctions").list_executions(stateMachineArn=machine)["executions"]
    assert execution["name"] == execution_name(run["id"])
    assert run["output"]["execution_arn"] == execution["executionArn"]


def test_a_states_target_fired_twice_for_one_slot_starts_one_execution(aws, clock, root):
    """A duplicated message: the runner's fence drops the copy; and even a second start of
    the same fire (a retry after a runner died past StartExecution) is refused by Step
    Functions itself, and the run succeeds naming the one execution."""
    machine = _state_machine(f"{OWN}flow")
    created = triggers.create_trigger(
        root, {"workflow": f"states:{machine}", "schedule": {"interval_s": 60}}, now=clock()
    )
    clock.advance(60)
    assembly.tick(now=clock())
    aws.purge_delays(clock())
    [message] = aws.receive()
    runner = assembly.build_runner(clock=clock)
    body = message["Body"]
    statuses = [runner.handle(FireMessage.parse(body)), runner.handle(FireMessage.parse(body))]
    assert statuses == ["succeeded", "dropped"]
    run_id = FireMessage.parse(body).run_id
    again = Fire(
        trigger_id=created["id"], fire_id=run_id, scheduled_for=None, surface="schedule", attempt=2
    )
    second = invoke(f"states:{machine}", again, tenant="local")
    executions = client("stepfunctions").list_executions(stateMachineArn=machine)["executions"]
    assert [e["name"] for e in executions] == [execution_name(run_id)]
    assert second.output["already_started"] is True
    assert second.output["execution_arn"] == executions[0]["executionArn"]


def test_an_events_target_puts_the_fire_on_the_bus(aws, clock, root):
    url, queue_arn = _queue(f"{OWN}bus-inbox")
    events = client("events")
    events.create_event_bus(Name=f"{OWN}bus")
    events.put_rule(
        Name="to-queue", EventBusName=f"{OWN}bus", EventPattern=json.dumps({"source": ["cronhook"]})
    )
    events.put_targets(
        Rule="to-queue", EventBusName=f"{OWN}bus", Targets=[{"Id": "q", "Arn": queue_arn}]
    )
    _, run = _fire_once(aws, clock, root, f"events:{OWN}bus")
    assert run["status"] == "succeeded", run
    [message] = _messages(url)
    event = json.loads(message["Body"])
    assert event["detail-type"] == "cronhook.fire"
    assert event["detail"]["fire_id"] == run["id"]
    assert run["output"]["event_id"]


def test_an_aws_error_fails_the_run_with_awss_code(aws, clock, root):
    arn = f"arn:aws:sqs:us-east-1:{ACCOUNT}:{OWN}missing"
    _, run = _fire_once(aws, clock, root, f"sqs:{arn}")
    assert run["status"] == "failed"
    assert run["error"].startswith(f"sqs {arn}: ")
    assert "NonExistentQueue" in run["error"] or "QueueDoesNotExist" in run["error"]


@pytest.mark.parametrize(
    ("workflow", "says"),
    [
        (f"sqs:arn:aws:sqs:us-east-1:{ACCOUNT}:orders", "cronhook-test-local-<name>"),
        (f"sqs:arn:aws:sqs:us-east-1:{ACCOUNT}:cronhook-test-acme-jobs", "cronhook-test-local-"),
        (f"sqs:arn:aws:sqs:us-east-1:{ACCOUNT}:cronhook-test-fires", "cronhook's own"),
        ("sqs:https://sqs.us-east-1.amazonaws.com/1/q", "arn:aws:sqs"),
        (f"sns:arn:aws:sqs:us-east-1:{ACCOUNT}:{OWN}x", "arn:aws:sns"),
        (f"states:arn:aws:states:us-east-1:{ACCOUNT}:execution:{OWN}x", "stateMachine"),
        ("events:default", "TargetArns"),
        ("events:bad bus", "bus name"),
    ],
)
def test_a_target_outside_the_tenants_resources_is_a_422_on_workflow(
    aws, clock, root, workflow, says
):
    with pytest.raises(ValidationError) as caught:
        triggers.create_trigger(
            root, {"workflow": workflow, "schedule": {"interval_s": 60}}, now=clock()
        )
    assert caught.value.field == "workflow"
    assert says in str(caught.value)


def test_target_arns_open_more_resources(aws, clock, root, monkeypatch):
    arn = f"arn:aws:events:us-east-1:{ACCOUNT}:event-bus/default"
    with pytest.raises(ValidationError):
        triggers.create_trigger(
            root, {"workflow": f"events:{arn}", "schedule": {"interval_s": 60}}, now=clock()
        )
    monkeypatch.setenv("CRONHOOK_TARGET_ARNS", f"arn:aws:sqs:*:{ACCOUNT}:shared-*, {arn}")
    reset_settings()
    triggers.create_trigger(
        root, {"workflow": f"events:{arn}", "schedule": {"interval_s": 60}}, now=clock()
    )
    triggers.create_trigger(
        root,
        {
            "workflow": f"sqs:arn:aws:sqs:eu-west-1:{ACCOUNT}:shared-jobs",
            "schedule": {"interval_s": 60},
        },
        now=clock(),
    )
    own = f"sqs:arn:aws:sqs:us-east-1:{ACCOUNT}:cronhook-test-fires"
    monkeypatch.setenv("CRONHOOK_TARGET_ARNS", "*")
    reset_settings()
    with pytest.raises(ValidationError):  # never cronhook's own queue
        triggers.create_trigger(
            root, {"workflow": own, "schedule": {"interval_s": 60}}, now=clock()
        )


def test_a_patch_to_an_aws_target_is_checked_as_on_create(aws, clock, root):
    created = triggers.create_trigger(
        root, {"workflow": "echo", "schedule": {"interval_s": 60}}, now=clock()
    )
    with pytest.raises(ValidationError) as caught:
        triggers.patch_trigger(
            root,
            created["id"],
            {
                "version": created["version"],
                "workflow": f"sqs:arn:aws:sqs:us-east-1:{ACCOUNT}:orders",
            },
            now=clock(),
        )
    assert caught.value.field == "workflow"


@pytest.mark.parametrize(
    ("fire_id", "name"),
    [
        ("trg_abc.0000000000060s", "trg_abc.0000000000060s"),
        ("a b:c/d*e", "a-b-c-d-e"),
        ("x" * 100, "x" * 63 + "-" + __import__("hashlib").sha256(b"x" * 100).hexdigest()[:16]),
    ],
)
def test_execution_names_replace_what_step_functions_refuses(fire_id, name):
    assert execution_name(fire_id) == name
    assert len(execution_name(fire_id)) <= 80
