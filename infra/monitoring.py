"""The console view: a CloudWatch dashboard, alarms and their SNS topic.

``METRICS`` lists every metric the code emits (namespace ``cronhook``; dimensions
``service`` and ``stage`` always, plus the ones named here) and the dashboard widget it
belongs to. ``tests/infra`` scans the code's ``record_metric`` calls and fails if one is
missing here, so the dashboard cannot silently lose a metric. Trigger, run and event ids
are never dimensions: they would make one metric per trigger, and CloudWatch bills per
metric (they ride along as EMF properties instead).

Every alarm has a section of the same name in ``docs/runbook.md``.

``METRICS`` is written in ``infra/monitoring_metrics.py``, the alarms in
``infra/monitoring_alarms.py``, the dashboard in ``infra/monitoring_dashboard.py``; this
module puts them into the template (and every name is importable from here).
"""

from __future__ import annotations

import json

from infra.monitoring_alarms import ALARMS, alarms
from infra.monitoring_alarms import Alarm as Alarm
from infra.monitoring_dashboard import dashboard_body
from infra.monitoring_metrics import (
    BASE_DIMENSIONS,
    FORBIDDEN_DIMENSIONS,
    METRICS,
    Metric,
)
from infra.monitoring_metrics import NAMESPACE as NAMESPACE
from infra.monitoring_metrics import SERVICE as SERVICE

__all__ = [
    "METRICS",
    "ALARMS",
    "BASE_DIMENSIONS",
    "FORBIDDEN_DIMENSIONS",
    "Metric",
    "monitoring_resources",
    "dashboard_body",
]


def monitoring_resources(stage: str, *, api_stage: str) -> dict[str, dict]:
    """The SNS topic (+ optional email subscription), the alarms and the dashboard."""
    resources: dict[str, dict] = {
        "AlarmTopic": {
            "Type": "AWS::SNS::Topic",
            "Properties": {
                "TopicName": f"cronhook-{stage}-alarms",
                "DisplayName": f"cronhook {stage} alarms",
            },
        },
        "AlarmEmailSubscription": {
            "Type": "AWS::SNS::Subscription",
            "Condition": "HasAlarmEmail",
            "Properties": {
                "TopicArn": {"Ref": "AlarmTopic"},
                "Protocol": "email",
                "Endpoint": {"Ref": "AlarmEmail"},
            },
        },
        "Dashboard": {
            "Type": "AWS::CloudWatch::Dashboard",
            "Properties": {
                "DashboardName": f"cronhook-{stage}",
                "DashboardBody": {
                    "Fn::Sub": json.dumps(dashboard_body(stage, api_stage=api_stage))
                },
            },
        },
    }
    for alarm in alarms(stage, api_stage):
        resources[alarm.logical_id] = {
            "Type": "AWS::CloudWatch::Alarm",
            "Properties": alarm.properties,
        }
    return resources
