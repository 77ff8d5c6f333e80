"""Each alert channel against a real receiver: Slack and a webhook on a local HTTP server,
SNS and SES on the moto server (SES as in AWS: a stage that is not local or test)."""

from __future__ import annotations

import json
import time

import pytest

from chalicelib.domain.signatures.standard import verify_standard
from chalicelib.services.alerts import policies
from chalicelib.services.alerts.channels import ChannelFailed, send
from chalicelib.settings import reset_settings
from chalicelib.store import alerts as alert_store
from chalicelib.store import kms
from chalicelib.store.aws import client
from tests.functional.alerts_helpers import Receiver

NOTE = {
    "id": "ntf_1",
    "kind": "disabled",
    "trigger_id": "trg_abc",
    "title": "nightly export",
    "run_id": "trg_abc.1796040060000s",
    "reason": "failures",
    "error": "upstream answered 503",
}


@pytest.fixture
def private_ok(aws, monkeypatch):
    monkeypatch.setenv("CRONHOOK_ALLOW_PRIVATE_TARGETS", "1")
    reset_settings()
    kms.clear_cache()


def _stored(root, policy_id: str) -> dict:
    found = alert_store.get_policy(root.tenant, policy_id)
    assert found is not None
    return found


def test_slack_gets_a_readable_message_naming_trigger_kind_reason_error_and_the_run(
    aws, clock, root, private_ok
):
    with Receiver() as slack:
        created = policies.create_alert(
            root,
            {"name": "ops", "on": ["disabled"],
             "channels": [{"type": "slack", "webhook_url": slack.url + "/services/T/B/x"}]},
            now=clock(),
        )  # fmt: skip
        policy = _stored(root, created["id"])
        send(policy["channels"][0], policy, [NOTE], message_id="ntf_1")
        [(path, headers, body)] = slack.requests
    message = json.loads(body)
    assert path == "/services/T/B/x" and headers["content-type"] == "application/json"
    text = message["text"] + json.dumps(message["blocks"])
    for needle in ("nightly export", "was disabled", "failures", "upstream answered 503",
                   "/#/runs/trg_abc.1796040060000s"):  # fmt: skip
        assert needle in text, needle


def test_a_webhook_is_signed_with_the_policys_secret_and_a_500_is_a_channel_failure(
    aws, clock, root, private_ok
):
    answers = iter([200, 500])
    with Receiver(lambda path, headers, body: next(answers)) as hook:
        created = policies.create_alert(
            root,
            {"name": "ops", "on": ["failed"], "channels": [{"type": "webhook", "url": hook.url}]},
            now=clock(),
        )
        policy = _stored(root, created["id"])
        send(policy["channels"][0], policy, [NOTE], message_id="ntf_1")
        with pytest.raises(ChannelFailed, match="answered 500"):
            send(policy["channels"][0], policy, [NOTE], message_id="ntf_2")
        _, headers, body = hook.requests[0]
    verify_standard([created["signing_secret"]], headers, body, now=time.time())
    assert headers["webhook-id"] == "ntf_1"
    assert json.loads(body)["notifications"][0]["trigger_id"] == "trg_abc"


def test_sns_publishes_the_json_with_a_subject(aws, clock, root):
    sns, sqs = client("sns"), client("sqs")
    topic = sns.create_topic(Name="ops")["TopicArn"]
    inbox = sqs.create_queue(QueueName="ops-inbox")["QueueUrl"]
    inbox_arn = sqs.get_queue_attributes(QueueUrl=inbox, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=inbox_arn)
    created = policies.create_alert(
        root,
        {"name": "ops", "on": ["failed"], "channels": [{"type": "sns", "topic_arn": topic}]},
        now=clock(),
    )
    policy = _stored(root, created["id"])
    send(policy["channels"][0], policy, [NOTE], message_id="ntf_1")
    [received] = sqs.receive_message(QueueUrl=inbox, MaxNumberOfMessages=10)["Messages"]
    envelope = json.loads(received["Body"])
    assert envelope["Subject"].startswith("[cronhook] nightly export was disabled")
    assert json.loads(envelope["Message"])["notifications"][0]["reason"] == "failures"


def test_email_in_aws_goes_through_ses_from_the_alert_sender(aws, clock, root, monkeypatch):
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.ses.models import ses_backends

    client("ses").verify_email_identity(EmailAddress="alerts@example.com")
    created = policies.create_alert(
        root,
        {
            "name": "ops",
            "on": ["failed"],
            "channels": [{"type": "email", "to": ["ops@example.com"]}],
        },
        now=clock(),
    )
    policy = _stored(root, created["id"])
    monkeypatch.setenv("CRONHOOK_STAGE", "dev")  # a deployed stage: SES, not the outbox
    monkeypatch.setenv("CRONHOOK_ALERT_SENDER", "alerts@example.com")
    reset_settings()
    send(policy["channels"][0], policy, [NOTE], message_id="ntf_1")
    [sent] = ses_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].sent_messages
    assert sent.source == "alerts@example.com" and sent.destinations["ToAddresses"] == [
        "ops@example.com"
    ]
    assert "nightly export was disabled" in sent.subject
    # And without a sender, a deployed stage refuses an email channel at create (422).
    monkeypatch.delenv("CRONHOOK_ALERT_SENDER")
    reset_settings()
    from chalicelib.domain.errors import ValidationError

    with pytest.raises(ValidationError) as refused:
        policies.create_alert(
            root,
            {"name": "x", "on": ["failed"], "channels": [{"type": "email", "to": ["a@b.example"]}]},
            now=clock(),
        )
    assert refused.value.field == "channels.0"
