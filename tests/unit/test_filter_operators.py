"""EventBridge's filter operators: every example of AWS's "Content filtering in Amazon
EventBridge event patterns" (and its table of comparison operators), then validation.

Each example is the documented pattern, written as cronhook's ``fields`` (an EventBridge
pattern's nested keys become one dotted path), run against events the documentation says
it matches, and against events it must not match. One documented form cannot be written
as a cronhook filter and is left out on purpose: ``$or`` between keys (a cronhook filter is
an AND of its keys; a list is the OR within one key).
"""

from __future__ import annotations

import pytest

from chalicelib.domain.errors import ValidationError
from chalicelib.domain.filters import matches, validate_filter


def as_fields(pattern: dict, prefix: str = "") -> dict:
    """An EventBridge pattern as cronhook's ``{"fields": {"dotted.path": [values]}}``."""
    out: dict = {}
    for key, value in pattern.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict):
            out.update(as_fields(value, path)["fields"])
        else:
            out[path] = value
    return {"fields": out}


def check(pattern: dict, event: dict) -> bool:
    flt = as_fields(pattern)
    validate_filter("webhook", flt)
    return matches("webhook", flt, headers={}, body_json=event)


EC2 = {
    "version": "0",
    "id": "ddddd4-aaaa-7777-4444-345dd43cc333",
    "detail-type": "EC2 Instance State-change Notification",
    "source": "aws.ec2",
    "account": "012345679012",
    "time": "2017-10-02T16:24:49Z",
    "region": "us-east-1",
    "resources": ["arn:aws:ec2:us-east-1:123456789012:instance/i-000000aaaaaa00000"],
    "detail": {
        "c-count": 5,
        "d-count": 3,
        "x-limit": 301.8,
        "source-ip": "10.0.0.33",
        "instance-id": "i-000000aaaaaa00000",
        "state": "running",
    },
}


def ec2(**detail: object) -> dict:
    return {**EC2, "detail": {**EC2["detail"], **detail}}


# (name, pattern, events it matches, events it does not)
DOCUMENTED = [
    (
        "prefix",
        {"time": [{"prefix": "2017-10-02"}]},
        [{"time": "2017-10-02T18:43:48Z"}],
        [{"time": "2017-10-03T18:43:48Z"}, {"time": 20171002}, {}],
    ),
    (
        "prefix while ignoring case",
        {"detail": {"service": [{"prefix": {"equals-ignore-case": "EventB"}}]}},
        [{"detail": {"service": s}} for s in ("EventBridge", "EVENTBRIDGE", "eventb")],
        [{"detail": {"service": "Event"}}, {"detail": {"service": "SNS"}}],
    ),
    (
        "begins with (table)",
        {"Region": [{"prefix": "us-"}]},
        [{"Region": "us-east-1"}],
        [{"Region": "eu-west-1"}, {"Region": "US-east-1"}],
    ),
    (
        "begins with, ignore case (table)",
        {"service": [{"prefix": {"equals-ignore-case": "eventb"}}]},
        [{"service": "EventBridge"}],
        [{"service": "Lambda"}],
    ),
    (
        "suffix",
        {"FileName": [{"suffix": ".png"}]},
        [{"FileName": "image.png"}],
        [{"FileName": "image.PNG"}, {"FileName": "image.jpg"}],
    ),
    (
        "suffix while ignoring case",
        {"detail": {"FileName": [{"suffix": {"equals-ignore-case": ".png"}}]}},
        [{"detail": {"FileName": f}} for f in ("a.png", "a.PNG", "a.Png")],
        [{"detail": {"FileName": "a.jpg"}}],
    ),
    (
        "ends with, ignore case (table)",
        {"service": [{"suffix": {"equals-ignore-case": "tBridge"}}]},
        [{"service": "EventBridge"}, {"service": "EVENTBRIDGE"}],
        [{"service": "EventBus"}],
    ),
    (
        "anything-but a string",
        {"detail": {"state": [{"anything-but": "initializing"}]}},
        [ec2(state="running"), ec2(state="stopped")],
        [ec2(state="initializing"), {"detail": {}}],
    ),
    (
        "anything-but a number",
        {"detail": {"x-limit": [{"anything-but": 123}]}},
        [ec2(), ec2(**{"x-limit": 124})],
        [ec2(**{"x-limit": 123}), ec2(**{"x-limit": 123.0})],
    ),
    (
        "anything-but a list of strings",
        {"detail": {"state": [{"anything-but": ["stopped", "overloaded"]}]}},
        [ec2(state="running")],
        [ec2(state="stopped"), ec2(state="overloaded")],
    ),
    (
        "anything-but a list of numbers",
        {"detail": {"x-limit": [{"anything-but": [100, 200, 300]}]}},
        [ec2(), ec2(**{"x-limit": 150})],
        [ec2(**{"x-limit": 200})],
    ),
    (
        "anything-but a prefix",
        {"detail": {"state": [{"anything-but": {"prefix": "init"}}]}},
        [ec2(state="running")],
        [ec2(state="initializing"), ec2(state="init")],
    ),
    (
        "anything-but a prefix (table: region not in the US)",
        {"Region": [{"anything-but": {"prefix": "us-"}}]},
        [{"Region": "eu-west-1"}],
        [{"Region": "us-west-2"}],
    ),
    (
        "anything-but a suffix",
        {"FileName": [{"anything-but": {"suffix": ".png"}}]},
        [{"FileName": "a.jpg"}],
        [{"FileName": "a.png"}],
    ),
    (
        "anything-but ignoring case",
        {"state": [{"anything-but": {"equals-ignore-case": "initializing"}}]},
        [{"state": "running"}],
        [{"state": "initializing"}, {"state": "INITIALIZING"}],
    ),
    (
        "anything-but a wildcard",
        {"FilePath": [{"anything-but": {"wildcard": "*/lib/*"}}]},
        [{"FilePath": "/usr/bin/env"}],
        [{"FilePath": "/usr/lib/x.so"}],
    ),
    (
        "not (table: weather is anything but Raining)",
        {"Weather": [{"anything-but": ["Raining"]}]},
        [{"Weather": "Sunny"}],
        [{"Weather": "Raining"}],
    ),
    (
        "numeric",
        {
            "detail": {
                "c-count": [{"numeric": [">", 0, "<=", 5]}],
                "d-count": [{"numeric": ["<", 10]}],
                "x-limit": [{"numeric": ["=", 3.018e2]}],
            }
        },
        [ec2()],
        [
            ec2(**{"c-count": 0}),
            ec2(**{"c-count": 6}),
            ec2(**{"d-count": 10}),
            ec2(**{"c-count": "5"}),
        ],
    ),
    (
        "numeric equals (table: price is 100)",
        {"Price": [{"numeric": ["=", 100]}]},
        [{"Price": 100}, {"Price": 100.0}],
        [{"Price": 101}, {"Price": "100"}],
    ),
    (
        "numeric range (table: price more than 10 and at most 20)",
        {"Price": [{"numeric": [">", 10, "<=", 20]}]},
        [{"Price": 10.5}, {"Price": 20}],
        [{"Price": 10}, {"Price": 20.01}],
    ),
    (
        "IP address matching",
        {"detail": {"sourceIPAddress": [{"cidr": "10.0.0.0/24"}]}},
        [
            {"detail": {"sourceIPAddress": "10.0.0.24"}},
            {"detail": {"sourceIPAddress": "10.0.0.255"}},
        ],
        [{"detail": {"sourceIPAddress": "10.0.1.1"}}, {"detail": {"sourceIPAddress": "x"}}],
    ),
    (
        "exists false, the field absent",
        {"detail": {"c-count": [{"exists": False}]}},
        [
            {
                "detail-type": ["EC2 Instance State-change Notification"],
                "resources": ["arn:aws:ec2:us-east-1:123456789012:instance/i-02ebd4584a2ebd341"],
                "detail": {"state": ["initializing", "running"]},
            },
            # "also matches ... because c-count isn't a leaf node"
            {
                "detail-type": ["EC2 Instance State-change Notification"],
                "resources": ["arn:aws:ec2:us-east-1:123456789012:instance/i-02ebd4584a2ebd341"],
                "detail": {"state": ["initializing", "running"], "c-count": {"c1": 100}},
            },
        ],
        [ec2()],
    ),
    (
        "exists true (table: ProductName exists)",
        {"ProductName": [{"exists": True}]},
        [{"ProductName": "Widget"}, {"ProductName": None}],
        [{}, {"ProductName": {"en": "Widget"}}],
    ),
    (
        "exists false (table: ProductName does not exist)",
        {"ProductName": [{"exists": False}]},
        [{}],
        [{"ProductName": "Widget"}],
    ),
    (
        "equals ignoring case (table)",
        {"Name": [{"equals-ignore-case": "alice"}]},
        [{"Name": "Alice"}, {"Name": "ALICE"}],
        [{"Name": "Alicia"}],
    ),
    (
        "equals (table)",
        {"Name": ["Alice"]},
        [{"Name": "Alice"}],
        [{"Name": "Bob"}],
    ),
    (
        "empty (table)",
        {"LastName": [""]},
        [{"LastName": ""}],
        [{"LastName": "Doe"}, {}],
    ),
    (
        "null (table)",
        {"UserID": [None]},
        [{"UserID": None}],
        [{"UserID": "u-1"}, {}],
    ),
    (
        "or within a key (table: PaymentType Credit or Debit)",
        {"PaymentType": ["Credit", "Debit"]},
        [{"PaymentType": "Credit"}, {"PaymentType": "Debit"}],
        [{"PaymentType": "Cash"}],
    ),
    (
        "and (table: Location New York and Day Monday)",
        {"Location": ["New York"], "Day": ["Monday"]},
        [{"Location": "New York", "Day": "Monday"}],
        [{"Location": "New York", "Day": "Friday"}],
    ),
    (
        "wildcard (table: a .png file within the folder dir)",
        {"FileName": [{"wildcard": "dir/*.png"}]},
        [
            {"FileName": "dir/photo.png"},
            {"FileName": "dir/sub/photo.png"},
            {"FileName": "dir/.png"},
        ],
        [{"FileName": "other/photo.png"}, {"FileName": "dir/photo.jpg"}],
    ),
    (
        "complex example with multiple matching",
        {
            "time": [{"prefix": "2017-10-02"}],
            "detail": {
                "state": [{"anything-but": "initializing"}],
                "c-count": [{"numeric": [">", 0, "<=", 5]}],
                "d-count": [{"numeric": ["<", 10]}],
                "x-limit": [{"anything-but": [100, 200, 300]}],
            },
        },
        [ec2()],
        [ec2(state="initializing"), {**ec2(), "time": "2017-10-03T00:00:00Z"}],
    ),
    # event-ruler's README (the library EventBridge matches with) adds these three.
    ("suffix (ruler)", {"source": [{"suffix": "ec2"}]}, [EC2], [{"source": "aws.s3"}]),
    (
        "equals-ignore-case (ruler)",
        {"source": [{"equals-ignore-case": "AWS.EC2"}]},
        [EC2],
        [{"source": "aws.ec3"}],
    ),
    (
        "wildcard (ruler)",
        {"source": [{"wildcard": "Simple*Service"}]},
        [{"source": "SimpleQueueService"}, {"source": "SimpleService"}],
        [{"source": "simplequeueservice"}, {"source": "SimpleServices"}],
    ),
]


@pytest.mark.parametrize(
    ("pattern", "good", "bad"),
    [case[1:] for case in DOCUMENTED],
    ids=[case[0] for case in DOCUMENTED],
)
def test_documented_eventbridge_examples_match_as_aws_says(pattern, good, bad):
    for event in good:
        assert check(pattern, event), event
    for event in bad:
        assert not check(pattern, event), event


@pytest.mark.parametrize(
    ("pattern", "event", "expected"),
    [
        ({"FileName": [{"wildcard": "dir/\\*.png"}]}, {"FileName": "dir/*.png"}, True),
        ({"FileName": [{"wildcard": "dir/\\*.png"}]}, {"FileName": "dir/a.png"}, False),
        ({"FileName": [{"wildcard": "a\\\\b"}]}, {"FileName": "a\\b"}, True),
        ({"tags": [{"prefix": "env:"}]}, {"tags": ["team:x", "env:prod"]}, True),
        ({"tags": [{"anything-but": "a"}]}, {"tags": ["a", "b"]}, True),
        ({"tags": [{"anything-but": "a"}]}, {"tags": ["a"]}, False),
        ({"tags": [{"exists": True}]}, {"tags": []}, False),
        ({"tags": ["B"]}, {"tags": ["a", "b"]}, True),  # plain values casefold, in lists too
        ({"n": [{"numeric": [">", 0]}]}, {"n": True}, False),  # a boolean is not a number
        ({"n": [{"anything-but": 1}]}, {"n": True}, True),
        ({"ip": [{"cidr": "2001:db8::/32"}]}, {"ip": "2001:db8::1"}, True),
        ({"ip": [{"cidr": "2001:db8::/32"}]}, {"ip": "10.0.0.1"}, False),
        ({"state": [{"anything-but": "x"}]}, {}, False),  # anything-but needs the field
    ],
)
def test_operator_edges(pattern, event, expected):
    assert check(pattern, event) is expected


def test_named_keys_take_operators_too():
    tag_push = {"ref": "refs/tags/v1", "repository": {"full_name": "acme/widgets"}}
    release = {"ref": "refs/heads/release/2.1", "repository": {"full_name": "acme/widgets"}}
    headers = {"X-GitHub-Event": "push"}
    flt = {"branch": {"prefix": "release/"}, "repository": {"suffix": "/widgets"}}
    validate_filter("github", flt)
    assert matches("github", flt, headers=headers, body_json=release)
    assert not matches("github", flt, headers=headers, body_json=tag_push)
    no_branch = {"branch": {"exists": False}}
    assert matches("github", no_branch, headers=headers, body_json=tag_push)
    assert not matches("github", no_branch, headers=headers, body_json=release)
    mail = {"subject": "Your WEEKLY report", "to": ["a@x.com", "ops@corp.example"]}
    mail_filter = {"subject": {"wildcard": "*WEEKLY*"}, "to": {"suffix": "@corp.example"}}
    validate_filter("email", mail_filter)
    assert matches("email", mail_filter, headers={}, body_json=mail)
    stripe = {"type": "charge.succeeded", "livemode": False, "data": {"object": {"amount": 99}}}
    live_and_big = {"fields": {"livemode": True, "data.object.amount": {"numeric": [">=", 100]}}}
    validate_filter("stripe", live_and_big)
    assert not matches("stripe", live_and_big, headers={}, body_json=stripe)


INVALID = [
    ({"branch": {"prefix": 3}}, "event.filter.branch.prefix"),
    ({"branch": {"prefix": "a", "suffix": "b"}}, "event.filter.branch"),
    ({"branch": {"startswith": "a"}}, "event.filter.branch"),
    ({"branch": {"prefix": {"ignore-case": "a"}}}, "event.filter.branch.prefix"),
    ({"branch": {"wildcard": "a**b"}}, "event.filter.branch.wildcard"),
    ({"branch": {"wildcard": "a\\b"}}, "event.filter.branch.wildcard"),
    ({"branch": {"wildcard": "a\\"}}, "event.filter.branch.wildcard"),
    ({"branch": {"anything-but": []}}, "event.filter.branch.anything-but"),
    ({"branch": {"anything-but": ["a", 1]}}, "event.filter.branch.anything-but"),
    ({"branch": {"anything-but": True}}, "event.filter.branch.anything-but"),
    ({"branch": {"anything-but": {"numeric": [">", 1]}}}, "event.filter.branch.anything-but"),
    ({"branch": {"anything-but": {"prefix": 1}}}, "event.filter.branch.anything-but.prefix"),
    ({"fields": {"n": {"numeric": [">", "1"]}}}, "event.filter.fields.n.numeric"),
    ({"fields": {"n": {"numeric": ["!=", 1]}}}, "event.filter.fields.n.numeric"),
    ({"fields": {"n": {"numeric": [">", 1, ">", 2]}}}, "event.filter.fields.n.numeric"),
    ({"fields": {"n": {"numeric": ["=", 1, "<", 2]}}}, "event.filter.fields.n.numeric"),
    ({"fields": {"n": {"numeric": [">", 1, "<"]}}}, "event.filter.fields.n.numeric"),
    ({"fields": {"n": {"numeric": [">", 6e9]}}}, "event.filter.fields.n.numeric"),
    ({"fields": {"n": {"numeric": [">", True]}}}, "event.filter.fields.n.numeric"),
    ({"fields": {"n": {"exists": "yes"}}}, "event.filter.fields.n.exists"),
    ({"fields": {"ip": {"cidr": "10.0.0.0/99"}}}, "event.filter.fields.ip.cidr"),
    ({"fields": {"n": [1, {"suffix": None}]}}, "event.filter.fields.n.suffix"),
]


@pytest.mark.parametrize(("flt", "field"), INVALID)
def test_a_bad_operator_is_a_422_naming_the_path_and_the_operator(flt, field):
    with pytest.raises(ValidationError) as info:
        validate_filter("github", flt)
    assert info.value.field == field
    assert info.value.STATUS_CODE == 422


def test_every_example_filter_in_the_docs_is_valid_for_its_source():
    import json
    import re
    from pathlib import Path

    names = {
        "GitHub": "github",
        "Stripe": "stripe",
        "Slack": "slack",
        "Shopify": "shopify",
        "Standard Webhooks": "standard",
        "webhook": "webhook",
        "LinkedIn": "linkedin",
        "EventBridge": "eventbridge",
        "S3": "s3",
        "email": "email",
        "file": "file",
    }
    text = Path(__file__).resolve().parents[2].joinpath("docs", "filters.md").read_text()
    rows = re.findall(r"^\| ([A-Za-z0-9 ]+) \| `(\{.*?\})`", text, flags=re.M)
    assert {source for source, _ in rows} == set(names)
    for source, flt in rows:
        validate_filter(names[source], json.loads(flt))
