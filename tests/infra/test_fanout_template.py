"""The heartbeat's fan-out in the stack: the tick queue, the enqueuer, its role, its alarm.

Read from the packaged template (``make package``) and from the stack as deployed into
moto; the scenario's step 7 runs a fanned-out tick through the deployed functions.
"""

from __future__ import annotations

from chalicelib.settings import ENQUEUER_MAX_CONCURRENCY, Settings, queue_visibility_s
from infra.iam import FUNCTIONS
from infra.monitoring import ALARMS, METRICS
from infra.template import MAX_DUE_SHARDS, TICK_RETENTION_S


def _function(packaged, logical: str) -> dict:
    resource = packaged.template["Resources"][logical]
    assert resource["Type"] == "AWS::Serverless::Function"
    return resource["Properties"]


def _statements(packaged, function: str) -> dict[str, dict]:
    role = packaged.template["Resources"][FUNCTIONS[function] + "Role"]
    (policy,) = role["Properties"]["Policies"]
    return {s["Sid"]: s for s in policy["PolicyDocument"]["Statement"]}


def test_fan_out_is_a_stack_parameter_off_by_default_that_every_function_reads(packaged):
    param = packaged.template["Parameters"]["FanOutShards"]
    assert param["Type"] == "Number" and param["MinValue"] == 0
    assert param["MaxValue"] == MAX_DUE_SHARDS
    assert param["Default"] == Settings().fanout_shards == 0  # small stacks: one invocation
    for logical in FUNCTIONS.values():
        env = _function(packaged, logical)["Environment"]["Variables"]
        assert env["CRONHOOK_FANOUT_SHARDS"] == {"Fn::Sub": "${FanOutShards}"}, logical
        assert env["CRONHOOK_TICK_QUEUE_URL"] == {"Ref": "TickQueue"}, logical


def test_the_enqueuer_takes_one_tick_message_at_a_time_from_the_tick_queue(packaged):
    enqueuer = _function(packaged, "Enqueuer")
    source = enqueuer["Events"]["EnqueuerSqsEventSource"]
    assert source["Type"] == "SQS"
    props = source["Properties"]
    assert props["Queue"] == {"Fn::Sub": "${TickQueue.Arn}"}
    assert props["BatchSize"] == 1  # one shard per invocation, with its own deadline
    # One environment per shard of a tick, up to the most shards a stack may name.
    assert props["ScalingConfig"]["MaximumConcurrency"] == ENQUEUER_MAX_CONCURRENCY
    assert ENQUEUER_MAX_CONCURRENCY >= MAX_DUE_SHARDS
    assert enqueuer["Timeout"] <= 60  # a tick's work fits in a tick
    assert enqueuer["Handler"] == "app.enqueuer"
    assert enqueuer["Tracing"] == {"Ref": "FirePathTracing"}  # on the path of every fire


def test_the_tick_queue_outlasts_the_enqueuer_and_keeps_nothing_past_a_few_ticks(packaged):
    queue = packaged.template["Resources"]["TickQueue"]
    assert queue["Type"] == "AWS::SQS::Queue"
    props = queue["Properties"]
    timeout = _function(packaged, "Enqueuer")["Timeout"]
    # AWS refuses a mapping whose queue's visibility is below the function's timeout.
    assert props["VisibilityTimeout"] == queue_visibility_s(timeout) > timeout
    assert props["MessageRetentionPeriod"] == TICK_RETENTION_S <= 300
    assert props["SqsManagedSseEnabled"] is True
    assert "TickQueueUrl" in packaged.template["Outputs"]


def test_only_the_heartbeat_sends_ticks_and_only_the_enqueuer_takes_them(packaged):
    tick_queue = {"Fn::GetAtt": ["TickQueue", "Arn"]}
    for function in FUNCTIONS:
        statements = _statements(packaged, function)
        sends = [s for s in statements.values() if s["Resource"] == tick_queue]
        if function == "heartbeat":
            assert [s["Sid"] for s in sends] == ["SendTicks"]
            assert statements["SendTicks"]["Action"] == ["sqs:SendMessage"]
        elif function == "enqueuer":
            assert [s["Sid"] for s in sends] == ["ConsumeTicks"]
            assert "sqs:SendMessage" not in statements["ConsumeTicks"]["Action"]
        else:
            assert sends == [], function
    enqueuer = _statements(packaged, "enqueuer")
    # It sends fires and moves cursors like the heartbeat; never the API's tables.
    assert enqueuer["SendFires"]["Resource"] == {"Fn::GetAtt": ["FiresQueue", "Arn"]}
    tables = str(enqueuer["WriteTables"]["Resource"])
    assert "TriggersTable" in tables and "KeysTable" not in tables and "AuditTable" not in tables


def test_the_fan_out_has_an_alarm_and_its_metrics_are_drawn(packaged):
    assert "TickQueueAgeHigh" in ALARMS
    alarm = packaged.template["Resources"]["TickQueueAgeHigh"]["Properties"]
    assert alarm["Dimensions"] == [
        {"Name": "QueueName", "Value": {"Fn::GetAtt": ["TickQueue", "QueueName"]}}
    ]
    assert alarm["Threshold"] == 60  # older than a tick: the enqueuers drop it
    for name in ("TicksFannedOut", "TickSendFailed", "TicksDropped", "EnqueuerDuration"):
        assert name in METRICS
    # The enqueuer's crashes count as heartbeat errors; its throttles as throttles.
    errors = packaged.template["Resources"]["HeartbeatErrors"]["Properties"]["Metrics"]
    assert "enqueuers" in {m["Id"] for m in errors}
    throttles = str(packaged.template["Resources"]["LambdaThrottles"]["Properties"]["Metrics"])
    assert "Enqueuer" in throttles


def test_a_fanned_out_tick_ran_through_the_deployed_enqueuer(deployed, scenario):
    """Scenario step 7: the heartbeat sent its shards, the enqueuer sent the due slot."""
    lines = [(f, line) for f, line in scenario.log_lines if f in ("heartbeat", "enqueuer")]
    import json

    summaries = [json.loads(line) for f, line in lines if '"message":"enqueuer"' in line]
    assert summaries, "the deployed enqueuer never ran"
    assert sum(s["enqueued"] for s in summaries) >= 1
    assert all(s["errors"] == 0 for s in summaries)
    fanned = [
        json.loads(line)
        for f, line in lines
        if f == "heartbeat" and '"message":"heartbeat"' in line and '"fanned_out":0' not in line
    ]
    assert fanned and fanned[-1]["fanned_out"] == Settings().due_shards
    attrs = deployed.client("sqs").get_queue_attributes(
        QueueUrl=deployed.outputs["TickQueueUrl"], AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    assert attrs["ApproximateNumberOfMessages"] == "0"
