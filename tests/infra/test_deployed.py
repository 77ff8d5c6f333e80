"""The packaged template deployed into moto by ``infra/deploy.py``, and the app run on it."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime

from chalicelib.settings import RUNNER_MAX_CONCURRENCY, queue_visibility_s
from chalicelib.store.tables import ALL_MODELS
from tests.infra.conftest import WORKFLOW
from tests.infra.harness import MOTO_DROPPED, MOTO_UNSUPPORTED, later, utc_now


def test_make_deploy_creates_the_stack_in_moto(deployed):
    cfn = deployed.client("cloudformation")
    (stack,) = cfn.describe_stacks(StackName=deployed.stack_name)["Stacks"]
    assert stack["StackStatus"] == "CREATE_COMPLETE"
    expanded = deployed.expanded["Resources"]
    # Every resource of the expanded template exists, or is a known moto gap, or has a
    # ``Condition`` that is false with the stack's parameters (CloudFormation skips it).
    skipped = {
        logical
        for logical, r in expanded.items()
        if "Condition" in r and not deployed.resolver.condition(r["Condition"])
    }
    missing = {
        (logical, r["Type"])
        for logical, r in expanded.items()
        if not deployed.physical.get(logical)
        and logical not in skipped
        and r["Type"] not in MOTO_UNSUPPORTED | MOTO_DROPPED
    }
    # Lambda permissions have no physical id in moto; they exist all the same.
    assert {kind for _, kind in missing} <= {"AWS::Lambda::Permission"}, missing
    kinds = {r["Type"] for r in expanded.values()}
    assert MOTO_DROPPED <= kinds  # the SAM API became a deployment and a stage
    # One stage, ours: no SAM "Stage" stage without throttling, logs or alarms.
    stages = [r for r in expanded.values() if r["Type"] == "AWS::ApiGateway::Stage"]
    assert [s["Properties"]["StageName"] for s in stages] == ["api"]
    assert "AWS::Lambda::EventSourceMapping" in kinds


def test_functions_point_at_the_resources_the_stack_made(deployed):
    physical = deployed.physical
    for function, config in deployed.functions.configs.items():
        env = config["Environment"]["Variables"]
        assert env["CRONHOOK_QUEUE_URL"] == physical["FiresQueue"], function
        assert env["CRONHOOK_BUCKET"] == physical["PayloadBucket"], function
        assert env["CRONHOOK_KMS_KEY_ID"].endswith(physical["SecretsKey"]), function
        assert env["CRONHOOK_SWITCH_PARAM"] == deployed.outputs["SwitchParameterName"], function
        assert env["CRONHOOK_ROOT_KEY_PARAM"] == "/cronhook/dev/root-key", function
        assert env["CRONHOOK_PUBLIC_URL"] == deployed.outputs["WebhookBaseUrl"], function
        assert env["CRONHOOK_PUBLIC_URL"].startswith(f"https://{physical['RestAPI']}.execute-api.")
        assert config["Role"].split("/")[-1].startswith(f"cronhook-dev-{_role_of(function)}")
    ssm = deployed.client("ssm")
    assert (
        ssm.get_parameter(Name=deployed.outputs["SwitchParameterName"])["Parameter"]["Value"]
        == "on"
    )
    tables = deployed.client("dynamodb").list_tables()["TableNames"]
    assert all(name.startswith("cronhook-dev-") for name in tables) and len(tables) == len(
        ALL_MODELS
    )


def _role_of(function: str) -> str:
    from infra.iam import role_logical_id

    return role_logical_id(function)


def test_every_v1_route_but_the_openapi_document_goes_through_the_authorizer(deployed):
    definition = deployed.functions.api_definition
    (scheme,) = definition["securityDefinitions"].values()
    authorizer = scheme["x-amazon-apigateway-authorizer"]
    assert scheme["name"] == "Authorization" and authorizer["type"] == "token"
    assert authorizer["authorizerResultTtlInSeconds"] == 0  # revocation is immediate
    assert "cronhook-dev-authorizer" in json.dumps(authorizer["authorizerUri"])
    public = {
        ("/healthz", "get"),
        ("/healthz", "head"),
        ("/v1/openapi.json", "get"),
        ("/hooks/{token}", "post"),
        ("/hooks/{token}", "get"),  # LinkedIn's challengeCode: answered by the hook's secret
        ("/", "get"),  # the console's HTML: it signs in with a key of its own
        ("/console/{name}", "get"),
    }
    seen = set()
    for path, operations in definition["paths"].items():
        for method, operation in operations.items():
            if method == "options":
                continue
            seen.add((path, method))
            assert bool(operation.get("security")) == ((path, method) not in public), (path, method)
    assert public <= seen and len(seen) > 20


def test_api_gateway_answers_in_the_contract_shape(deployed, scenario):
    answers = scenario.answers
    status, body = answers["no_key"]
    assert status == 401 and body["error"]["code"] == "unauthorized", body
    assert answers["bad_key"] == (401, body)  # the authorizer ran and refused it
    assert answers["revoked_key"] == (401, body)  # no cached policy: refused at once
    status, body = answers["unknown_route"]
    assert status == 404 and body["error"]["code"] == "not_found", body
    responses = deployed.functions.api_definition["x-amazon-apigateway-gateway-responses"]
    for response_type, entry in responses.items():
        template = entry["responseTemplates"]["application/json"]
        assert template.startswith('{"error": {"code": '), (response_type, template)
    assert {"DEFAULT_4XX", "DEFAULT_5XX", "THROTTLED", "ACCESS_DENIED"} <= set(responses)


def test_runner_mapping_as_created_reports_partial_failures(deployed):
    mapping = deployed.mapping
    queue_arn = deployed.resolver.get_att("FiresQueue", "Arn")
    assert mapping["EventSourceArn"] == queue_arn
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["ScalingConfig"] == {"MaximumConcurrency": RUNNER_MAX_CONCURRENCY}
    assert mapping["BatchSize"] == 10
    attrs = deployed.client("sqs").get_queue_attributes(
        QueueUrl=deployed.physical["FiresQueue"], AttributeNames=["All"]
    )["Attributes"]
    redrive = json.loads(attrs["RedrivePolicy"])
    assert redrive["deadLetterTargetArn"] == deployed.resolver.get_att("DeadLetterQueue", "Arn")
    assert int(redrive["maxReceiveCount"]) >= 5
    runner_timeout = deployed.functions.configs["runner"]["Timeout"]
    # The one derivation shared with the claim's lease (chalicelib/settings.py).
    assert int(attrs["VisibilityTimeout"]) == queue_visibility_s(runner_timeout) > runner_timeout


def _only_future_slots(sqs, queue_url: str, runs: list[dict]) -> None:
    """Every visible message is a scheduled slot after every slot that ran."""
    from chalicelib.store.sqs import FireMessage

    last_ran = max(
        int(datetime.fromisoformat(r["scheduled_for"].replace("Z", "+00:00")).timestamp() * 1000)
        for r in runs
        if r["surface"] == "schedule"
    )
    answer = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, VisibilityTimeout=0)
    for message in answer.get("Messages", []):
        fire = FireMessage.parse(message["Body"])
        assert fire.surface == "schedule" and int(fire.scheduled_ms or 0) > last_ran, fire


def test_heartbeat_and_runner_ran_every_kind_of_fire_on_the_deployed_resources(deployed, scenario):
    by_surface = Counter((r["surface"], r["status"]) for r in scenario.runs)
    # The slots passed while the lost message waited (catch-up ``latest``, the default:
    # the late slot runs once) are recorded ``missed``, never run: after the first run.
    missed = [r for r in scenario.runs if r["status"] == "missed"]
    assert by_surface.pop(("schedule", "missed"), 0) == len(missed) >= 1
    ran = sorted(
        r["scheduled_for"]
        for r in scenario.runs
        if r["surface"] == "schedule" and r["status"] == "succeeded"
    )
    assert all(r["scheduled_for"] > ran[0] and not r["started_at"] for r in missed), missed
    assert by_surface == {
        # The runner claims each slot: a message lost before its claim (the purge) loses
        # nothing, the overdue pass sends it again and it runs late, merged with the slots
        # missed meanwhile (after downtime a trigger fires once; they are recorded missed).
        # And the slot the enqueuer sent when the heartbeat fanned out (step 7).
        ("schedule", "succeeded"): 3,
        ("manual", "succeeded"): 2,  # one by root, one by an operator key (creator re-checked)
        # two webhooks (a small one inline, a large one through S3), two EventBridge
        # events (one large), one inbound mail
        ("event", "succeeded"): 5,
    }, scenario.runs
    large = next(r for r in scenario.runs if r["surface"] == "event" and "blob" in str(r["output"]))
    assert large["status"] == "succeeded"
    for answer in scenario.batch_answers:
        assert answer == {"batchItemFailures": []}
    sqs = deployed.client("sqs")
    for queue in (
        "FiresQueue",
        "DeadLetterQueue",
        "IngestQueue",
        "IngestDeadLetterQueue",
        "TickQueue",
    ):
        attrs = sqs.get_queue_attributes(
            QueueUrl=deployed.physical[queue], AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]
        if queue == "FiresQueue" and attrs["ApproximateNumberOfMessages"] != "0":
            # moto waits out DelaySeconds in real time: on a loaded machine the slot the
            # last heartbeat sent ahead (its lookahead) turns visible before this looks.
            # That one is a future slot of the interval trigger, never one that should
            # have run.
            _only_future_slots(sqs, deployed.physical[queue], scenario.runs)
            continue
        assert attrs["ApproximateNumberOfMessages"] == "0", queue
    s3 = deployed.client("s3")
    stored = s3.list_objects_v2(Bucket=deployed.physical["PayloadBucket"]).get("Contents", [])
    # The large webhook body and the large EventBridge event, and the mail's event (an
    # event item over 1 KB, HOT_ITEM_BYTES, keeps its body in S3: each write of it costs
    # one write unit), encrypted with the stack's key.
    owners = sorted(o["Key"].split("/")[1] for o in stored)
    created = ("create_webhook", "create_eventbridge", "create_email")
    assert owners == sorted(scenario.answers[name][1]["id"] for name in created), owners
    for found in stored:
        head = s3.head_object(Bucket=deployed.physical["PayloadBucket"], Key=found["Key"])
        assert head["ServerSideEncryption"] == "aws:kms"


def test_a_runs_log_lines_come_from_a_logs_insights_query_the_apis_role_may_start(scenario):
    # Scenario step 9; test_iam checks StartQuery and GetQueryResults against the API's
    # deployed role (before, the role had neither and the route answered only a link).
    status, answer = scenario.answers["run_logs"]
    assert status == 200, answer
    assert answer["source"] == "cloudwatch"
    assert answer["complete"] is True, answer  # the query ran to its end
    run_id = scenario.runs[0]["id"]
    assert run_id in answer["query"]
    assert answer["console_url"].startswith("https://"), answer


def test_switch_parameter_off_stops_the_heartbeat_and_on_resumes(deployed, scenario):
    fn = deployed.functions
    auth = {"authorization": f"Bearer {deployed.root_key}"}
    status, created = fn.api(
        "POST",
        "/v1/triggers",
        body={"workflow": WORKFLOW, "title": "switch check", "schedule": {"interval_s": 60}},
        headers=auth,
    )
    assert status == 201, created
    ssm = deployed.client("ssm")
    name = deployed.outputs["SwitchParameterName"]
    sqs = deployed.client("sqs")
    queue_url = deployed.physical["FiresQueue"]

    def queued(*, delayed: bool = False) -> int:
        names = ["ApproximateNumberOfMessages"]
        names += ["ApproximateNumberOfMessagesDelayed"] if delayed else []
        attrs = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=names)["Attributes"]
        return sum(int(attrs[n]) for n in names)

    # The scenario's ticks left delayed messages that turn visible as real time passes
    # (a loaded machine can take a minute to get here): count them all, before and after.
    before = queued(delayed=True)
    start = utc_now()
    try:
        ssm.put_parameter(Name=name, Value="off", Type="String", Overwrite=True)
        fn.heartbeat(now=later(start, 120))
        assert queued(delayed=True) == before  # switched off: the tick sent nothing
    finally:
        ssm.put_parameter(Name=name, Value="on", Type="String", Overwrite=True)
    # The scenario's ticks moved the shard's cursor past this slot: it goes out as overdue,
    # once it is OVERDUE_S (120 s) past due.
    fn.heartbeat(now=later(start, 60 + 120 + 5))
    assert queued() >= 1
    answers = fn.drain_queue(queue_url)
    assert answers and all(a == {"batchItemFailures": []} for a in answers)
    assert fn.api("DELETE", f"/v1/triggers/{created['id']}", headers=auth)[0] == 204
