"""cronhook_cli/bodies.py: the bodies ``triggers create`` and ``triggers update`` send."""

from __future__ import annotations

import re

import click
import pytest

from cronhook_cli import build_create_body, build_update_body
from tests.unit.cli_fake import (
    DISABLED_TRIGGER,
    TRIGGER,
    WEBHOOK_TRIGGER,
    FakeCronhook,
    assert_no_traceback,
    invoke,
    only_request,
)
from tests.unit.cli_fixtures import api_fixture  # noqa: F401


def test_create_cron_sends_schedule_title_tags_and_state(api: FakeCronhook) -> None:
    api.answer("POST", "/v1/triggers", 201, TRIGGER)

    result = invoke(
        api.url,
        "triggers",
        "create",
        "--workflow",
        "echo",
        "--cron",
        "0 8 * * 1",
        "--tz",
        "Europe/Berlin",
        "--title",
        "Weekly report for client 7",
        "--tag",
        "client-7",
        "--tag",
        "weekly",
        "--state",
        '{"cursor": null}',
    )

    assert result.exit_code == 0, result.output
    request = only_request(api)
    assert (request.method, request.path) == ("POST", "/v1/triggers")
    assert request.headers["content-type"] == "application/json"
    assert request.body == {
        "workflow": "echo",
        "title": "Weekly report for client 7",
        "tags": ["client-7", "weekly"],
        "schedule": {"cron": "0 8 * * 1", "timezone": "Europe/Berlin"},
        "state": {"cursor": None},
    }
    assert "trg_01" in result.stdout
    assert "At 08:00 on Monday (Europe/Berlin)" in result.stdout


def test_create_cron_without_tz_sends_utc(api: FakeCronhook) -> None:
    api.answer("POST", "/v1/triggers", 201, TRIGGER)

    result = invoke(api.url, "triggers", "create", "--workflow", "echo", "--cron", "*/5 * * * *")

    assert result.exit_code == 0
    assert only_request(api).body == {
        "workflow": "echo",
        "schedule": {"cron": "*/5 * * * *", "timezone": "UTC"},
    }


@pytest.mark.parametrize(
    ("every", "interval_s"),
    [("1h", 3600), ("15m", 900), ("90s", 90), ("2d", 172800), ("1h30m", 5400)],
)
def test_create_every_sends_the_interval_in_seconds(
    api: FakeCronhook, every: str, interval_s: int
) -> None:
    api.answer("POST", "/v1/triggers", 201, DISABLED_TRIGGER)

    result = invoke(api.url, "triggers", "create", "--workflow", "echo", "--every", every)

    assert result.exit_code == 0, result.output
    assert only_request(api).body == {"workflow": "echo", "schedule": {"interval_s": interval_s}}


def test_create_at_sends_the_instant_in_utc_with_z(api: FakeCronhook) -> None:
    api.answer("POST", "/v1/triggers", 201, TRIGGER)

    result = invoke(
        api.url, "triggers", "create", "--workflow", "echo", "--at", "2030-03-31T02:30:00+02:00"
    )

    assert result.exit_code == 0, result.output
    assert only_request(api).body["schedule"] == {"at": "2030-03-31T00:30:00Z"}


def test_create_stripe_webhook_sends_secret_filter_and_max_failures(api: FakeCronhook) -> None:
    api.answer("POST", "/v1/triggers", 201, {**WEBHOOK_TRIGGER, "webhook": None})

    result = invoke(
        api.url,
        "triggers",
        "create",
        "--workflow",
        "echo",
        "--webhook",
        "stripe",
        "--secret",
        "whsec_from_stripe",
        "--filter",
        '{"type": ["invoice.paid"]}',
        "--max-failures",
        "3",
    )

    assert result.exit_code == 0, result.output
    assert only_request(api).body == {
        "workflow": "echo",
        "event": {
            "source": "stripe",
            "secret": "whsec_from_stripe",
            "filter": {"type": ["invoice.paid"]},
        },
        "limits": {"max_failures": 3},
    }
    assert "webhook secret" not in result.stdout
    assert "shown only this once" not in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give exactly one of --cron, --every, --at or --webhook"),
        (["--cron", "* * * * *", "--every", "1h"], "(got --cron, --every)"),
        (["--at", "2030-01-01T00:00:00Z", "--webhook", "github"], "(got --at, --webhook)"),
        (["--every", "1x"], "'1x' is not a duration"),
        (["--every", "0m"], "'0m' is not a positive duration"),
        (["--every", "h"], "'h' is not a duration"),
        (["--every", "1h", "--state", "{not json"], "not valid JSON"),
        (["--every", "1h", "--state", "[1, 2]"], "must be a JSON object"),
        (["--every", "1h", "--tz", "Europe/Berlin"], "--tz only applies to --cron"),
        (["--every", "1h", "--secret", "s"], "--secret only applies to --webhook"),
        (["--at", "2030-01-01T08:00:00"], "needs a UTC offset or Z"),
        (["--at", "next tuesday"], "is not an ISO-8601 instant"),
        (["--webhook", "gitlab"], "'gitlab' is not one of"),
        (["--every", "1h", "--max-failures", "0"], "--max-failures"),
        (["--s3", "b", "--email", "a@example.com"], "give one event source, not --s3, --email"),
        (["--every", "1h", "--s3", "b"], "(got --every, --s3)"),
        (["--email", "a@example.com", "--prefix", "in/"], "--prefix and --suffix only apply"),
        (["--file", "--bus", "orders"], "--bus only applies to --eventbridge"),
        (["--eventbridge", "[1]"], "must be a JSON object"),
        (["--every", "1h", "--filter", "{}"], "--filter only applies to event triggers"),
    ],
)
def test_create_usage_errors_exit_2_without_calling_the_api(
    api: FakeCronhook, args: list[str], message: str
) -> None:
    result = invoke(api.url, "triggers", "create", "--workflow", "echo", *args)

    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert api.requests == []
    assert_no_traceback(result)


def test_create_without_workflow_is_a_usage_error(api: FakeCronhook) -> None:
    result = invoke(api.url, "triggers", "create", "--every", "1h")

    assert result.exit_code == 2
    assert "Missing option '--workflow'" in result.stderr
    assert api.requests == []


def test_create_sends_every_listed_flag(api: FakeCronhook) -> None:
    api.answer("POST", "/v1/triggers", 201, TRIGGER)
    result = invoke(
        api.url,
        "triggers",
        "create",
        "--workflow",
        "echo",
        "--cron",
        "30 2 * * *",
        "--tz",
        "Europe/Berlin",
        "--dst-skipped",
        "skip",
        "--dst-repeated",
        "both",
        "--payload",
        '{"client": 7}',
        "--max-runs",
        "10",
        "--expires-at",
        "2031-01-01T00:00:00+01:00",
        "--max-usd",
        "5",
        "--budget-period",
        "week",
        "--overlap",
        "buffer_one",
        "--concurrency",
        "2",
        "--serialize-key",
        "client-7",
        "--secret-scope",
        "client-7",
        "--disabled",
    )
    assert result.exit_code == 0, result.output
    assert only_request(api).body == {
        "workflow": "echo",
        "schedule": {
            "cron": "30 2 * * *",
            "timezone": "Europe/Berlin",
            "dst": {"skipped": "skip", "repeated": "both"},
        },
        "payload": {"client": 7},
        "limits": {
            "max_runs": 10,
            "expires_at": "2030-12-31T23:00:00Z",
            "max_usd": 5.0,
            "budget_period": "week",
        },
        "overlap": "buffer_one",
        "concurrency": 2,
        "serialize_key": "client-7",
        "secret_scope": "client-7",
        "enabled": False,
    }


@pytest.mark.parametrize(
    ("args", "event"),
    [
        (
            ["--eventbridge", '{"source": ["shop"]}', "--bus", "orders"],
            {"source": "eventbridge", "pattern": {"source": ["shop"]}, "bus": "orders"},
        ),
        (
            ["--s3", "inbox", "--prefix", "in/", "--suffix", ".csv"],
            {"source": "s3", "bucket": "inbox", "prefix": "in/", "suffix": ".csv"},
        ),
        (
            ["--email", "reports@example.com", "--filter", '{"from": "a@example.com"}'],
            {
                "source": "email",
                "address": "reports@example.com",
                "filter": {"from": "a@example.com"},
            },
        ),
        (["--file"], {"source": "file"}),
        (
            ["--webhook", "linkedin", "--secret", "li-secret-1"],
            {"source": "linkedin", "secret": "li-secret-1"},
        ),
    ],
)
def test_create_sends_the_event_of_each_source_flag(
    api: FakeCronhook, args: list[str], event: dict
) -> None:
    api.answer("POST", "/v1/triggers", 201, TRIGGER)
    result = invoke(api.url, "triggers", "create", "--workflow", "echo", "--json", *args)

    assert result.exit_code == 0, result.output
    body = api.requests[-1].body
    assert {k: v for k, v in body["event"].items() if v is not None} == event


def test_update_sends_only_what_was_given_as_a_patch(api: FakeCronhook) -> None:
    api.answer("PATCH", "/v1/triggers/trg_01", 200, TRIGGER)
    result = invoke(
        api.url,
        "triggers",
        "update",
        "trg_01",
        "--every",
        "2h",
        "--state",
        '{"cursor": 3}',
        "--max-usd",
        "2.5",
        "--tag",
        "a",
        "--tag",
        "b",
        "--title",
        "New title",
        "--if-version",
        "4",
    )
    assert result.exit_code == 0, result.output
    request = only_request(api)
    assert request.method == "PATCH"
    assert request.body == {
        "schedule": {"interval_s": 7200},
        "title": "New title",
        "state": {"cursor": 3},
        "tags": ["a", "b"],
        "limits": {"max_usd": 2.5},
        "version": 4,
    }


def test_update_without_a_change_is_a_usage_error(api: FakeCronhook) -> None:
    result = invoke(api.url, "triggers", "update", "trg_01")
    assert result.exit_code == 2
    assert "nothing to change" in result.stderr
    assert api.requests == []


@pytest.mark.parametrize(
    ("given", "body"),
    [
        (
            {"workflow": "echo", "cron": "0 8 * * *", "dst_skipped": "skip"},
            {
                "workflow": "echo",
                "schedule": {"cron": "0 8 * * *", "timezone": "UTC", "dst": {"skipped": "skip"}},
            },
        ),
        (
            {"workflow": "echo", "every": 90, "max_usd": 0.0, "overlap": "allow", "disabled": True},
            {
                "workflow": "echo",
                "schedule": {"interval_s": 90},
                "limits": {"max_usd": 0.0},
                "overlap": "allow",
                "enabled": False,
            },
        ),
        (
            {"workflow": "echo", "webhook": "GitHub", "event_filter": {"ref": ["main"]}},
            {"workflow": "echo", "event": {"source": "github", "filter": {"ref": ["main"]}}},
        ),
        (
            {"workflow": "echo", "bucket": "inbox", "prefix": "", "tags": ("a", "b")},
            {"workflow": "echo", "tags": ["a", "b"], "event": {"source": "s3", "bucket": "inbox"}},
        ),
    ],
)
def test_build_create_body_sends_only_what_was_given(given: dict, body: dict) -> None:
    assert build_create_body(given) == body


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ({"workflow": "echo"}, "give exactly one of --cron, --every, --at or --webhook"),
        ({"workflow": "echo", "every": 60, "tz": "UTC"}, "--tz only applies to --cron"),
        ({"workflow": "echo", "at": "2030-01-01T00:00:00Z", "secret": "s"}, "--secret only"),
        ({"workflow": "echo", "file": True, "on_file": True, "address": "a@b"}, "one event source"),
        ({"workflow": "echo", "webhook": "github", "bus": "b"}, "--bus only applies"),
    ],
)
def test_build_create_body_refuses_a_bad_mix(given: dict, says: str) -> None:
    with pytest.raises(click.UsageError, match=re.escape(says)):
        build_create_body(given)


@pytest.mark.parametrize(
    ("given", "body"),
    [
        ({"tz": "Europe/Berlin"}, {"schedule": {"timezone": "Europe/Berlin"}}),
        ({"no_tags": True, "if_version": 3}, {"tags": [], "version": 3}),
        (
            {"every": 60, "dst_repeated": "both", "max_runs": 2, "concurrency": 4},
            {
                "schedule": {"interval_s": 60, "dst": {"repeated": "both"}},
                "limits": {"max_runs": 2},
                "concurrency": 4,
            },
        ),
    ],
)
def test_build_update_body_patches_only_what_was_given(given: dict, body: dict) -> None:
    assert build_update_body(given) == body


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ({"cron": "* * * * *", "every": 60}, "give at most one of --cron, --every or --at"),
        ({"tags": ("a",), "no_tags": True}, "give --tag or --no-tags, not both"),
        ({"if_version": 3}, "nothing to change"),
    ],
)
def test_build_update_body_refuses_a_bad_mix(given: dict, says: str) -> None:
    with pytest.raises(click.UsageError, match=re.escape(says)):
        build_update_body(given)
