"""The local stack's AWS resources in the embedded AWS, and the environment that names them.

Tables, queue (+DLQ), bucket and KMS key come from the same definitions as production;
the delivered sources (EventBridge, S3, email) get their ingest queue, mail bucket and
topic, and SES rule set.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
from pathlib import Path

from chalicelib.settings import default_lookahead_s

__all__ = [
    "local_environment",
    "create_fire_queues",
    "create_sources",
    "resolve_api_key",
    "rewire_sources",
    "TABLE_PREFIX",
    "PAYLOAD_BUCKET",
]

TABLE_PREFIX = "cronhook-local-"
PAYLOAD_BUCKET = "cronhook-local-payloads"


def local_environment(
    *, endpoint: str, public_url: str, heartbeat_s: int, min_interval_s: int, max_concurrency: int
) -> dict[str, str]:
    """The settings every part of the stack reads (``chalicelib.settings``)."""
    return {
        "AWS_ACCESS_KEY_ID": "local",
        "AWS_SECRET_ACCESS_KEY": "local",
        "AWS_DEFAULT_REGION": os.environ.get("AWS_DEFAULT_REGION", "us-east-1"),
        "CRONHOOK_AWS_ENDPOINT": endpoint,
        "CRONHOOK_STAGE": "local",
        "CRONHOOK_TABLE_PREFIX": TABLE_PREFIX,
        "CRONHOOK_PUBLIC_URL": public_url,
        "CRONHOOK_MIN_INTERVAL_S": str(min_interval_s),
        "CRONHOOK_MAX_CONCURRENCY": str(max_concurrency),
        "CRONHOOK_HEARTBEAT_S": str(heartbeat_s),
        "CRONHOOK_LOOKAHEAD_S": str(default_lookahead_s(heartbeat_s)),
    }


def create_fire_queues() -> tuple[str, str]:
    """The fire queue and its dead-letter queue (five receives); their URLs."""
    from chalicelib.store.aws import client

    sqs = client("sqs")
    dlq_url = sqs.create_queue(QueueName="cronhook-fires-dlq")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    queue_url = sqs.create_queue(
        QueueName="cronhook-fires",
        Attributes={
            "VisibilityTimeout": "360",
            "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "5"}),
        },
    )["QueueUrl"]
    return queue_url, dlq_url


def create_sources() -> dict[str, str]:
    """The ingest queue, mail bucket and topic, and SES rule set of the delivered sources."""
    from chalicelib.store.aws import client

    sqs = client("sqs")
    ingest_url = sqs.create_queue(
        QueueName="cronhook-ingest", Attributes={"VisibilityTimeout": "60"}
    )["QueueUrl"]
    ingest_arn = sqs.get_queue_attributes(QueueUrl=ingest_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    client("s3").create_bucket(Bucket="cronhook-local-mail")
    sns = client("sns")
    topic = sns.create_topic(Name="cronhook-local-mail")["TopicArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=ingest_arn)
    ses = client("ses")
    ses.create_receipt_rule_set(RuleSetName="cronhook-local")
    ses.set_active_receipt_rule_set(RuleSetName="cronhook-local")
    return {
        "CRONHOOK_INGEST_QUEUE_URL": ingest_url,
        "CRONHOOK_INGEST_QUEUE_ARN": ingest_arn,
        "CRONHOOK_MAIL_BUCKET": "cronhook-local-mail",
        "CRONHOOK_MAIL_TOPIC_ARN": topic,
        "CRONHOOK_SES_RULE_SET": "cronhook-local",
        # The embedded AWS's buckets are the stack's own: a trigger may wire them.
        "CRONHOOK_WIRE_BUCKETS": "1",
    }


def resolve_api_key(given: str | None, data_dir: Path) -> str:
    """The root key: the one given, else the one kept in the data dir, else a new one (kept)."""
    if given:
        return given
    key_file = data_dir / "api_key"
    if key_file.exists():
        return key_file.read_text().strip()
    key = "chr_" + secrets.token_urlsafe(24)
    data_dir.mkdir(parents=True, exist_ok=True)
    key_file.write_text(key + "\n")
    key_file.chmod(0o600)
    return key


def rewire_sources() -> None:
    """Rules and receipt rules live in the embedded AWS, not the tables: make them again."""
    from chalicelib.sources.wiring import rewire_all

    for trigger_id, problem in rewire_all():
        print(f"trigger {trigger_id}: its event source is not wired: {problem}", file=sys.stderr)
