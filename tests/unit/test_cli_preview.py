"""cronhook_cli/preview.py: ``cronhook preview``."""

from __future__ import annotations

import json

from cronhook_cli import parse_instant
from tests.unit.cli_fake import FakeCronhook, invoke, only_request
from tests.unit.cli_fixtures import api_fixture  # noqa: F401


def test_preview_posts_the_expression_and_shows_utc_and_local_times(api: FakeCronhook) -> None:
    # Europe/Berlin springs forward at 2030-03-31T01:00:00Z (02:00 local becomes 03:00), so
    # 02:30 does not exist that day; a server shifting skipped times answers 03:30+02:00.
    fires = ["2030-03-30T01:30:00Z", "2030-03-31T01:30:00Z", "2030-04-01T00:30:00Z"]
    api.answer(
        "POST",
        "/v1/schedules/preview",
        200,
        {"fires": fires, "cadence": "At 02:30 (Europe/Berlin)"},
    )

    result = invoke(
        api.url,
        "preview",
        "30 2 * * *",
        "--tz",
        "Europe/Berlin",
        "--from",
        "2030-03-29T12:00:00Z",
        "--count",
        "3",
    )

    assert result.exit_code == 0, result.output
    request = only_request(api)
    assert (request.method, request.path) == ("POST", "/v1/schedules/preview")
    assert request.body == {
        "cron": "30 2 * * *",
        "timezone": "Europe/Berlin",
        "from": "2030-03-29T12:00:00Z",
        "count": 3,
    }
    assert result.stdout.startswith("At 02:30 (Europe/Berlin)\n")
    assert "2030-03-30T02:30:00+01:00" in result.stdout
    assert "2030-03-31T03:30:00+02:00" in result.stdout
    assert "2030-04-01T02:30:00+02:00" in result.stdout


def test_preview_marks_the_fires_dst_moved_and_lists_the_ones_it_removed(
    api: FakeCronhook,
) -> None:
    fires = ["2027-03-28T01:00:00.000Z", "2027-03-29T00:30:00.000Z"]
    dst = [
        {"at": "2027-03-28T01:00:00.000Z", "change": "shifted", "policy": "shift"},
        {"at": "2027-10-31T01:30:00.000Z", "change": "skipped", "policy": "skip"},
    ]
    api.answer("POST", "/v1/schedules/preview", 200, {"fires": fires, "dst": dst})

    result = invoke(api.url, "preview", "30 2 * * *", "--tz", "Europe/Berlin", "--count", "2")

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    (shifted,) = [line for line in lines if "2027-03-28T01:00:00.000Z" in line]
    assert "shifted (shift)" in shifted
    (plain,) = [line for line in lines if "2027-03-29T00:30:00.000Z" in line]
    assert "shift" not in plain
    assert "DST: skipped at 2027-10-31T01:30:00.000Z (policy skip)" in lines


def test_preview_without_from_sends_an_aware_utc_instant_and_five_fires(
    api: FakeCronhook,
) -> None:
    api.answer("POST", "/v1/schedules/preview", 200, {"fires": ["2030-01-01T00:00:00Z"]})

    result = invoke(api.url, "preview", "0 0 * * *", "--json")

    assert result.exit_code == 0, result.output
    body = only_request(api).body
    assert (body["timezone"], body["count"]) == ("UTC", 5)
    assert parse_instant(body["from"]) == body["from"]
    assert json.loads(result.stdout) == {"fires": ["2030-01-01T00:00:00Z"]}


def test_preview_of_a_bad_expression_exits_1_printing_the_field(api: FakeCronhook) -> None:
    error = {"code": "invalid", "message": "bad cron expression 'nope'", "field": "cron"}
    api.answer("POST", "/v1/schedules/preview", 422, {"error": error})

    result = invoke(api.url, "preview", "nope")

    assert result.exit_code == 1
    assert "bad cron expression 'nope' (field: cron)" in result.stderr


def test_preview_sends_a_union_and_a_calendar_and_lists_the_holidays_it_moved(
    api: FakeCronhook,
) -> None:
    api.answer(
        "POST",
        "/v1/schedules/preview",
        200,
        {
            "fires": ["2026-12-28T08:00:00.000Z"],
            "calendar": [
                {
                    "at": "2026-12-25T08:00:00.000Z",
                    "change": "moved",
                    "name": "Christmas Day",
                    "moved_to": "2026-12-28T08:00:00.000Z",
                }
            ],
        },
    )
    result = invoke(
        api.url,
        "preview",
        "0 9 * * 5",
        "0 9 * * 1",
        "--tz",
        "Europe/Berlin",
        "--holidays",
        "DE-BY",
        "--exclude",
        "2026-12-24",
        "--on-holiday",
        "next_business_day",
        "--from",
        "2026-12-20T00:00:00Z",
        "--count",
        "1",
    )
    assert result.exit_code == 0, result.output
    request = only_request(api)
    assert request.body["cron"] == ["0 9 * * 5", "0 9 * * 1"]
    assert request.body["calendar"] == {
        "holidays": ["DE-BY"],
        "exclude_dates": ["2026-12-24"],
        "on_holiday": "next_business_day",
    }
    assert (
        "Calendar: moved at 2026-12-25T08:00:00.000Z (Christmas Day) -> moved to "
        "2026-12-28T08:00:00.000Z" in " ".join(result.output.split())
    )
