"""The console view: alarms (with a runbook section each), the dashboard, the metric catalog."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from infra.iam import FUNCTIONS
from infra.monitoring import ALARMS, FORBIDDEN_DIMENSIONS, METRICS
from tests.infra.dashboard_schema import check_dashboard

PROJECT_DIR = Path(__file__).resolve().parents[2]


def _alarms(template: dict) -> dict[str, dict]:
    return {
        k: v["Properties"]
        for k, v in template["Resources"].items()
        if v["Type"] == "AWS::CloudWatch::Alarm"
    }


def test_alarms_cover_every_failure_the_issue_names(packaged):
    alarms = _alarms(packaged.template)
    assert set(alarms) == set(ALARMS)

    def metric(alarm: str) -> tuple:
        a = alarms[alarm]
        assert "Metrics" not in a
        dims = {d["Name"]: d["Value"] for d in a.get("Dimensions", [])}
        return a["Namespace"], a["MetricName"], dims

    assert metric("DeadLetterQueueNotEmpty")[:2] == (
        "AWS/SQS",
        "ApproximateNumberOfMessagesVisible",
    )
    assert metric("DeadLetterQueueNotEmpty")[2]["QueueName"] == {
        "Fn::GetAtt": ["DeadLetterQueue", "QueueName"]
    }
    assert alarms["DeadLetterQueueNotEmpty"]["Threshold"] == 0
    errors = {m["Id"]: m for m in alarms["HeartbeatErrors"]["Metrics"]}
    assert errors["crashed"]["MetricStat"]["Metric"]["MetricName"] == "Errors"
    assert errors["rows"]["MetricStat"]["Metric"]["MetricName"] == "HeartbeatErrors"
    assert errors["rows"]["MetricStat"]["Metric"]["Dimensions"] == [
        {"Name": "service", "Value": "cronhook"},
        {"Name": "stage", "Value": "dev"},
    ]
    assert [m["Id"] for m in errors.values() if m["ReturnData"]] == ["errors"]
    # A killed tick never writes HeartbeatDuration; Lambda's Duration is there for it too.
    slow = {m["Id"]: m for m in alarms["HeartbeatSlow"]["Metrics"]}
    assert slow["lambda"]["MetricStat"]["Metric"]["Namespace"] == "AWS/Lambda"
    assert slow["lambda"]["MetricStat"]["Metric"]["MetricName"] == "Duration"
    assert slow["lambda"]["MetricStat"]["Metric"]["Dimensions"] == [
        {"Name": "FunctionName", "Value": {"Ref": "Heartbeat"}}
    ]
    assert slow["tick"]["MetricStat"]["Metric"]["MetricName"] == "HeartbeatDuration"
    assert "lambda" in slow["slowest"]["Expression"] and "tick" in slow["slowest"]["Expression"]
    assert alarms["HeartbeatSlow"]["Threshold"] == 50_000  # ms
    assert metric("RunsLost") == (
        "cronhook",
        "LeasesReaped",
        {"service": "cronhook", "stage": "dev"},
    )
    assert metric("FiresQueueAgeHigh")[:2] == ("AWS/SQS", "ApproximateAgeOfOldestMessage")
    assert metric("FiresQueueAgeHigh")[2]["QueueName"] == {
        "Fn::GetAtt": ["FiresQueue", "QueueName"]
    }
    throttles = alarms["LambdaThrottles"]["Metrics"]
    watched = {
        m["MetricStat"]["Metric"]["Dimensions"][0]["Value"]["Ref"]
        for m in throttles
        if "MetricStat" in m and m["MetricStat"]["Metric"]["MetricName"] == "Throttles"
    }
    assert watched == set(FUNCTIONS.values())
    assert "HeartbeatErrors" in alarms and "DeadLetterQueueNotEmpty" in alarms
    assert metric("LatenessHigh")[:2] == ("cronhook", "Lateness")
    assert alarms["LatenessHigh"]["ExtendedStatistic"] == "p99"
    assert alarms["LatenessHigh"]["Threshold"] == 10_000  # ms
    # An alarm matches a metric only when it names all of its dimensions.
    assert metric("DisablesByFailures")[2] == {
        "service": "cronhook",
        "stage": "dev",
        "reason": "failures",
    }
    assert metric("LatenessHigh")[2] == {"service": "cronhook", "stage": "dev"}
    assert metric("Api5xx") == (
        "AWS/ApiGateway",
        "5XXError",
        {"ApiName": "cronhook-dev", "Stage": "api"},
    )
    for props in alarms.values():
        assert props["AlarmActions"] == [{"Ref": "AlarmTopic"}]
    subscription = packaged.template["Resources"]["AlarmEmailSubscription"]
    assert subscription["Condition"] == "HasAlarmEmail"
    assert subscription["Properties"]["Endpoint"] == {"Ref": "AlarmEmail"}


def test_every_alarm_has_a_runbook_section(packaged):
    runbook = (PROJECT_DIR / "docs" / "runbook.md").read_text()
    headings = set(re.findall(r"^## (\S+)", runbook, flags=re.MULTILINE))
    assert set(ALARMS) <= headings
    for props in _alarms(packaged.template).values():
        assert "docs/runbook.md" in props["AlarmDescription"]
    # Each section: what it means, the first three things to look at, the command to run.
    sections = re.split(r"^## ", runbook, flags=re.MULTILINE)
    for alarm in ALARMS:
        (section,) = [s for s in sections if s.split(None, 1)[0] == alarm]
        assert "**What it means.**" in section, alarm
        look = section.split("**First three things to look at.**", 1)
        assert len(look) == 2, alarm
        steps = re.findall(r"^(\d)\. \S", look[1].split("**The command.**")[0], re.MULTILINE)
        assert steps == ["1", "2", "3"], (alarm, steps)
        command = section.split("**The command.**", 1)
        assert len(command) == 2 and "```sh\n" in command[1], alarm


def test_cloudwatch_accepts_every_alarm_as_deployed(deployed):
    """moto's CloudFormation skips alarms: put them through the CloudWatch API instead."""
    cloudwatch = deployed.client("cloudwatch")
    for logical in ALARMS:
        props = deployed.resolver.resolve(deployed.expanded["Resources"][logical]["Properties"])
        if "Threshold" in props:
            props["Threshold"] = float(props["Threshold"])
        cloudwatch.put_metric_alarm(**props)  # botocore validates names and types
    names = {a["AlarmName"] for a in cloudwatch.describe_alarms()["MetricAlarms"]}
    assert {f"cronhook-dev-{a}" for a in ALARMS} <= names
    topic = deployed.physical["AlarmTopic"]
    for alarm in cloudwatch.describe_alarms()["MetricAlarms"]:
        assert alarm["AlarmActions"] == [topic]


def test_dashboard_is_valid_json_and_shows_every_metric(deployed):
    body = deployed.resolver.resolve(
        deployed.expanded["Resources"]["Dashboard"]["Properties"]["DashboardBody"]
    )
    doc = json.loads(body)
    assert check_dashboard(doc) == []  # as deployed, with the real names and ARNs
    text = json.dumps(doc)
    for name in METRICS:
        assert f'"{name}"' in text or f'\\"{name}\\"' in text, name
    # DLQ depth comes from AWS/SQS.
    assert deployed.physical["DeadLetterQueue"].rsplit("/", 1)[-1] in text
    alarm_widget = next(w for w in doc["widgets"] if w["type"] == "alarm")
    assert len(alarm_widget["properties"]["alarms"]) == len(ALARMS)
    dashboards = deployed.client("cloudwatch").list_dashboards()["DashboardEntries"]
    assert [d["DashboardName"] for d in dashboards] == ["cronhook-dev"]


def _sub(text: str) -> str:
    """``Fn::Sub`` with placeholder values: the pseudo parameters and resource names."""
    pseudo = {"AWS::Region": "us-east-1", "AWS::AccountId": "123456789012", "AWS::Partition": "aws"}
    return re.sub(r"\$\{([^}!]+)\}", lambda m: pseudo.get(m.group(1), m.group(1).lower()), text)


def test_the_packaged_dashboard_has_the_documented_body_structure(packaged):
    """What CloudWatch receives: every widget, every metrics entry (an array each)."""
    props = packaged.template["Resources"]["Dashboard"]["Properties"]
    body = json.loads(_sub(props["DashboardBody"]["Fn::Sub"]))
    assert check_dashboard(body) == []
    kinds = {w["type"] for w in body["widgets"]}
    assert kinds == {"metric", "text", "alarm"}
    entries = [
        e for w in body["widgets"] if w["type"] == "metric" for e in w["properties"]["metrics"]
    ]
    assert len(entries) > 40
    assert all(isinstance(e, list) for e in entries)
    expressions = [e for e in entries if len(e) == 1]
    assert len(expressions) >= 30  # the SEARCH entries: each [{"expression": ...}]


def test_the_dashboard_checker_refuses_the_shapes_cloudwatch_refuses():
    """The checker is not vacuous: the old bare-object entry (and its kin) are caught."""
    good = {
        "type": "metric",
        "x": 0,
        "y": 0,
        "width": 8,
        "height": 6,
        "properties": {"region": "us-east-1", "metrics": [["AWS/SQS", "NumberOfMessagesSent"]]},
    }
    assert check_dashboard({"widgets": [good]}) == []
    bad_entries = [
        {"expression": "SEARCH('{cronhook} x', 'Sum', 300)", "id": "e0"},  # the shipped bug
        ["AWS/SQS"],  # no metric name
        ["AWS/SQS", "NumberOfMessagesSent", "QueueName"],  # a dimension without value
        [{"label": "no expression"}],
        ["AWS/SQS", "NumberOfMessagesSent", {"stat": "Median"}],
        [{"expression": "m1", "id": "Upper"}],
    ]
    for entry in bad_entries:
        widget = json.loads(json.dumps(good))
        widget["properties"]["metrics"] = [entry]
        assert check_dashboard({"widgets": [widget]}), entry
    no_region = json.loads(json.dumps(good))
    del no_region["properties"]["region"]
    assert check_dashboard({"widgets": [no_region]})
    assert check_dashboard({"widgets": [{**good, "width": 25}]})
    assert check_dashboard({"widgets": [{"type": "alarm", "properties": {"alarms": []}}]})
    assert check_dashboard({"widgets": [{"type": "text", "properties": {}}]})
    assert check_dashboard({"widgets": [{"type": "log", "properties": {}}]})


def _record_metric_calls() -> list[tuple[str, str, tuple[str, ...]]]:
    calls = []
    for path in sorted((PROJECT_DIR / "chalicelib").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "record_metric"):
                continue
            if not node.args or not isinstance(node.args[0], ast.Constant):
                calls.append((str(path), "<not a literal name>", ()))
                continue
            dims = tuple(sorted(k.arg for k in node.keywords if k.arg not in ("unit", None)))
            calls.append((str(path.relative_to(PROJECT_DIR)), node.args[0].value, dims))
    return calls


CALLS = _record_metric_calls()


def test_the_code_emits_metrics():
    assert len(CALLS) >= 10


@pytest.mark.parametrize(("where", "name", "dims"), CALLS)
def test_every_metric_the_code_emits_is_on_the_dashboard(where, name, dims):
    assert name in METRICS, f"{where}: add {name!r} to infra/monitoring_metrics.py METRICS"
    assert tuple(sorted(dims)) in {tuple(sorted(d)) for d in METRICS[name].dims}, (
        f"{where}: {name} with dimensions {dims}: add them to METRICS (the dashboard's searches)"
    )
    assert not FORBIDDEN_DIMENSIONS & set(dims), f"{where}: an id is never a dimension"
