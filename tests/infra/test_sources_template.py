"""The template's delivered-source resources: who may send where, and nothing wider."""

from __future__ import annotations

import pytest

from infra.template import merge_template


@pytest.fixture(scope="module")
def resources() -> dict:
    return merge_template("dev")["Resources"]


def _statements(resource: dict) -> list[dict]:
    return resource["Properties"]["PolicyDocument"]["Statement"]


def test_only_this_stages_rules_and_the_mail_topic_may_send_to_the_ingest_queue(resources):
    statements = {s["Sid"]: s for s in _statements(resources["IngestQueuePolicy"])}
    assert set(statements) == {"StageRules", "MailTopic"}
    rules = statements["StageRules"]
    assert rules["Principal"] == {"Service": "events.amazonaws.com"}
    assert rules["Action"] == "sqs:SendMessage"
    arns = [a["Fn::Sub"] for a in rules["Condition"]["ArnLike"]["aws:SourceArn"]]
    assert all(a.endswith("cronhook-dev-*") for a in arns) and len(arns) == 2
    mail = statements["MailTopic"]
    assert mail["Principal"] == {"Service": "sns.amazonaws.com"}
    assert mail["Condition"] == {"ArnEquals": {"aws:SourceArn": {"Ref": "MailTopic"}}}


def test_ses_may_only_store_inbound_mail_and_notify_for_this_account(resources):
    (store,) = _statements(resources["MailBucketPolicy"])
    assert store["Action"] == "s3:PutObject"
    assert store["Resource"] == {"Fn::Sub": "${MailBucket.Arn}/inbound/*"}
    assert store["Condition"] == {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}}
    (notify,) = _statements(resources["MailTopicPolicy"])
    assert (
        notify["Action"] == "sns:Publish" and notify["Principal"]["Service"] == "ses.amazonaws.com"
    )
    rule = resources["MailBucket"]["Properties"]["LifecycleConfiguration"]["Rules"][0]
    assert rule["Prefix"] == "inbound/" and rule["ExpirationInDays"] >= 1


def test_the_mail_topic_feeds_the_ingest_queue_and_the_ingest_function_consumes_it(resources):
    sub = resources["MailTopicToIngest"]["Properties"]
    assert sub["Protocol"] == "sqs"
    assert sub["Endpoint"] == {"Fn::GetAtt": ["IngestQueue", "Arn"]}
    source = resources["Ingest"]["Properties"]["Events"]["IngestSqsEventSource"]["Properties"]
    assert source["Queue"] == {"Fn::Sub": "${IngestQueue.Arn}"}
    assert source["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    ingest = resources["IngestQueue"]["Properties"]
    assert ingest["RedrivePolicy"]["deadLetterTargetArn"] == {
        "Fn::GetAtt": ["IngestDeadLetterQueue", "Arn"]
    }
    assert resources["ReceiptRuleSet"]["Properties"]["RuleSetName"] == "cronhook-dev"


def test_the_owned_inbox_bucket_sends_its_events_to_eventbridge(resources):
    config = resources["InboxBucket"]["Properties"]["NotificationConfiguration"]
    assert config == {"EventBridgeConfiguration": {"EventBridgeEnabled": True}}


def _policy(resources: dict, role: str) -> dict:
    return {
        s["Sid"]: s
        for s in resources[role]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
    }


def test_only_the_api_manages_rules_and_only_this_stages(resources):
    api = _policy(resources, "APIHandlerRole")
    rules = api["SourceRules"]
    assert all(r["Fn::Sub"].endswith("cronhook-dev-*") for r in rules["Resource"])
    assert api["MailRules"]["Action"] == ["ses:CreateReceiptRule", "ses:DeleteReceiptRule"]
    for role in ("RunnerRole", "HeartbeatRole", "AuthorizerRole", "IngestRole"):
        granted = _policy(resources, role)
        assert "SourceRules" not in granted and "MailRules" not in granted, role


def test_the_ingest_role_reads_only_inbound_mail_and_writes_only_what_ingress_writes(resources):
    ingest = _policy(resources, "IngestRole")
    assert ingest["InboundMail"]["Action"] == ["s3:GetObject"]
    assert ingest["InboundMail"]["Resource"] == {"Fn::Sub": "${MailBucket.Arn}/inbound/*"}
    tables = {r["Fn::GetAtt"][0] for r in ingest["WriteTables"]["Resource"] if "Fn::GetAtt" in r}
    assert tables == {"TriggersTable", "EventsTable"}
    assert "WorkflowSecrets" not in ingest and "WorkflowFunctions" not in ingest
