"""Delivered-source wiring lives in the embedded AWS, not the tables: a restart makes it again."""

from __future__ import annotations

import json

import boto3
import pytest

from tests.e2e.conftest import start_stack, stop_stack

pytestmark = pytest.mark.e2e


def test_an_eventbridge_trigger_still_receives_events_after_a_restart(tmp_path):
    first = start_stack(tmp_path)
    try:
        trigger = first.call(
            "POST",
            "/v1/triggers",
            {
                "workflow": "echo",
                "event": {"source": "eventbridge", "pattern": {"source": ["app"]}},
            },
        ).json()
    finally:
        stop_stack(first)
    second = start_stack(tmp_path)
    try:
        events = boto3.client(
            "events",
            endpoint_url=second.aws_url,
            region_name="us-east-1",
            aws_access_key_id="local",
            aws_secret_access_key="local",
        )
        rules = events.list_rules()["Rules"]
        assert [r["Name"] for r in rules if trigger["id"] in r["Name"]]
        events.put_events(
            Entries=[{"Source": "app", "DetailType": "Ping", "Detail": json.dumps({"n": 1})}]
        )

        def ran():
            runs = second.call("GET", f"/v1/triggers/{trigger['id']}/runs").json()["items"]
            return [r for r in runs if r["status"] == "succeeded"]

        (run,) = second.wait_for(ran, timeout_s=60)
        output = second.call("GET", f"/v1/runs/{run['id']}").json()["output"]
        assert output["detail"] == {"n": 1}
    finally:
        stop_stack(second)
