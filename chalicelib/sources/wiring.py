"""The AWS wiring that sends a delivered-source trigger its events, made on create.

- ``eventbridge``: a rule on the trigger's bus with its pattern; one target, the ingest
  queue, through an input transformer that wraps the event as AWS sends it with the
  trigger's id: ``{"trigger_id": "trg_...", "event": <aws.events.event.json>}``. The
  rule matches, so an event that does not match never costs an ingest.
- ``s3``: the same rule and target on the default bus, with the pattern of S3's "Object
  Created" events for the bucket and prefix (and the suffix when there is no prefix: a
  pattern cannot ask both of one field; ingest checks both). A bucket the stack owns is
  switched to send its events to EventBridge (``wire_buckets``, the local stack; in AWS
  the template does it); any other bucket needs that one setting (docs/providers/s3.md).
- ``email``: a SES receipt rule for the address in the stack's rule set: store the
  message in the mail bucket under ``inbound/<trigger id>/`` and notify the mail topic,
  which feeds the ingest queue. The key prefix tells ingest which trigger it is for.

Names are ``cronhook-<stage>-<trigger id>``, so the IAM policy can be scoped to them.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from chalicelib.domain.errors import ServiceUnavailable, ValidationError
from chalicelib.domain.filter_ops import validate_operator
from chalicelib.domain.records import Trigger
from chalicelib.domain.trigger_spec import TriggerSpec
from chalicelib.observability import logger
from chalicelib.settings import get_settings
from chalicelib.store import trigger_reads
from chalicelib.store.aws import client

if TYPE_CHECKING:  # the request models load pydantic: not on the ingest path (cold start)
    from chalicelib.domain.spec import EventIn

__all__ = [
    "rule_name",
    "mail_prefix",
    "s3_pattern",
    "validate_pattern",
    "provision",
    "unprovision",
    "TARGET_ID",
]

TARGET_ID = "cronhook-ingest"
_PATTERN_MAX_BYTES = 4096
_PATTERN_OPERATORS = frozenset(
    {
        "prefix",
        "suffix",
        "anything-but",
        "numeric",
        "exists",
        "equals-ignore-case",
        "cidr",
        "wildcard",
    }
)


def rule_name(trigger_id: str) -> str:
    """The EventBridge rule (and SES receipt rule) of a trigger."""
    return f"cronhook-{get_settings().stage}-{trigger_id}"


def mail_prefix(trigger_id: str) -> str:
    """Where SES stores a trigger's messages in the mail bucket."""
    return f"inbound/{trigger_id}/"


def s3_pattern(bucket: str, prefix: str | None, suffix: str | None) -> dict:
    """The EventBridge pattern of S3 "Object Created" events for a bucket and key filter."""
    detail: dict[str, Any] = {"bucket": {"name": [bucket]}}
    if prefix:
        detail["object"] = {"key": [{"prefix": prefix}]}
    elif suffix:
        detail["object"] = {"key": [{"suffix": suffix}]}
    return {"source": ["aws.s3"], "detail-type": ["Object Created"], "detail": detail}


def validate_pattern(pattern: dict) -> None:
    """An EventBridge event pattern's shape: 422 ``event.pattern`` naming what is wrong.

    EventBridge's rules: a pattern is a JSON object; every leaf is a non-empty array of
    values (strings, numbers, null, or one-key operator objects like {"prefix": "x"});
    ``$or`` holds a list of patterns. EventBridge itself checks the rest on PutRule.
    """
    if not isinstance(pattern, dict) or not pattern:
        raise ValidationError("event.pattern must be a non-empty object", field="event.pattern")
    if len(json.dumps(pattern)) > _PATTERN_MAX_BYTES:
        raise ValidationError(
            f"event.pattern is larger than {_PATTERN_MAX_BYTES} bytes", field="event.pattern"
        )
    _check_node(pattern, "event.pattern")


def _check_node(node: dict, path: str) -> None:
    for key, value in node.items():
        where = f"{path}.{key}"
        if key == "$or":
            if not isinstance(value, list) or len(value) < 2:
                raise ValidationError("$or needs a list of at least two patterns", field=where)
            for i, option in enumerate(value):
                if not isinstance(option, dict) or not option:
                    raise ValidationError("each $or option is a pattern object", field=where)
                _check_node(option, f"{where}.{i}")
        elif isinstance(value, dict):
            if not value:
                raise ValidationError("an empty object matches nothing", field=where)
            _check_node(value, where)
        elif isinstance(value, list):
            if not value:
                raise ValidationError("an empty list matches nothing", field=where)
            for item in value:
                if isinstance(item, dict):
                    if len(item) != 1 or next(iter(item)) not in _PATTERN_OPERATORS:
                        names = ", ".join(sorted(_PATTERN_OPERATORS))
                        raise ValidationError(
                            f"a matcher object has one key, one of {names}", field=where
                        )
                    # Its argument too, by EventBridge's rules (the filters' own check):
                    # PutRule refuses a malformed one in AWS, the embedded AWS does not.
                    validate_operator(item, where)
                elif not (item is None or isinstance(item, str | int | float)):
                    raise ValidationError("values are strings, numbers or null", field=where)
        else:
            raise ValidationError(
                'each value is a list of what to match (e.g. ["a", "b"]) or an object',
                field=where,
            )


def _require(value: str | None, what: str) -> str:
    if not value:
        raise ServiceUnavailable(f"{what} is not configured in this stage")
    return value


def _aws(call: Any, *, field: str, **kwargs: Any) -> Any:
    """One AWS call; a refusal of what the client sent is a 422 on ``field``."""
    try:
        return call(**kwargs)
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        message = exc.response.get("Error", {}).get("Message", code)
        if code == "ResourceNotFoundException" and field == "event.pattern":
            field = "event.bus"  # the rule's bus does not exist (the pattern was fine)
        if code in (
            "InvalidEventPatternException",
            "ValidationException",
            "ResourceNotFoundException",
            "InvalidParameterValue",
            "NoSuchBucket",
            "InvalidS3Configuration",
        ):
            raise ValidationError(f"AWS refused it: {message}", field=field) from None
        raise ServiceUnavailable(f"AWS could not wire the trigger ({code}); try again") from None
    except BotoCoreError:
        raise ServiceUnavailable("AWS could not wire the trigger; try again") from None


def _put_rule(trigger_id: str, *, bus: str, pattern: dict, field: str) -> None:
    settings = get_settings()
    queue_arn = _require(settings.ingest_queue_arn, "the ingest queue")
    events = client("events")
    name = rule_name(trigger_id)
    _aws(
        events.put_rule,
        field=field,
        Name=name,
        EventBusName=bus,
        EventPattern=json.dumps(pattern, separators=(",", ":")),
        State="ENABLED",
        Description=f"cronhook trigger {trigger_id}",
    )
    # The trigger id is a literal in the template: [a-z0-9_] only (ids.new_trigger_id).
    template = '{"trigger_id": "' + trigger_id + '", "event": <aws.events.event.json>}'
    answer = _aws(
        events.put_targets,
        field=field,
        Rule=name,
        EventBusName=bus,
        Targets=[
            {
                "Id": TARGET_ID,
                "Arn": queue_arn,
                "InputTransformer": {"InputPathsMap": {}, "InputTemplate": template},
            }
        ],
    )
    if answer.get("FailedEntryCount"):
        _delete_rule(name, bus=bus)
        raise ServiceUnavailable("EventBridge refused the rule's target; try again")


def _delete_rule(name: str, *, bus: str) -> None:
    events = client("events")
    try:
        events.remove_targets(Rule=name, EventBusName=bus, Ids=[TARGET_ID])
        events.delete_rule(Name=name, EventBusName=bus)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
            raise


def _wire_bucket(bucket: str) -> None:
    """Switch an owned bucket's events to EventBridge, keeping its other notifications."""
    s3 = client("s3")
    current = _aws(s3.get_bucket_notification_configuration, field="event.bucket", Bucket=bucket)
    current.pop("ResponseMetadata", None)
    if "EventBridgeConfiguration" in current:
        return
    current["EventBridgeConfiguration"] = {}
    _aws(
        s3.put_bucket_notification_configuration,
        field="event.bucket",
        Bucket=bucket,
        NotificationConfiguration=current,
    )


def provision(trigger_id: str, event: EventIn) -> None:
    """Create what sends this trigger its events (before the trigger is stored)."""
    settings = get_settings()
    if event.source == "eventbridge":
        validate_pattern(event.pattern or {})
        _put_rule(
            trigger_id,
            bus=event.bus or "default",
            pattern=event.pattern or {},
            field="event.pattern",
        )
    elif event.source == "s3":
        assert event.bucket is not None
        if settings.wire_buckets:
            _wire_bucket(event.bucket)
        pattern = s3_pattern(event.bucket, event.prefix, event.suffix)
        _put_rule(trigger_id, bus="default", pattern=pattern, field="event.bucket")
    elif event.source == "email":
        _put_receipt_rule(trigger_id, address=event.address or "")
    logger.info("event source wired", extra={"trigger_id": trigger_id, "source": event.source})


def _put_receipt_rule(trigger_id: str, *, address: str) -> None:
    settings = get_settings()
    rule_set = _require(settings.ses_rule_set, "the SES receipt rule set")
    bucket = _require(settings.mail_bucket, "the mail bucket")
    topic = _require(settings.mail_topic_arn, "the mail topic")
    _aws(
        client("ses").create_receipt_rule,
        field="event.address",
        RuleSetName=rule_set,
        Rule={
            "Name": rule_name(trigger_id),
            "Enabled": True,
            "TlsPolicy": "Optional",
            "Recipients": [address],
            "ScanEnabled": True,
            "Actions": [
                {
                    "S3Action": {
                        "BucketName": bucket,
                        "ObjectKeyPrefix": mail_prefix(trigger_id),
                        "TopicArn": topic,
                    }
                }
            ],
        },
    )


def unprovision(item: Trigger) -> None:
    """Remove a deleted trigger's wiring; a failure is logged, never raised (it is deleted)."""
    event = TriggerSpec.from_json(item.spec).event or {}
    source = event.get("source")
    try:
        if source == "eventbridge":
            _delete_rule(rule_name(item.id), bus=event.get("bus") or "default")
        elif source == "s3":
            _delete_rule(rule_name(item.id), bus="default")
        elif source == "email":
            rule_set = get_settings().ses_rule_set
            if rule_set:
                client("ses").delete_receipt_rule(RuleSetName=rule_set, RuleName=rule_name(item.id))
    except Exception as exc:  # any failure: the trigger is deleted, its delete goes on
        # (ClientError, BotoCoreError, and what botocore raises on an answer it cannot
        # parse: the embedded AWS once answered DeleteReceiptRule with an HTML page).
        logger.warning(
            "could not remove a deleted trigger's event wiring",
            extra={"trigger_id": item.id, "source": source, "error": repr(exc)},
        )


def rewire_all() -> list[tuple[str, str]]:
    """Wire every delivered-source trigger again (the local stack's restart); the failures."""
    from chalicelib.domain.errors import CronhookError
    from chalicelib.domain.spec import DELIVERED_SOURCES, EventIn, parse_model

    problems = []
    for item in trigger_reads.scan_triggers(kind="event"):
        event = TriggerSpec.from_json(item.spec).event or {}
        if event.get("source") not in DELIVERED_SOURCES or event.get("source") == "file":
            continue
        try:
            provision(item.id, parse_model(EventIn, event))
        except CronhookError as exc:
            problems.append((item.id, str(exc)))
    return problems
