"""Delivered event sources: their fields, patterns, payloads and the file debounce (pure)."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from email.message import EmailMessage

import pytest

from chalicelib.domain.errors import ValidationError
from chalicelib.domain.spec import EventIn, TriggerIn, parse_model, validate_source_fields
from chalicelib.sources.files import Watch, Watcher
from chalicelib.sources.payloads import TEXT_LIMIT_CHARS, email_payload, s3_matches, s3_payload
from chalicelib.sources.wiring import s3_pattern, validate_pattern
from devstack.smtp import recipient_matches, ses_notification


@pytest.mark.parametrize(
    ("event", "field"),
    [
        ({"source": "eventbridge"}, "event.pattern"),
        ({"source": "s3"}, "event.bucket"),
        ({"source": "email"}, "event.address"),
        ({"source": "s3", "bucket": "inbox", "address": "a@example.com"}, "event.address"),
        ({"source": "webhook", "bus": "orders"}, "event.bus"),
        ({"source": "email", "address": "a@example.com", "secret": "12345678"}, "event.secret"),
    ],
)
def test_each_source_needs_its_own_fields_and_no_others(event, field):
    with pytest.raises(ValidationError) as info:
        validate_source_fields(parse_model(EventIn, event))
    assert info.value.field == field


def test_an_eventbridge_trigger_listens_on_the_default_bus_unless_told():
    event = parse_model(EventIn, {"source": "eventbridge", "pattern": {"source": ["x"]}})
    assert event.bus == "default"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"source": "eventbridge", "pattern": {}}, "event.pattern"),
        ({"source": "s3", "bucket": "Not_A_Bucket"}, "event.bucket"),
        ({"source": "email", "address": "not an address"}, "event.address"),
    ],
)
def test_malformed_source_fields_are_422_naming_them(body, field):
    with pytest.raises(ValidationError) as info:
        event = parse_model(TriggerIn, {"workflow": "echo", "event": body}).event
        assert event is not None
        validate_pattern(event.pattern or {})
    assert info.value.field == field


@pytest.mark.parametrize(
    ("pattern", "field"),
    [
        ({"source": "shop"}, "event.pattern.source"),
        ({"detail": {"n": []}}, "event.pattern.detail.n"),
        ({"detail": {"n": [{"greater": 3}]}}, "event.pattern.detail.n"),
        ({"$or": [{"a": ["1"]}]}, "event.pattern.$or"),
    ],
)
def test_a_pattern_eventbridge_would_refuse_is_refused_naming_the_path(pattern, field):
    with pytest.raises(ValidationError) as info:
        validate_pattern(pattern)
    assert info.value.field == field


@pytest.mark.parametrize(
    ("matcher", "field"),
    [
        ({"numeric": [">"]}, "event.pattern.detail.a.numeric"),
        ({"numeric": [">", "x"]}, "event.pattern.detail.a.numeric"),
        ({"numeric": [">", 1, ">", 2]}, "event.pattern.detail.a.numeric"),
        ({"prefix": 5}, "event.pattern.detail.a.prefix"),
        ({"exists": "yes"}, "event.pattern.detail.a.exists"),
        ({"anything-but": []}, "event.pattern.detail.a.anything-but"),
        ({"wildcard": "a**b"}, "event.pattern.detail.a.wildcard"),
        ({"cidr": "not a block"}, "event.pattern.detail.a.cidr"),
    ],
)
def test_an_operator_with_an_argument_eventbridge_would_refuse_is_refused(matcher, field):
    # The embedded AWS's bus does not check them: a rule holding [">", "x"] made every
    # PutEvents on it fail (moto compared an int with a str), for every trigger.
    with pytest.raises(ValidationError) as info:
        validate_pattern({"detail": {"a": [matcher]}})
    assert info.value.field == field


def test_patterns_with_operators_and_or_are_accepted():
    validate_pattern(
        {
            "source": ["shop"],
            "detail": {"total": [{"numeric": [">", 100]}], "tag": [{"prefix": "eu-"}, None]},
            "$or": [{"detail-type": ["A"]}, {"detail-type": ["B"]}],
        }
    )


def test_the_s3_pattern_holds_the_prefix_and_ingest_checks_the_suffix_too():
    assert s3_pattern("inbox", "in/", ".csv")["detail"]["object"] == {"key": [{"prefix": "in/"}]}
    assert s3_pattern("inbox", None, ".csv")["detail"]["object"] == {"key": [{"suffix": ".csv"}]}
    payload = {"bucket": "inbox", "key": "in/a.txt"}
    assert not s3_matches(payload, bucket="inbox", prefix="in/", suffix=".csv")
    assert s3_matches({**payload, "key": "in/a.csv"}, bucket="inbox", prefix="in/", suffix=".csv")


# AWS's documented example of an S3 "Object Created" event on EventBridge.
OBJECT_CREATED = {
    "version": "0",
    "id": "17793124-05d4-b198-2fde-7ededc63b103",
    "detail-type": "Object Created",
    "source": "aws.s3",
    "account": "123456789012",
    "time": "2021-11-12T00:00:00Z",
    "region": "ca-central-1",
    "resources": ["arn:aws:s3:::example-bucket"],
    "detail": {
        "version": "0",
        "bucket": {"name": "example-bucket"},
        "object": {
            "key": "example-key",
            "size": 5,
            "etag": "b1946ac92492d2347c6235b4d2611184",
            "version-id": "IYV3p45BT0ac8hjHg1houSdS1a.Mro8e",
            "sequencer": "617f08299329d189",
        },
        "request-id": "N4N7GDK58NMKJ12R",
        "requester": "123456789012",
        "source-ip-address": "1.2.3.4",
        "reason": "PutObject",
    },
}


def test_an_s3_payload_carries_the_object_metadata_and_the_event():
    payload = s3_payload(OBJECT_CREATED)
    assert payload == {
        "bucket": "example-bucket",
        "key": "example-key",
        "size": 5,
        "etag": "b1946ac92492d2347c6235b4d2611184",
        "version": "IYV3p45BT0ac8hjHg1houSdS1a.Mro8e",
        "sequencer": "617f08299329d189",
        "reason": "PutObject",
        "time": "2021-11-12T00:00:00Z",
        "event": OBJECT_CREATED,
    }
    assert s3_payload({**OBJECT_CREATED, "detail-type": "Object Deleted"}) is None


def _message(text: str) -> bytes:
    message = EmailMessage()
    message["From"] = "Alice <Alice@Example.com>"
    message["To"] = "reports@inbox.example.com"
    message["Cc"] = "Bob <bob@example.com>"
    message["Subject"] = "Weekly report"
    message["Message-ID"] = "<m-1@example.com>"
    message.set_content(text)
    message.add_attachment(b"\x00" * 100, maintype="image", subtype="png", filename="chart.png")
    return bytes(message)


def test_an_email_payload_clips_the_body_and_lists_attachments_without_their_bytes():
    raw = _message("x" * (TEXT_LIMIT_CHARS + 500))
    notification = ses_notification(
        raw,
        mail_from="alice@example.com",
        recipients=["reports@inbox.example.com"],
        matched=["reports@inbox.example.com"],
        message_id="ses-1",
        action={"type": "S3", "bucketName": "mail", "objectKey": "inbound/t/ses-1"},
        now=datetime(2026, 1, 5, 9, 30, tzinfo=UTC),
    )
    payload = email_payload(notification, raw, s3_bucket="mail", s3_key="inbound/t/ses-1")
    assert payload["message_id"] == "<m-1@example.com>"
    assert payload["from"] == "alice@example.com"
    assert payload["to"] == ["reports@inbox.example.com", "bob@example.com"]
    assert len(payload["text"]) == TEXT_LIMIT_CHARS and payload["text_truncated"] is True
    assert payload["attachments"] == [
        {"filename": "chart.png", "content_type": "image/png", "size": 100}
    ]
    assert payload["mail"]["commonHeaders"]["messageId"] == "<m-1@example.com>"
    assert payload["mail"]["timestamp"] == "2026-01-05T09:30:00.000Z"


@pytest.mark.parametrize(
    ("rule", "address", "expected"),
    [
        ("reports@inbox.example.com", "Reports@Inbox.Example.com", True),
        ("inbox.example.com", "any@inbox.example.com", True),
        ("inbox.example.com", "any@sub.inbox.example.com", False),
        (".example.com", "any@inbox.example.com", True),
        ("reports@inbox.example.com", "other@inbox.example.com", False),
    ],
)
def test_ses_rule_recipients_match_an_address_a_domain_or_its_subdomains(rule, address, expected):
    assert recipient_matches(rule, address) is expected


def test_a_file_is_one_event_once_its_writes_settle(tmp_path):
    watcher = Watcher(Watch(str(tmp_path), "trg_x", since_ns=0), settle_s=1.0)
    path = tmp_path / "a.csv"
    with open(path, "wb") as f:
        f.write(b"part 1\n")
        f.flush()
        assert watcher.scan(now=0.0) == []  # first seen
        f.write(b"part 2\n")
        f.flush()
        os.utime(path, ns=(1, 2_000_000_000))
        assert watcher.scan(now=0.5) == []  # changed: the clock restarts
        f.write(b"part 3\n")
        f.flush()
        os.utime(path, ns=(1, 3_000_000_000))
        assert watcher.scan(now=1.2) == []
    assert watcher.scan(now=1.9) == []  # unchanged, not yet for a full second
    ready = watcher.scan(now=2.3)
    assert ready == [(str(path), 21, 3_000_000_000)]
    watcher.delivered(*ready[0])
    assert watcher.scan(now=9.0) == []  # delivered once


def test_files_older_than_the_watch_are_its_past_not_events(tmp_path):
    old = tmp_path / "old.csv"
    old.write_text("x")
    os.utime(old, ns=(1, 1_000))
    watcher = Watcher(Watch(str(tmp_path), "trg_x", since_ns=5_000), settle_s=0.0)
    assert watcher.scan(now=0.0) == [] and watcher.scan(now=1.0) == []


@pytest.mark.parametrize("source", ["eventbridge", "s3", "email"])
def test_a_failure_to_unwire_a_deleted_trigger_is_logged_whatever_it_raises(monkeypatch, source):
    # botocore raises ResponseParserError (neither ClientError nor BotoCoreError's usual
    # kinds) on an answer it cannot parse: the delete had answered 500, half done.
    from chalicelib.domain.records import Trigger
    from chalicelib.settings import reset_settings
    from chalicelib.sources import wiring

    monkeypatch.setenv("CRONHOOK_SES_RULE_SET", "cronhook-test")
    reset_settings()

    class Broken:
        def __getattr__(self, name):
            raise RuntimeError(f"unparseable answer to {name}")

    monkeypatch.setattr(wiring, "client", lambda service: Broken())
    event = {"source": source, "bucket": "in", "address": "a@b.example", "pattern": {"a": ["b"]}}
    item = Trigger(
        id="trg_x", tenant="t", workflow="echo", spec=f'{{"event": {event!r}}}'.replace("'", '"')
    )
    wiring.unprovision(item)  # logged, not raised
    reset_settings()
