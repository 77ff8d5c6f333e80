"""``Custom::CronhookTrigger``: the TriggerProvider function driven with CloudFormation's own
request shapes (Create, Update, Delete), answering to a local pre-signed-URL stand-in.

The requests are CloudFormation's as documented ("Custom resource request objects"): every
scalar property arrives as a string, Update carries ``OldResourceProperties`` and the
``PhysicalResourceId`` the last answer gave, Delete the properties of the resource deleted.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import app as app_module
from chalicelib import assembly, wiring
from chalicelib.services import triggers
from chalicelib.services.auth import Principal
from chalicelib.store import trigger_reads

ROOT = Principal("root", "local", "admin")
STACK_ID = "arn:aws:cloudformation:us-east-1:123456789012:stack/reports/5b4b2a30-d1f2-11ee-a1b2-0a1b2c3d4e5f"
TOKEN = "arn:aws:lambda:us-east-1:123456789012:function:cronhook-dev-trigger_provider"
PROPERTIES = {
    "ServiceToken": TOKEN,
    "Key": "weekly-report",
    "workflow": "echo",
    "title": "Weekly report",
    "tags": ["reports"],
    "schedule": {"cron": "0 8 * * 1", "timezone": "Europe/Berlin"},
    # CloudFormation passes every scalar of a custom resource's properties as a string.
    "concurrency": "2",
    "allow_destructive": "false",
    "limits": {"max_usd": "5.5", "max_failures": "3"},
    "state": {"cursor": "0"},
}


class ResponseUrl:
    """The pre-signed S3 URL CloudFormation waits on: records every PUT to it."""

    def __init__(self) -> None:
        self.received: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_PUT(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers["Content-Length"])
                outer.received.append(
                    {
                        "path": self.path,
                        "content_type": self.headers.get("Content-Type"),
                        "body": json.loads(self.rfile.read(length)),
                    }
                )
                self.send_response(200)
                self.end_headers()

            def log_message(self, format: str, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, request_id: str) -> str:
        port = self.server.server_address[1]
        return (
            f"http://127.0.0.1:{port}/arn%3Aaws%3Acloudformation%3Aus-east-1%3A123456789012"
            f"%3Astack/reports/{request_id}?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=ab"
        )


@pytest.fixture
def cfn(aws, clock, monkeypatch):
    monkeypatch.setattr(wiring, "now_utc", clock)
    responses = ResponseUrl()
    responses.thread.start()
    yield responses
    responses.server.shutdown()
    responses.server.server_close()


def request(cfn: ResponseUrl, kind: str, properties: dict, **extra) -> dict:
    """Send one CloudFormation request to the deployed handler; the response it PUT."""
    request_id = f"req-{len(cfn.received) + 1}"
    event = {
        "RequestType": kind,
        "ServiceToken": TOKEN,
        "ResponseURL": cfn.url(request_id),
        "StackId": STACK_ID,
        "RequestId": request_id,
        "ResourceType": "Custom::CronhookTrigger",
        "LogicalResourceId": "WeeklyReportTrigger",
        "ResourceProperties": properties,
        **extra,
    }
    sent = app_module.trigger_provider(event, None)
    assert len(cfn.received) == int(request_id.split("-")[1])
    put = cfn.received[-1]
    assert (
        put["path"].startswith("/arn%3Aaws%3Acloudformation") and "X-Amz-Signature" in put["path"]
    )
    assert put["content_type"] == ""  # the URL is signed without a content type
    assert put["body"] == sent
    body = put["body"]
    assert body["StackId"] == STACK_ID
    assert body["RequestId"] == request_id
    assert body["LogicalResourceId"] == "WeeklyReportTrigger"
    assert body["Status"] in ("SUCCESS", "FAILED")
    assert isinstance(body["PhysicalResourceId"], str) and body["PhysicalResourceId"]
    return body


def tenant_ids(tenant: str = "local") -> list[str]:
    return list(trigger_reads.tenant_trigger_ids(tenant))


def test_create_makes_the_trigger_through_the_routes_code_and_answers_success(cfn):
    body = request(cfn, "Create", PROPERTIES)
    assert body["Status"] == "SUCCESS", body
    assert body["PhysicalResourceId"] == "weekly-report"
    trigger = triggers.get_by_key(ROOT, "weekly-report")
    assert body["Data"] == {"Id": trigger["id"], "Key": "weekly-report", "WebhookUrl": ""}
    assert trigger["managed_by"] == "cloudformation"
    assert trigger["concurrency"] == 2 and trigger["allow_destructive"] is False
    assert trigger["limits"]["max_usd"] == 5.5 and trigger["limits"]["max_failures"] == 3
    assert trigger["state"] == {"cursor": "0"}  # free-form: as CloudFormation sent it
    assert trigger["created_by"] == "cloudformation"


def test_an_update_of_properties_keeps_the_trigger_its_state_and_its_physical_id(cfn, aws, clock):
    created = request(cfn, "Create", {**PROPERTIES, "schedule": {"interval_s": "3600"}})
    runner = assembly.build_runner(clock=clock)
    clock.advance(3600)
    assembly.tick(now=clock())
    assert aws.drain(runner) == ["succeeded"]  # a trigger made by CloudFormation runs
    new = {**PROPERTIES, "schedule": {"interval_s": "7200"}}
    old = {**PROPERTIES, "schedule": {"interval_s": "3600"}}
    body = request(
        cfn, "Update", new, PhysicalResourceId="weekly-report", OldResourceProperties=old
    )
    assert body["Status"] == "SUCCESS", body
    assert body["PhysicalResourceId"] == "weekly-report"  # same id: nothing is replaced
    assert body["Data"]["Id"] == created["Data"]["Id"]
    trigger = triggers.get_by_key(ROOT, "weekly-report")
    assert trigger["schedule"]["interval_s"] == 7200
    assert trigger["run_count"] == 1
    assert tenant_ids() == [created["Data"]["Id"]]


def test_an_update_that_changes_the_key_replaces_and_the_delete_that_follows_removes_the_old(cfn):
    created = request(cfn, "Create", PROPERTIES)
    renamed = {**PROPERTIES, "Key": "weekly-report-v2"}
    body = request(
        cfn, "Update", renamed, PhysicalResourceId="weekly-report", OldResourceProperties=PROPERTIES
    )
    assert body["Status"] == "SUCCESS", body
    assert body["PhysicalResourceId"] == "weekly-report-v2"
    assert body["Data"]["Id"] != created["Data"]["Id"]
    assert len(tenant_ids()) == 2  # the old one stays until CloudFormation deletes it
    # CloudFormation saw a new physical id: it deletes the old resource (its properties).
    gone = request(cfn, "Delete", PROPERTIES, PhysicalResourceId="weekly-report")
    assert gone["Status"] == "SUCCESS", gone
    assert gone["PhysicalResourceId"] == "weekly-report"
    assert tenant_ids() == [body["Data"]["Id"]]


def test_a_failed_create_says_why_and_its_rollback_deletes_nothing(cfn):
    bad = {**PROPERTIES, "schedule": {"cron": "61 8 * * 1"}}
    body = request(cfn, "Create", bad)
    assert body["Status"] == "FAILED"
    assert body["Reason"].startswith("schedule.cron: ")
    assert body["PhysicalResourceId"].startswith("create-failed-")
    assert tenant_ids() == []
    rollback = request(cfn, "Delete", bad, PhysicalResourceId=body["PhysicalResourceId"])
    assert rollback["Status"] == "SUCCESS"


def test_a_create_over_a_key_someone_else_has_fails_and_leaves_theirs(cfn, clock):
    status, made = triggers.put_trigger(
        ROOT,
        "weekly-report",
        {"workflow": "echo", "schedule": {"interval_s": 600}, "managed_by": "apply"},
        now=clock(),
    )
    assert status == 201
    body = request(cfn, "Create", PROPERTIES)
    assert body["Status"] == "FAILED"
    assert body["Reason"].startswith("Key: ") and "managed by apply" in body["Reason"]
    rollback = request(cfn, "Delete", PROPERTIES, PhysicalResourceId=body["PhysicalResourceId"])
    assert rollback["Status"] == "SUCCESS"
    assert tenant_ids() == [made["id"]]


def test_a_failed_update_keeps_the_physical_id_and_the_trigger(cfn):
    created = request(cfn, "Create", PROPERTIES)
    bad = {**PROPERTIES, "concurrency": "many"}
    body = request(
        cfn, "Update", bad, PhysicalResourceId="weekly-report", OldResourceProperties=PROPERTIES
    )
    assert body["Status"] == "FAILED"
    assert body["Reason"].startswith("concurrency: ")
    assert body["PhysicalResourceId"] == "weekly-report"
    assert triggers.get_by_key(ROOT, "weekly-report")["id"] == created["Data"]["Id"]


def test_delete_of_a_trigger_already_gone_succeeds(cfn, clock):
    request(cfn, "Create", PROPERTIES)
    triggers.delete_by_key(ROOT, "weekly-report", now=clock())
    body = request(cfn, "Delete", PROPERTIES, PhysicalResourceId="weekly-report")
    assert body["Status"] == "SUCCESS"


def test_a_webhook_trigger_gives_its_url_to_get_att_and_never_its_secret(cfn):
    hook = {"ServiceToken": TOKEN, "Key": "deploys", "workflow": "echo",
            "event": {"source": "github", "max_attempts": "5"}}  # fmt: skip
    body = request(cfn, "Create", hook)
    assert body["Status"] == "SUCCESS", body
    assert body["Data"]["WebhookUrl"].startswith("http")
    assert "secret" not in json.dumps(body).lower()
    assert triggers.get_by_key(ROOT, "deploys")["event"]["max_attempts"] == 5


def test_a_tenant_property_puts_the_trigger_in_that_tenant(cfn):
    body = request(cfn, "Create", {**PROPERTIES, "Tenant": "acme"})
    assert body["Status"] == "SUCCESS", body
    assert tenant_ids("acme") == [body["Data"]["Id"]] and tenant_ids() == []
    gone = request(
        cfn, "Delete", {**PROPERTIES, "Tenant": "acme"}, PhysicalResourceId="weekly-report"
    )
    assert gone["Status"] == "SUCCESS" and tenant_ids("acme") == []


def test_an_unknown_property_is_refused_naming_it(cfn):
    body = request(cfn, "Create", {**PROPERTIES, "Cadence": "weekly"})
    assert body["Status"] == "FAILED" and body["Reason"].startswith("Cadence: ")
