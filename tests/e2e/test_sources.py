"""End to end: EventBridge, S3, email and LinkedIn events through the local stack.

Events are sent the way AWS (or LinkedIn) sends them: boto3 against the embedded AWS
(``put_events``, ``put_object``, a multipart upload), ``smtplib`` to the SMTP listener,
and signed POSTs to the hook URL. Each source: a run with the event's payload, a
redelivery that does not run twice, and a filter that keeps an event out.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import smtplib
import uuid
from email.message import EmailMessage

import boto3
import pytest
import requests

pytestmark = pytest.mark.e2e


def _aws(stack, service):
    return boto3.client(
        service,
        endpoint_url=stack.aws_url,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )


def _create(stack, event, **extra):
    created = stack.call("POST", "/v1/triggers", {"workflow": "echo", "event": event, **extra})
    assert created.status_code == 201, created.text
    return created.json()


def _events(stack, trigger_id):
    return stack.call("GET", f"/v1/triggers/{trigger_id}/events").json()["items"]


def _succeeded(stack, trigger_id, count=1):
    def done():
        runs = stack.call("GET", f"/v1/triggers/{trigger_id}/runs").json()["items"]
        ok = [r for r in runs if r["status"] == "succeeded"]
        return ok if len(ok) >= count else None

    return stack.wait_for(done, timeout_s=60)


def _settled_runs(stack, trigger_id):
    return stack.call("GET", f"/v1/triggers/{trigger_id}/runs").json()["items"]


def test_an_eventbridge_event_runs_its_trigger_once_with_the_event_as_aws_sends_it(stack):
    bus = f"orders-{uuid.uuid4().hex[:6]}"
    events = _aws(stack, "events")
    events.create_event_bus(Name=bus)
    trigger = _create(
        stack,
        {
            "source": "eventbridge",
            "bus": bus,
            "pattern": {"source": ["shop.orders"], "detail-type": ["OrderPlaced"]},
            "filter": {"fields": {"detail.region": "eu"}},
        },
    )
    assert trigger["event"]["bus"] == bus
    assert "webhook_url" not in trigger or trigger["webhook_url"] is None

    def put(detail, detail_type="OrderPlaced", source="shop.orders"):
        answer = events.put_events(
            Entries=[
                {
                    "EventBusName": bus,
                    "Source": source,
                    "DetailType": detail_type,
                    "Detail": json.dumps(detail),
                }
            ]
        )
        return answer["Entries"][0]["EventId"]

    event_id = put({"order": 7, "region": "eu"})
    put({"order": 8, "region": "us"})  # the filter keeps it out
    put({"order": 9, "region": "eu"}, detail_type="OrderShipped")  # the pattern does
    run = _succeeded(stack, trigger["id"])[0]
    output = stack.call("GET", f"/v1/runs/{run['id']}").json()["output"]
    assert output["id"] == event_id
    assert set(output) == {
        "version", "id", "detail-type", "source", "account", "time", "region", "resources",
        "detail",
    }  # fmt: skip
    assert output["detail"] == {"order": 7, "region": "eu"}
    assert output["time"].endswith("Z")

    # EventBridge delivers at least once: the same event again is a duplicate.
    sqs = _aws(stack, "sqs")
    queue = sqs.get_queue_url(QueueName="cronhook-ingest")["QueueUrl"]
    sqs.send_message(
        QueueUrl=queue, MessageBody=json.dumps({"trigger_id": trigger["id"], "event": output})
    )
    stack.wait_for(
        lambda: (
            sqs.get_queue_attributes(
                QueueUrl=queue, AttributeNames=["ApproximateNumberOfMessages"]
            )["Attributes"]["ApproximateNumberOfMessages"]
            == "0"
        )
    )
    stored = _events(stack, trigger["id"])
    assert len(stored) == 1
    assert len(_settled_runs(stack, trigger["id"])) == 1


def test_eventbridge_trigger_refuses_a_pattern_eventbridge_would_refuse(stack):
    answer = stack.call(
        "POST",
        "/v1/triggers",
        {"workflow": "echo", "event": {"source": "eventbridge", "pattern": {"source": "x"}}},
    )
    assert answer.status_code == 422
    assert answer.json()["error"]["field"] == "event.pattern.source"
    missing = stack.call(
        "POST", "/v1/triggers", {"workflow": "echo", "event": {"source": "eventbridge"}}
    )
    assert missing.status_code == 422
    assert missing.json()["error"]["field"] == "event.pattern"
    no_bus = {"source": "eventbridge", "bus": "nosuchbus", "pattern": {"source": ["a"]}}
    answer = stack.call("POST", "/v1/triggers", {"workflow": "echo", "event": no_bus})
    assert (answer.status_code, answer.json()["error"]["field"]) == (422, "event.bus")


def test_an_object_created_in_a_bucket_runs_its_trigger_with_its_metadata_not_its_bytes(stack):
    bucket = f"inbox-{uuid.uuid4().hex[:8]}"
    s3 = _aws(stack, "s3")
    s3.create_bucket(Bucket=bucket)
    trigger = _create(stack, {"source": "s3", "bucket": bucket, "prefix": "in/", "suffix": ".csv"})
    s3.put_object(Bucket=bucket, Key="in/skip.txt", Body=b"not csv")  # suffix
    s3.put_object(Bucket=bucket, Key="other/a.csv", Body=b"x")  # prefix
    s3.put_object(Bucket=bucket, Key="in/a.csv", Body=b"a,b\n1,2\n")
    run = _succeeded(stack, trigger["id"])[0]
    output = stack.call("GET", f"/v1/runs/{run['id']}").json()["output"]
    assert output["bucket"] == bucket
    assert output["key"] == "in/a.csv"
    assert output["size"] == 8
    assert output["etag"] == hashlib.md5(b"a,b\n1,2\n").hexdigest()
    assert output["reason"] == "PutObject"
    assert output["sequencer"]
    assert "1,2" not in json.dumps(output)
    assert output["event"]["detail-type"] == "Object Created"

    # A multipart upload is one event (CompleteMultipartUpload), not one per part.
    upload = s3.create_multipart_upload(Bucket=bucket, Key="in/big.csv")
    part = s3.upload_part(
        Bucket=bucket, Key="in/big.csv", UploadId=upload["UploadId"], PartNumber=1, Body=b"z" * 10
    )
    s3.complete_multipart_upload(
        Bucket=bucket,
        Key="in/big.csv",
        UploadId=upload["UploadId"],
        MultipartUpload={"Parts": [{"ETag": part["ETag"], "PartNumber": 1}]},
    )
    runs = _succeeded(stack, trigger["id"], count=2)
    outputs = [stack.call("GET", f"/v1/runs/{r['id']}").json()["output"] for r in runs]
    big = [o for o in outputs if o["key"] == "in/big.csv"]
    assert len(big) == 1 and big[0]["reason"] == "CompleteMultipartUpload"

    # The same event delivered again (same bucket, key and sequencer) does not run again.
    sqs = _aws(stack, "sqs")
    queue = sqs.get_queue_url(QueueName="cronhook-ingest")["QueueUrl"]
    sqs.send_message(
        QueueUrl=queue,
        MessageBody=json.dumps({"trigger_id": trigger["id"], "event": big[0]["event"]}),
    )
    stack.wait_for(
        lambda: (
            sqs.get_queue_attributes(
                QueueUrl=queue, AttributeNames=["ApproximateNumberOfMessages"]
            )["Attributes"]["ApproximateNumberOfMessages"]
            == "0"
        )
    )
    assert len(_events(stack, trigger["id"])) == 2


def _mail(to, *, subject, message_id, sender="Alice <Alice@Example.com>", attach=False):
    message = EmailMessage()
    message["From"] = sender
    message["To"] = to
    message["Subject"] = subject
    message["Message-ID"] = message_id
    message.set_content("Hello,\nplease process the attached report.\n")
    if attach:
        message.add_attachment(
            b"%PDF-1.4 fake", maintype="application", subtype="pdf", filename="report.pdf"
        )
    return message


def test_mail_sent_with_smtplib_runs_an_email_trigger_with_sender_subject_and_attachments(stack):
    address = f"reports-{uuid.uuid4().hex[:6]}@inbox.example.com"
    trigger = _create(
        stack,
        {
            "source": "email",
            "address": address,
            "filter": {"from": "alice@example.com", "subject": "WEEKLY REPORT"},
        },
    )
    message_id = f"<{uuid.uuid4().hex}@example.com>"
    with smtplib.SMTP("127.0.0.1", stack.smtp_port, timeout=30) as smtp:
        smtp.send_message(_mail(address, subject="Other", message_id="<other@example.com>"))
        smtp.send_message(
            _mail(address, subject="Weekly report", message_id=message_id, attach=True)
        )
        # A resend of the same message (same Message-ID) is a duplicate.
        smtp.send_message(
            _mail(address, subject="Weekly report", message_id=message_id, attach=True)
        )
    run = _succeeded(stack, trigger["id"])[0]
    output = stack.call("GET", f"/v1/runs/{run['id']}").json()["output"]
    assert output["message_id"] == message_id
    assert output["from"] == "alice@example.com"
    assert address in output["to"]
    assert output["subject"] == "Weekly report"
    assert "please process" in output["text"]
    assert output["attachments"] == [
        {"filename": "report.pdf", "content_type": "application/pdf", "size": 13}
    ]
    assert "PDF-1.4" not in json.dumps(output)
    assert output["mail"]["commonHeaders"]["messageId"] == message_id
    assert output["receipt"]["action"]["type"] == "S3"

    def three_received():
        sqs = _aws(stack, "sqs")
        queue = sqs.get_queue_url(QueueName="cronhook-ingest")["QueueUrl"]
        left = sqs.get_queue_attributes(
            QueueUrl=queue, AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]["ApproximateNumberOfMessages"]
        objects = _aws(stack, "s3").list_objects_v2(
            Bucket="cronhook-local-mail", Prefix=f"inbound/{trigger['id']}/"
        )
        return left == "0" and objects.get("KeyCount") == 3

    stack.wait_for(three_received)
    assert len(_events(stack, trigger["id"])) == 1  # one filtered out, one duplicate
    assert len(_settled_runs(stack, trigger["id"])) == 1

    # Deleted, its receipt rule goes with it (the embedded SES answered 500 to that).
    rule = f"cronhook-local-{trigger['id']}"
    rules = _aws(stack, "ses").describe_receipt_rule_set(RuleSetName="cronhook-local")["Rules"]
    assert rule in [r["Name"] for r in rules]
    assert stack.call("DELETE", f"/v1/triggers/{trigger['id']}").status_code == 204
    rules = _aws(stack, "ses").describe_receipt_rule_set(RuleSetName="cronhook-local")["Rules"]
    assert rule not in [r["Name"] for r in rules]
    audit = stack.call("GET", f"/v1/audit?trigger_id={trigger['id']}").json()["items"]
    assert "delete" in [entry["action"] for entry in audit]


def _linkedin_sign(secret: str, body: bytes) -> str:
    return hmac.new(secret.encode(), b"hmacsha256=" + body, hashlib.sha256).hexdigest()


def test_linkedin_validates_the_endpoint_and_signed_notifications_run_once(stack):
    secret = "li-client-secret-1234"
    trigger = _create(
        stack,
        {"source": "linkedin", "secret": secret, "filter": {"type": "ORGANIZATION_SOCIAL_ACTION"}},
    )
    url = trigger["webhook"]["url"]
    code = str(uuid.uuid4())
    challenge = requests.get(url, params={"challengeCode": code}, timeout=30)
    assert challenge.status_code == 200
    assert challenge.headers["Content-Type"].startswith("application/json")
    expected = hmac.new(secret.encode(), code.encode(), hashlib.sha256).hexdigest()
    assert challenge.json() == {"challengeCode": code, "challengeResponse": expected}

    def post(doc, *, signature=None):
        body = json.dumps(doc).encode()
        headers = {"Content-Type": "application/json"}
        headers["X-LI-Signature"] = signature or _linkedin_sign(secret, body)
        return requests.post(url, data=body, headers=headers, timeout=30)

    note = {"type": "ORGANIZATION_SOCIAL_ACTION", "notificationId": 901, "action": "COMMENT"}
    assert post(note, signature="0" * 64).status_code == 401
    first = post(note)
    assert first.status_code == 202, first.text
    again = post(note)
    assert again.status_code == 200 and again.json()["duplicate"] is True
    other = post({"type": "LEAD_ACTION", "notificationId": 902})
    assert other.json().get("ignored") == "filter"
    run = _succeeded(stack, trigger["id"])[0]
    assert stack.call("GET", f"/v1/runs/{run['id']}").json()["output"] == note
    assert len(_settled_runs(stack, trigger["id"])) == 1
